"""The async and sync facades mirror each other; clients of the wrong kind are refused."""

from __future__ import annotations

import asyncio
import inspect
import re
from typing import Any

import pytest
import redis
import redis.asyncio
import valkey
import valkey.asyncio

import agent_memory.cache as cache_pkg
from agent_memory.cache import (
    EmbeddingCache,
    LlmCache,
    SessionStore,
    SyncEmbeddingCache,
    SyncLlmCache,
    SyncSessionStore,
    SyncToolCache,
    ToolCache,
)
from agent_memory.errors import InvalidInputError

PAIRS = [
    (LlmCache, SyncLlmCache),
    (ToolCache, SyncToolCache),
    (SessionStore, SyncSessionStore),
    (EmbeddingCache, SyncEmbeddingCache),
]


def _public(cls: type) -> dict[str, Any]:
    return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("_") and n != "client"}


def _strip(annotation: str) -> str:
    return re.sub(r"Awaitable\[(.*)\]", r"\1", annotation)


@pytest.mark.parametrize(("async_cls", "sync_cls"), PAIRS, ids=lambda c: c.__name__)
def test_sync_mirrors_async(async_cls: type, sync_cls: type) -> None:
    async_methods, sync_methods = _public(async_cls), _public(sync_cls)
    assert set(async_methods) == set(sync_methods)
    assert inspect.signature(async_cls.__init__) == inspect.signature(sync_cls.__init__)
    for name, method in async_methods.items():
        twin = sync_methods[name]
        a_sig, s_sig = inspect.signature(method), inspect.signature(twin)
        assert list(a_sig.parameters.values()) == list(s_sig.parameters.values()), name
        assert _strip(str(a_sig.return_annotation)) == str(s_sig.return_annotation), name
        assert method.__doc__ and twin.__doc__, name
        if name != "wrap":
            assert inspect.iscoroutinefunction(method), name
            assert not inspect.iscoroutinefunction(twin), name
    assert async_cls.__doc__ and sync_cls.__doc__


def test_exports() -> None:
    assert sorted(cache_pkg.__all__) == sorted(set(cache_pkg.__all__))
    for name in cache_pkg.__all__:
        assert hasattr(cache_pkg, name)


@pytest.mark.parametrize(("async_cls", "sync_cls"), PAIRS, ids=lambda c: c.__name__)
def test_wrong_client_kind_is_refused(async_cls: type, sync_cls: type) -> None:
    sync_clients = [valkey.Valkey(), redis.Redis()]
    async_clients = [valkey.asyncio.Valkey(), redis.asyncio.Redis()]
    for client in sync_clients:
        with pytest.raises(InvalidInputError, match=async_cls.__name__):
            async_cls(client, "n")
        sync_cls(client, "n")  # no I/O: nothing listens there
    for client in async_clients:
        with pytest.raises(InvalidInputError, match=sync_cls.__name__):
            sync_cls(client, "n")
        async_cls(client, "n")
    with pytest.raises(InvalidInputError):
        sync_cls(object(), "n")
    with pytest.raises(InvalidInputError):
        sync_cls(valkey.Valkey(), "")


def test_sync_wrap_refuses_async_functions() -> None:
    async def complete(**params: Any) -> str:
        return "x"

    with pytest.raises(InvalidInputError):
        SyncLlmCache(valkey.Valkey(), "n").wrap(complete)
    with pytest.raises(InvalidInputError):
        SyncEmbeddingCache(valkey.Valkey(), "n").wrap(complete, embedder_id="e")


async def test_async_wrap_accepts_async_functions(plain_server: Any) -> None:
    client = valkey.asyncio.Valkey.from_url(plain_server.url)
    try:
        llm = LlmCache(client, "facade-async-wrap")
        await llm.clear()
        calls = 0

        async def complete(**params: Any) -> str:
            nonlocal calls
            calls += 1
            await asyncio.sleep(0)
            return "async answer"

        cached = llm.wrap(complete)
        params = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
        assert await cached(**params) == "async answer"
        assert await cached(**params) == "async answer"
        assert calls == 1
        assert cached.__name__ == "complete"

        emb = EmbeddingCache(client, "facade-async-wrap")

        async def embed(text: str) -> list[float]:
            return [1.0, 2.0]

        assert await emb.wrap(embed, embedder_id="e")("t") == [1.0, 2.0]
        assert await emb.clear() == 1
        assert await llm.clear() == 1
    finally:
        await client.aclose()


def test_sync_facade_with_an_async_callback_inside_fails_cleanly(plain_server: Any) -> None:
    client = valkey.Valkey.from_url(plain_server.url)
    try:
        emb = SyncEmbeddingCache(client, "facade-sync-cb")

        async def embed(texts: list[str]) -> list[list[float]]:
            return [[1.0]]

        with pytest.raises(InvalidInputError, match="embed function"):
            emb.embed_many("e", ["t"], embed)
        assert emb.clear() == 0
    finally:
        client.close()
