"""Every cache operation on a real 3-primary Valkey cluster, every client flavour.

Keys of one tier spread over all three primaries, so these tests fail on any
multi-key command that crosses slots (CROSSSLOT) and on a scan that misses a node.
"""

from __future__ import annotations

from typing import Any

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
from tests.cache.conftest import Env

N = 30


def _nodes(env: Env, keys: list[str]) -> set[str]:
    return {env.raw.get_node_from_key(key).name for key in keys}


async def test_cluster_has_three_primaries(cluster_env: Env) -> None:
    assert len(cluster_env.raw.get_primaries()) == 3


async def test_llm_cache_on_cluster(cluster_env: Env) -> None:
    env = cluster_env
    cache = env.make(LlmCache, SyncLlmCache, ttl=60)
    keys = []
    for i in range(N):
        params = {"model": "gpt-4o" if i % 2 else "gpt-4o-mini", "messages": [], "seed": i}
        keys.append(await cache.store(params, f"r{i}", tokens={"input": 100, "output": 10}))
    assert len(_nodes(env, keys)) == 3
    hit = await cache.check({"model": "gpt-4o", "messages": [], "seed": 1})
    assert hit.hit and hit.cost_saved_micros == 350
    assert not (await cache.check({"model": "gpt-4o", "messages": [], "seed": 99})).hit
    assert await cache.invalidate_by_model("gpt-4o") == N // 2
    assert await cache.clear() == N // 2
    assert env.keys("llm:*") == []
    stats = await cache.stats()
    assert (stats.llm_hits, stats.llm_misses, stats.cost_saved_micros) == (1, 1, 350)
    calls = []

    def complete(**params: Any) -> str:
        calls.append(params)
        return "done"

    cached = cache.wrap(complete)
    assert await cached(model="m", messages=[]) == await cached(model="m", messages=[])
    assert len(calls) == 1


async def test_tool_cache_on_cluster(cluster_env: Env) -> None:
    env = cluster_env
    cache = env.make(ToolCache, SyncToolCache)
    await cache.set_policy("a*b", ttl=90)
    assert (await cache.get_policy("a*b")).ttl == 90
    keys = [await cache.store("a*b", {"i": i}, i) for i in range(N)]
    keys += [await cache.store("other", {"i": i}, i) for i in range(5)]
    assert len(_nodes(env, keys)) == 3
    assert 89_000 < env.raw.pttl(keys[0]) <= 90_000
    assert (await cache.check("a*b", {"i": 3})).result == 3
    assert not (await cache.check("a*b", {"i": -1})).hit
    assert await cache.invalidate("a*b", {"i": 0}) is True
    assert await cache.invalidate_by_tool("a*b") == N - 1
    assert await cache.invalidate_by_tool("other") == 5
    assert env.keys("tool:*") == []
    report = await cache.tool_effectiveness()
    assert [(e.tool, e.hits, e.misses) for e in report] == [("a*b", 1, 1)]
    assert await cache.delete_policy("a*b") is True


async def test_session_store_on_cluster(cluster_env: Env) -> None:
    env = cluster_env
    store = env.make(SessionStore, SyncSessionStore, ttl=120)
    threads = [f"thread-{i}" for i in range(N)]
    for thread in threads:
        await store.set(thread, "a", thread)
        await store.set(thread, "b", [1, 2])
    assert len(_nodes(env, [f"{env.name}:session:{t}" for t in threads])) == 3
    for thread in threads[:5]:
        assert await store.get(thread, "a") == thread
        assert await store.get_all(thread) == {"a": thread, "b": [1, 2]}
        assert await store.touch(thread) is True
        assert await store.delete(thread, "b") is True
    for thread in threads:
        assert await store.destroy_thread(thread) in (1, 2)
    assert env.keys("session:*") == []
    stats = await store.stats()
    assert (stats.session_reads, stats.session_writes) == (10, 2 * N + 5 + N)


async def test_embedding_cache_on_cluster(cluster_env: Env) -> None:
    env = cluster_env
    cache = env.make(EmbeddingCache, SyncEmbeddingCache)
    texts = [f"text {i}" for i in range(N)]
    await cache.put_many("e", texts, [[float(i), 0.5] for i in range(N)])
    assert len(_nodes(env, env.keys("emb:*"))) == 3
    got = await cache.get_many("e", [*texts, "missing"])
    assert got[:N] == [[float(i), 0.5] for i in range(N)] and got[N] is None
    calls: list[list[str]] = []

    def embed(batch: list[str]) -> list[list[float]]:
        calls.append(batch)
        return [[9.0] for _ in batch]

    vectors = await cache.embed_many("e", ["text 1", "new 1", "new 2"], embed)
    assert vectors == [[1.0, 0.5], [9.0], [9.0]] and calls == [["new 1", "new 2"]]
    assert await cache.clear() == N + 2
    stats = await cache.stats()
    assert (stats.embedding_hits, stats.embedding_misses) == (N + 1, 3)
