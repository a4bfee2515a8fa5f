"""AgentMemory: one client and name for every tier, Monitor discovery, heartbeats."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio

from agent_memory import AgentMemory, InvalidInputError, Scope, SyncAgentMemory
from agent_memory.facade import discovery
from tests.conftest import ServerInfo, _Servers
from tests.support import TableEmbedder, near, random_unit


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey-redisearch")


def _name() -> str:
    return f"a{uuid.uuid4().hex[:10]}"


async def test_initialize_announces_every_tier(server: ServerInfo) -> None:
    name = _name()
    raw = redis.asyncio.Redis.from_url(server.url, decode_responses=True)
    agent = AgentMemory.from_url(server.url, name=name, embed=TableEmbedder(),
                                 cache={"llm": {"ttl": 3600}})  # fmt: skip
    try:
        status = await agent.initialize()
        assert status.backend == "ft"
        assert (await agent.initialize()).created is False  # idempotent
        memory = json.loads(await raw.hget(discovery.REGISTRY_KEY, f"{name}:mem"))
        assert memory["type"] == "agent_memory" and memory["prefix"] == name
        assert memory["protocol_version"] == 1
        assert memory["stats_key"] == f"{name}:__mem_stats"
        assert memory["index_name"] == f"{name}:mem:idx"
        assert memory["started_at"].endswith("+00:00") and memory["pid"] > 0 and memory["hostname"]
        assert memory["recall_threshold"] == pytest.approx(0.33)
        cache = json.loads(await raw.hget(discovery.REGISTRY_KEY, name))
        assert cache["type"] == "agent_cache" and cache["stats_key"] == f"{name}:__stats"
        assert cache["tiers"]["llm"] == {"enabled": True, "ttl_default": 3600}
        assert cache["tiers"]["session"] == {"enabled": True, "ttl_default": 86400}  # default
        assert cache["tiers"]["tool"] == {"enabled": True}  # no expiry
        assert await raw.get(discovery.PROTOCOL_KEY) == "1"
        for field in (f"{name}:mem", name):
            ttl = await raw.ttl(discovery.heartbeat_key(field))
            assert 0 < ttl <= 60
        # every tier works over the one client
        await agent.memory.remember("hello")
        await agent.session.set("t1", "k", {"v": 1})
        assert await agent.session.get("t1", "k") == {"v": 1}
        stats = await agent.stats()
        assert stats.memory.items == 1 and stats.cache.session_writes >= 1
    finally:
        await agent.close()
        await agent.close()
    for field in (f"{name}:mem", name):
        assert await raw.exists(discovery.heartbeat_key(field)) == 0
    assert await raw.hexists(discovery.REGISTRY_KEY, name)  # marker stays: Monitor shows it gone
    await raw.aclose()


async def test_heartbeat_refreshes_and_repairs_after_an_empty_restart(server: ServerInfo) -> None:
    name = _name()
    raw = redis.asyncio.Redis.from_url(server.url, decode_responses=True)
    agent = AgentMemory.from_url(
        server.url, name=name, embed=TableEmbedder(), heartbeat_interval=0.2
    )
    try:
        await agent.initialize()
        key = discovery.heartbeat_key(f"{name}:mem")
        first = await raw.get(key)
        # Simulate a server that lost its data: heartbeat and marker disappear.
        await raw.delete(key)
        await raw.hdel(discovery.REGISTRY_KEY, f"{name}:mem")
        await asyncio.sleep(0.6)
        assert await raw.get(key) not in (None, first)
        assert await raw.hexists(discovery.REGISTRY_KEY, f"{name}:mem")
    finally:
        await agent.close()
        await raw.aclose()


async def test_a_field_taken_by_another_type_is_refused(server: ServerInfo) -> None:
    name = _name()
    raw = redis.asyncio.Redis.from_url(server.url, decode_responses=True)
    await raw.hset(discovery.REGISTRY_KEY, f"{name}:mem", json.dumps({"type": "agent_cache"}))
    agent = AgentMemory.from_url(server.url, name=name, embed=TableEmbedder())
    try:
        with pytest.raises(InvalidInputError, match="taken"):
            await agent.initialize()
    finally:
        await agent.close()
        await raw.aclose()


async def test_closing_one_of_two_agents_sharing_a_name_leaves_the_others_heartbeat(
    server: ServerInfo,
) -> None:
    """Two processes may share a name (and so its discovery fields): one closing
    withdraws only a heartbeat it wrote itself, never the one the other, still running,
    wrote after it."""
    name = _name()
    raw = redis.asyncio.Redis.from_url(server.url, decode_responses=True)
    first = AgentMemory.from_url(server.url, name=name, embed=TableEmbedder())
    second = AgentMemory.from_url(server.url, name=name, embed=TableEmbedder())
    fields = (f"{name}:mem", name)
    try:
        await first.initialize()
        await second.initialize()  # the second beat overwrote the first's heartbeats
        await first.close()
        for field in fields:
            assert await raw.exists(discovery.heartbeat_key(field)) == 1
        await second.close()
        for field in fields:
            assert await raw.exists(discovery.heartbeat_key(field)) == 0
    finally:
        await first.close()
        await second.close()
        await raw.aclose()


def test_sync_agent_heartbeat_thread(server: ServerInfo) -> None:
    name = _name()
    raw = redis.Redis.from_url(server.url, decode_responses=True)
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("fact", near(q, 0.1))
    with SyncAgentMemory.from_url(
        server.url, name=name, embed=embed, heartbeat_interval=0.2
    ) as agent:
        key = discovery.heartbeat_key(name)
        raw.delete(key)
        deadline = time.monotonic() + 5
        while raw.get(key) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert raw.get(key) is not None
        agent.memory.remember("fact", scope=Scope(agent_id="x"))
        assert [h.item.content for h in agent.memory.recall("query")] == ["fact"]
    assert raw.exists(key) == 0
    raw.close()


def test_embedded_agent_persists_and_stops(tmp_path: Path) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("persisted fact", near(q, 0.1))
    with SyncAgentMemory.embedded(str(tmp_path), name="emb", embed=embed) as agent:
        agent.memory.remember("persisted fact")
        server = agent._server
        assert server is not None and server.owned
    assert server.process is None  # stopped by close()
    with SyncAgentMemory.embedded(str(tmp_path), name="emb", embed=embed) as again:
        hits = again.memory.recall("query")
        assert [h.item.content for h in hits] == ["persisted fact"]


async def test_embedding_cache_saves_repeated_embedding_calls(server: ServerInfo) -> None:
    embed = TableEmbedder()
    embed.id = "table-v1"  # type: ignore[attr-defined]
    agent = AgentMemory.from_url(server.url, name=_name(), embed=embed, embedding_cache=True)
    try:
        await agent.initialize()
        await agent.memory.remember("the same fact")
        await agent.memory.remember("the same fact", scope=Scope(agent_id="other"))
        await agent.memory.recall("the same fact")
        assert embed.calls == 1  # dim came from the embedder; one text embedded once
        assert agent.embeddings is not None
        stats = await agent.embeddings.stats()
        assert stats.embedding_hits == 2 and stats.embedding_misses == 1
    finally:
        await agent.close()


def _embed_function() -> Any:
    def embed(text: str, seed: int = 0) -> list[float]:  # a new function each time
        return random_unit(f"{seed}:{text}")

    return embed


def _with_id(value: object) -> TableEmbedder:
    embed = TableEmbedder()
    embed.id = value  # type: ignore[attr-defined]
    return embed


_NO_ID: dict[str, Any] = {
    "function": _embed_function,
    "partial": lambda: functools.partial(_embed_function(), seed=1),
    "lambda": lambda: lambda text: random_unit(text, 8),
    "object": TableEmbedder,
    "empty": lambda: _with_id(""),
    "int": lambda: _with_id(5),
}


@pytest.mark.parametrize("kind", _NO_ID)
@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
def test_the_embedding_cache_refuses_an_embedder_without_an_id(cls: Any, kind: str) -> None:
    """A guessed id keyed the cache: every partial was 'functools.partial' and every
    function called embed 'builtins.embed', so different embedders were handed each
    other's cached vectors (and the guess was written into the store's meta)."""
    import valkey
    import valkey.asyncio

    client = valkey.Valkey() if cls is SyncAgentMemory else valkey.asyncio.Valkey()
    embed = _NO_ID[kind]()
    with pytest.raises(InvalidInputError, match="needs an embedder with an 'id'") as info:
        cls(client, "n", embed, embedding_cache=True)
    assert info.value.field == "embedding_cache"
    cls(client, "n", embed)  # without the cache the embedder is fine
    embed.id = "my-model-v1"  # what the message advises
    agent = cls(client, "n", embed, embedding_cache=True)
    assert agent.memory._ctx.settings.embed.id == "my-model-v1"


@pytest.mark.parametrize(
    "options",
    [
        {"memory": {"bogus": 1}},
        {"memory": {"registry": None}},  # set by the facade itself
        {"memory": 5},
        {"cache": 5},
        {"cache": {"llm": {"bogus": 1}}},
        {"cache": {"session": 5}},
        {"cache": {"queue": {}}},
        {"heartbeat_interval": "5"},
        {"heartbeat_interval": math.inf},
        {"heartbeat_interval": True},
        {"discovery": "yes"},
        {"embedding_cache": "yes"},
        {"registry": 5},
    ],
    ids=repr,
)
@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
def test_hostile_constructor_arguments_are_refused(cls: Any, options: dict[str, Any]) -> None:
    """Each bad argument raises InvalidInputError naming it (options that no tier takes
    leaked a TypeError, a non-boolean flag or an infinite interval was accepted)."""
    import valkey
    import valkey.asyncio

    client = valkey.Valkey() if cls is SyncAgentMemory else valkey.asyncio.Valkey()
    field = next(iter(options))
    with pytest.raises(InvalidInputError) as info:
        cls(client, "n", TableEmbedder(), **options)
    assert info.value.field is not None and info.value.field.startswith(field)
