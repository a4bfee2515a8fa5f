"""Embedding cache against real servers (every kind, every client flavour)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from agent_memory.cache import EmbeddingCache, SyncEmbeddingCache
from agent_memory.errors import InvalidInputError
from tests.cache.conftest import Env, Tier


def embeddings(env: Env, **kwargs: Any) -> Tier:
    return env.make(EmbeddingCache, SyncEmbeddingCache, **kwargs)


def fake_embed(text: str) -> list[float]:
    # Bytes that are not valid UTF-8 (0x80...) appear in these blobs on purpose.
    return [float(len(text)), -1.5, 1e-3, float(ord(text[0])) if text else 0.0]


async def test_put_get_many(env: Env) -> None:
    cache = embeddings(env)
    assert await cache.get_many("m1", ["a", "b"]) == [None, None]
    await cache.put_many("m1", ["a", "b"], [fake_embed("a"), np.array(fake_embed("b"))])
    got = await cache.get_many("m1", ["b", "zz", "a"])
    assert got[1] is None
    assert got[0] == pytest.approx(fake_embed("b")) and got[2] == pytest.approx(fake_embed("a"))
    assert await cache.get_many("m2", ["a"]) == [None]  # embedder id is part of the key
    assert await cache.get_many("m1", []) == []
    keys = env.keys("emb:*")
    assert len(keys) == 2
    assert env.raw.strlen(keys[0]) == 16  # 4 float32
    assert 7 * 86_400_000 - 60_000 < env.raw.pttl(keys[0]) <= 7 * 86_400_000


async def test_ttl(env: Env) -> None:
    cache = embeddings(env, ttl=30)
    await cache.put_many("m", ["a"], [[1.0]])
    await cache.put_many("m", ["b"], [[1.0]], ttl=5)
    ttls = sorted(env.raw.pttl(k) for k in env.keys("emb:*"))
    assert 4_000 < ttls[0] <= 5_000 and 29_000 < ttls[1] <= 30_000
    forever = embeddings(env, name=env.name + "f", ttl=None)
    await forever.put_many("m", ["a"], [[1.0]])
    assert [env.raw.pttl(k) for k in env.raw.scan_iter(match=f"{env.name}f:emb:*")] == [-1]


async def test_wrap_single_embeds_only_misses(env: Env) -> None:
    cache = embeddings(env)
    calls: list[str] = []

    def embed(text: str) -> list[float]:
        calls.append(text)
        return fake_embed(text)

    cached = cache.wrap(embed, embedder_id="fake-v1")
    first = await cached("hello")
    again = await cached("hello")
    assert first == again == pytest.approx(fake_embed("hello"))
    assert calls == ["hello"]
    stats = await cache.stats()
    assert (stats.embedding_hits, stats.embedding_misses) == (1, 1)
    assert stats.embedding_calls_saved == 1


async def test_embed_many_and_batched_wrap(env: Env) -> None:
    cache = embeddings(env)
    batches: list[list[str]] = []

    def embed_batch(texts: list[str]) -> list[list[float]]:
        batches.append(list(texts))
        return [fake_embed(t) for t in texts]

    await cache.put_many("b", ["known"], [fake_embed("known")])
    vectors = await cache.embed_many("b", ["x", "known", "y", "x"], embed_batch)
    assert batches == [["x", "y"]]
    assert vectors == [pytest.approx(fake_embed(t)) for t in ["x", "known", "y", "x"]]
    cached = cache.wrap(embed_batch, embedder_id="b", batched=True)
    assert await cached(["y", "known"]) == [pytest.approx(fake_embed(t)) for t in ["y", "known"]]
    assert batches == [["x", "y"]]
    stats = await cache.stats()
    # 6 texts, 2 embedded: the repeated "x" was served without a call, a call saved.
    assert (stats.embedding_hits, stats.embedding_misses) == (4, 2)
    assert env.raw.hgetall(f"{env.name}:__stats") == {
        "embedding:hits": "4",
        "embedding:misses": "2",
    }


async def test_a_lazy_batch_is_computed_where_the_embed_function_ran(env: Env) -> None:
    """A generator returned by a blocking batch function is its work deferred: the
    async cache consumes it in the function's worker thread, not on the event loop."""
    cache = embeddings(env)
    seen: list[int] = []

    def embed_batch(texts: list[str]) -> Iterator[list[float]]:
        def vectors() -> Iterator[list[float]]:
            for text in texts:
                seen.append(threading.get_ident())
                yield fake_embed(text)

        return vectors()

    vectors = await cache.embed_many("lazy", ["x", "y"], embed_batch)
    assert vectors == [pytest.approx(fake_embed(t)) for t in ["x", "y"]]
    assert len(seen) == 2
    if env.flavour.is_async:
        assert threading.get_ident() not in seen


async def test_vectors_whose_write_fails_are_returned_and_counted(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    """The server refuses writes (out of memory) once the embedder has run: the vectors
    paid for are returned all the same, the failed write logged and counted
    (``store_failures``), as the LLM cache's ``wrap`` does."""
    registry = CollectorRegistry()
    cache = embeddings(env, registry=registry)
    saved = env.raw.config_get("maxmemory*")

    def embed_batch(texts: list[str]) -> list[list[float]]:
        env.raw.config_set("maxmemory-policy", "noeviction")
        env.raw.config_set("maxmemory", "1")  # every write is refused from here on
        return [fake_embed(t) for t in texts]

    try:
        with caplog.at_level(logging.WARNING, logger="agent_memory.cache"):
            vectors = await cache.embed_many("m", ["a", "bb", "a"], embed_batch)
        assert vectors == [pytest.approx(fake_embed(t)) for t in ["a", "bb", "a"]]
    finally:
        env.raw.config_set("maxmemory", saved["maxmemory"])
        env.raw.config_set("maxmemory-policy", saved["maxmemory-policy"])
    assert "could not be stored" in caplog.text
    assert env.events(registry, "store_failures") == 1
    assert await cache.get_many("m", ["a", "bb"]) == [None, None]  # nothing was cached


async def test_clear(env: Env) -> None:
    cache = embeddings(env)
    await cache.put_many("m", ["a", "b", "c"], [[1.0], [2.0], [3.0]])
    assert await cache.clear() == 3
    assert await cache.get_many("m", ["a"]) == [None]


async def test_invalid_input(env: Env) -> None:
    cache = embeddings(env)
    for call in (
        cache.get_many("", ["a"]),
        cache.get_many("m", "not a list"),
        cache.get_many("m", [1]),
        cache.put_many("m", ["a"], []),
        cache.put_many("m", ["a"], [[]]),
        cache.put_many("m", ["a"], [[1.0, float("nan")]]),
        cache.put_many("m", ["a"], [[[1.0]]]),
        cache.put_many("m", ["a", "b"], [[1.0], ["x"]]),
        cache.embed_many("m", ["a", "b"], lambda texts: [[1.0]]),
    ):
        with pytest.raises(InvalidInputError):
            await call
    with pytest.raises(InvalidInputError):
        cache.wrap(fake_embed, embedder_id="")
    assert env.keys("emb:*") == []


class _Boom(Exception):
    pass


@pytest.mark.parametrize("failure", ["raises", "too few vectors", "bad vector"])
async def test_an_embed_call_that_fails_counts_no_hit(env: Env, failure: str) -> None:
    """embed_many serves nothing when its embed function fails: the cached text it
    found is no hit (it was counted as one, an embedding call saved, before the call,
    in the stats hash and in the metrics); the text that missed is still a miss."""
    registry = CollectorRegistry()
    cache = embeddings(env, registry=registry)
    await cache.put_many("f", ["known"], [fake_embed("known")])

    def embed_batch(texts: list[str]) -> list[list[float]]:
        if failure == "raises":
            raise _Boom("the embedder is down")
        return [] if failure == "too few vectors" else [[float("nan")] for _ in texts]

    with pytest.raises((_Boom, InvalidInputError)):
        await cache.embed_many("f", ["known", "new"], embed_batch)
    stats = await cache.stats()
    assert (stats.embedding_hits, stats.embedding_misses) == (0, 1)

    def requests(result: str) -> float:
        labels = {"name": env.name, "tier": "embedding", "result": result}
        return registry.get_sample_value("agent_cache_requests_total", labels) or 0.0

    assert (requests("hit"), requests("miss")) == (0, 1)
    assert await cache.embed_many("f", ["known", "new"], lambda ts: [[1.0] for _ in ts])
    stats = await cache.stats()
    assert (stats.embedding_hits, stats.embedding_misses) == (1, 2)
    assert (requests("hit"), requests("miss")) == (1, 2)
