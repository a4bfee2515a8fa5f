"""Selections against memories that changed between the recall and its completion."""

from __future__ import annotations

import itertools

import pytest

from agent_memory import MemoryInput
from tests.store.conftest import StoreEnv
from tests.store.test_learning import _fields, _raw_store, _world
from tests.support import raw_command


async def test_a_memory_stored_again_under_its_id_takes_no_credit_of_an_older_selection(
    env: StoreEnv,
) -> None:
    embed, _ = _world(2)
    ticks = itertools.count(1_700_000_000_000, 5)  # ms, 5 per reading of the clock
    store = env.make(embed, clock=lambda: next(ticks) / 1000)
    await store.remember_many([MemoryInput("m0", id="chosen"), MemoryInput("m1", id="other")])
    result = await store.recall("query", k=2)
    assert {h.item.id for h in result} == {"chosen", "other"}
    assert await store.forget("chosen")
    await store.remember_many([MemoryInput("m0", id="chosen")])
    assert await store.complete(result.selection_id, 1.0) is True
    assert await _fields(store, "chosen", "eval_sum", "eval_weight", "last_reinforced_at") == [
        None,
        None,
        (await _fields(store, "chosen", "created_at"))[0],
    ]
    assert float((await _fields(store, "other", "eval_weight"))[0]) == 0.5


@pytest.mark.parametrize("damage", ["a counter that is not a count", "a usage key of another type"])
async def test_damaged_usage_counters_cost_no_selection(env: StoreEnv, damage: str) -> None:
    """Usage counters another writer damaged: the recall's other side effects and its
    receipt are still written (the selection can be completed), the damage is logged and
    counted and left as it is."""
    embed, _ = _world(2)
    store = env.make(embed)
    ids = [await store.remember(f"m{i}") for i in range(2)]
    raw = _raw_store(store)
    usage = raw._ctx.keys.usage
    exposures, _ = raw._ctx.keys.usage_fields(ids[0])
    if damage == "a counter that is not a count":
        await raw_command(store, "HSET", usage, exposures, "many")
    else:
        await raw_command(store, "DEL", usage)
        await raw_command(store, "SET", usage, "not a hash")
    before = raw._ctx.counters.get("corrupt_records", 0)
    result = await store.recall("query", k=2)
    assert len(result) == 2
    assert raw._ctx.counters.get("corrupt_records", 0) > before
    assert raw._ctx.counters.get("side_effect_failures", 0) == 0
    assert await store.complete(result.selection_id, 1.0) is True
    assert float((await _fields(store, ids[1], "eval_weight"))[0]) == 0.5
    if damage == "a counter that is not a count":
        assert (await store.get(ids[1])).exposures == 1
        assert await raw_command(store, "HGET", usage, exposures) in ("many", b"many")
    else:
        assert await raw_command(store, "GET", usage) in ("not a hash", b"not a hash")


async def test_infinite_learning_aggregates_are_damage_not_the_best_utility(
    env: StoreEnv,
) -> None:
    """Aggregates no writer makes (infinities another writer stored): read as damage,
    logged and counted, never as a utility of 1 that ranks the memory first."""
    embed, _ = _world(3)
    store = env.make(embed, reinforcement=True)
    ids = [await store.remember(f"m{i}") for i in range(3)]
    raw = _raw_store(store)
    await raw_command(
        store, "HSET", raw._ctx.keys.memory(ids[2]), "eval_sum", "inf", "eval_weight", "inf"
    )
    before = raw._ctx.counters.get("corrupt_records", 0)
    hits = await store.recall("query", k=3)
    assert [h.item.id for h in hits] == ids[:2]
    assert raw._ctx.counters.get("corrupt_records", 0) > before
