"""Remember, recall, get, list, forget on every server and client combination."""

from __future__ import annotations

from agent_memory import Scope
from tests.store.conftest import StoreEnv
from tests.support import TableEmbedder, near, random_unit


async def test_remember_then_recall_returns_the_memory(env: StoreEnv) -> None:
    embed = TableEmbedder()
    base = random_unit("dark mode")
    embed.set("User prefers dark mode", base)
    embed.set("what theme does the user like?", near(base, 0.1))
    store = env.make(embed)
    status = await store.ensure_index()
    assert status.backend == env.expected_backend
    mid = await store.remember("User prefers dark mode", importance=0.8, tags=["prefs"])
    await store.remember("The deploy runs on Fridays")
    hits = await store.recall("what theme does the user like?", k=5)
    assert [h.item.id for h in hits] == [mid]
    hit = hits[0]
    assert hit.item.content == "User prefers dark mode"
    assert hit.item.tags == ("prefs",)
    assert abs(hit.distance - 0.1) < 1e-3
    assert abs(hit.similarity - (1 - hit.distance)) < 1e-9
    assert hits.selection_id


async def test_get_list_forget(env: StoreEnv) -> None:
    store = env.make()
    scope = Scope(agent_id="assistant", thread_id="t 1")
    ids = [await store.remember(f"memory {i}", scope=scope) for i in range(3)]
    other = await store.remember("other agent", scope=Scope(agent_id="other"))
    item = await store.get(ids[0])
    assert item is not None and item.scope == scope
    page = await store.list(scope=Scope(agent_id="assistant"), limit=2)
    assert page.total == 3 and len(page.items) == 2
    assert await store.forget(ids[0]) is True
    assert await store.forget(ids[0]) is False
    assert await store.get(ids[0]) is None
    assert await store.forget_by_scope(Scope(thread_id="t 1")) == 2
    assert (await store.list()).total == 1
    assert (await store.get(other)) is not None
