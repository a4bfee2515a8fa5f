"""Memories written in the same millisecond keep their write order everywhere that reads
"oldest first" or "newest first" (list, export, the summariser's input)."""

from __future__ import annotations

from typing import Any

from agent_memory import MemoryInput, Scope
from tests.store.conftest import StoreEnv
from tests.store.test_ranking import Clock

NOTES = [f"turn {i}: the user said something" for i in range(6)]


async def test_a_burst_of_writes_keeps_its_order(env: StoreEnv) -> None:
    clock = Clock()  # never moves: every write shares one millisecond
    store = env.make(clock=clock)
    ids = [await store.remember(text) for text in NOTES[:4]]
    ids += await store.remember_many([MemoryInput(text) for text in NOTES[4:]])
    listed = await store.list(limit=10)
    assert [item.id for item in listed.items] == ids[::-1]  # newest first
    assert [item.sequence for item in listed.items] == sorted(
        (item.sequence for item in listed.items), reverse=True
    )
    exported = await _export_ids(store)
    assert exported == ids  # oldest first
    seen: list[str] = []

    def summarize(items: list[Any]) -> str:
        seen.extend(item.id for item in items)
        return "summary"

    await store.consolidate(mode="summary", scope=Scope(), summarize=summarize)
    assert seen == ids


async def _export_ids(store: Any) -> list[str]:
    exported = store.export(include_vectors=False)
    if hasattr(exported, "__aiter__"):
        return [record["id"] async for record in exported]
    return [record["id"] for record in await exported]
