"""Threshold gate, composite ranking, near miss, reinforcement (every server/client)."""

from __future__ import annotations

import itertools
import warnings

import pytest

from agent_memory import RecallWeights, Scope
from tests.store.conftest import StoreEnv
from tests.support import TableEmbedder, near, random_unit


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


async def test_threshold_is_a_gate(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("close", near(q, 0.2, "a"))
    embed.set("far", near(q, 0.5, "b"))
    store = env.make(embed, default_threshold=0.33)
    await store.remember("close")
    await store.remember("far", importance=1.0)
    hits = await store.recall("query")
    assert [h.item.content for h in hits] == ["close"]
    wide = await store.recall("query", threshold=0.6)
    assert sorted(h.item.content for h in wide) == ["close", "far"]


async def test_recency_and_importance_reorder_within_the_gate(env: StoreEnv) -> None:
    clock = Clock()
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("old but closer", near(q, 0.05, "a"))
    embed.set("fresh", near(q, 0.15, "b"))
    embed.set("unrelated", near(q, 0.9, "c"))  # in the pool, beyond the gate
    store = env.make(embed, clock=clock, half_life_seconds=3600)
    await store.remember("old but closer", importance=0.1)
    await store.remember("unrelated", importance=0.1)
    clock.now += 10 * 3600  # ten half-lives later
    await store.remember("fresh", importance=0.9)
    hits = await store.recall("query", reinforce=False)
    assert [h.item.content for h in hits] == ["fresh", "old but closer"]
    sim_only = await store.recall(
        "query", weights=RecallWeights(similarity=1, recency=0, importance=0), reinforce=False
    )
    assert [h.item.content for h in sim_only] == ["old but closer", "fresh"]
    # Hybrid relevance: no memory shares a term with the query, so the relevance is the
    # pool's min-max normalised similarity (1 for the nearest).
    expected = 0.75 * 1.0 + 0.10 * 2**-10 + 0.15 * 0.1
    old_hit = next(h for h in hits if h.item.content == "old but closer")
    assert old_hit.score == pytest.approx(expected, abs=1e-4)


async def test_near_miss_warns_once_and_is_reported(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("almost", near(q, 0.5, "a"))
    store = env.make(embed, default_threshold=0.3)
    await store.remember("almost")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = await store.recall("query")
        second = await store.recall("query")
    assert len(first) == 0 and first.near_miss
    assert first.nearest_distance == pytest.approx(0.5, abs=1e-3)
    assert second.near_miss
    assert sum("threshold" in str(w.message) for w in caught) == 1


async def test_no_near_miss_when_nothing_is_close(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("unrelated", near(q, 0.9, "a"))
    store = env.make(embed, default_threshold=0.3)
    await store.remember("unrelated")
    result = await store.recall("query")
    assert len(result) == 0 and not result.near_miss


async def test_reinforce_bumps_access_and_never_resurrects(env: StoreEnv) -> None:
    clock = Clock()
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("memory", near(q, 0.1))
    store = env.make(embed, clock=clock)
    mid = await store.remember("memory")
    clock.now += 2 * 3600  # older than one recency step (1 h with the 7-day half-life)
    await store.recall("query")
    item = await store.get(mid)
    assert item is not None
    assert item.access_count == 1
    assert item.last_accessed_at == int(clock.now * 1000)
    refreshed_at = item.last_accessed_at
    clock.now += 60  # within the step: counted, but the indexed document is not rewritten
    await store.recall("query")
    item = await store.get(mid)
    assert item.access_count == 2 and item.last_accessed_at == refreshed_at  # type: ignore[union-attr]
    await store.recall("query", reinforce=False)
    assert (await store.get(mid)).access_count == 2  # type: ignore[union-attr]
    # A memory forgotten between search and reinforcement must stay forgotten.
    hits = await store.recall("query", reinforce=False)
    await store.forget(mid)
    store_obj = getattr(store, "wrapped", store)
    from agent_memory.schema import scripts

    keys = store_obj._ctx.keys
    key = keys.memory(mid)
    client = store_obj.client

    async def run(*args: object) -> object:
        result = client.execute_command(*args)
        return await result if hasattr(result, "__await__") else result

    # The recall's side effects, replayed after the forget, as one that raced it would.
    script = ("EVAL", scripts.RECALL_EFFECTS, 5, keys.stats, keys.usage, keys.receipts)
    sel = "f" * 32
    effects = (keys.receipt(sel), key, "1", "1", "1", "recall_hits", "{}", "1000", sel)
    result = await run(*script, *effects, "1", "content", mid)
    assert [int(x) for x in result[0][:2]] == [-1, -1]  # type: ignore[index]
    assert not result[0][2]  # type: ignore[index]
    assert await run("EXISTS", key) == 0
    assert await run("HMGET", keys.usage, *keys.usage_fields(mid)) == [None, None]
    assert await run("EVAL", scripts.TOUCH, 1, key, "1", "1") == 0
    assert await run("EXISTS", key) == 0
    assert hits[0].item.id == mid


async def test_scopes_and_tags_filter(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    for i, text in enumerate(["a1", "a2", "b1", "untagged"]):
        embed.set(text, near(q, 0.05 + 0.01 * i, text))
    store = env.make(embed)
    await store.remember("a1", scope=Scope(agent_id="a"), tags=["x", "y"])
    await store.remember("a2", scope=Scope(agent_id="a"), tags=["x"])
    await store.remember("b1", scope=Scope(agent_id="b"), tags=["x", "y"])
    await store.remember("untagged")
    assert {h.item.content for h in await store.recall("query")} == {"a1", "a2", "b1", "untagged"}
    assert {h.item.content for h in await store.recall("query", scope=Scope(agent_id="a"))} == {
        "a1",
        "a2",
    }
    assert {h.item.content for h in await store.recall("query", tags=["x", "y"])} == {"a1", "b1"}
    assert {
        h.item.content for h in await store.recall("query", scope=Scope(namespace="other"))
    } == set()


async def test_k_cuts_and_orders(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    for i in range(12):
        embed.set(f"m{i}", near(q, 0.01 * (i + 1), f"s{i}"))
    store = env.make(embed)
    await store.remember_many([{"content": f"m{i}"} for i in range(12)])
    hits = await store.recall("query", k=5, weights=RecallWeights(1, 0, 0))
    assert [h.item.content for h in hits] == ["m0", "m1", "m2", "m3", "m4"]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
