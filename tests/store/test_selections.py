"""Selections against memories that changed between the recall and its completion."""

from __future__ import annotations

from agent_memory import MemoryInput
from tests.store.conftest import StoreEnv
from tests.store.test_learning import _fields, _world


async def test_a_memory_stored_again_under_its_id_takes_no_credit_of_an_older_selection(
    env: StoreEnv,
) -> None:
    embed, _ = _world(2)
    store = env.make(embed)
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
