"""Interleavings of two clients of one store on a real 3-primary cluster, replayed step
by step: a cluster splits the store's multi-key steps into several round trips (the
records and their listings live in different slots), and what one client does between
another's round trips must not be undone by the later ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_memory import MemoryInput, Scope, SyncMemoryStore
from agent_memory.core.effects import call
from agent_memory.store.ops import forget as forget_module
from tests.reliability.test_cluster_store import cluster_kind, cluster_store  # noqa: F401
from tests.support import TableEmbedder


def _other_client(raw: Any, store_name: str, embed: TableEmbedder) -> SyncMemoryStore:
    """A second, blocking store of the same name on the same cluster (another process)."""
    from valkey.cluster import ValkeyCluster

    node = raw.get_default_node()
    client = ValkeyCluster(host=node.host, port=node.port)
    return SyncMemoryStore(client, store_name, embed)


@pytest.mark.parametrize("how", ["forget", "forget_by_scope"])
async def test_a_memory_stored_again_during_a_cluster_forget_stays_listed(
    cluster_store: tuple[Any, Any, TableEmbedder],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    """A forget deletes a memory; before its bookkeeping round trip another client
    stores a memory under the same id. The forget's late unlisting (the listings live
    in other slots than the record) must not hide the new memory: it stays listed and
    counted, and a later forget_by_scope finds it."""
    store, raw, embed = cluster_store
    await store.ensure_index()
    scope = Scope(namespace="n", agent_id="a")
    (mid,) = await store.remember_many([MemoryInput(content="walrus", id="w-1", scope=scope)])
    ctx = getattr(store, "_store", store)._ctx
    other = _other_client(raw, ctx.keys.name, embed)
    deleting = forget_module.delete_memories
    stored: list[str] = []

    def store_again_after_the_deletion(op_ctx: Any, ids: Any) -> Any:
        deleted = yield from deleting(op_ctx, ids)
        if op_ctx is ctx and not stored:  # the other client's own calls pass through
            again = [MemoryInput(content="walrus again", id=mid, scope=scope)]
            stored.extend((yield from call(lambda: other.remember_many(again), what="write")))
        return deleted

    monkeypatch.setattr(forget_module, "delete_memories", store_again_after_the_deletion)
    try:
        if how == "forget":
            assert await store.forget(mid) is True
        else:
            assert await store.forget_by_scope(scope) == 1
        monkeypatch.undo()
        assert stored == [mid]
        item = await store.get(mid)
        assert item is not None and item.content == "walrus again"
        assert [i.id for i in (await store.list(scope=scope)).items] == [mid]
        assert [i.id for i in (await store.list(scope=Scope(namespace="n"))).items] == [mid]
        assert (await store.stats()).items == 1
        assert await store.forget_by_scope(Scope(namespace="n")) == 1
        assert await store.get(mid) is None
    finally:
        other.client.close()


async def test_a_memory_stored_again_during_a_cluster_prune_stays_listed(
    cluster_store: tuple[Any, Any, TableEmbedder],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """prune unregisters an expired memory, then unlists it from its agent and thread
    indexes and scope bucket (other slots); another client storing it again under its
    id between the two keeps every listing."""
    from agent_memory.store.ops import learn as learn_module

    store, raw, embed = cluster_store
    await store.ensure_index()
    scope = Scope(agent_id="a", thread_id="t")
    (mid,) = await store.remember_many(
        [MemoryInput(content="short lived", id="s-1", scope=scope, ttl=0.2)]
    )
    ctx = getattr(store, "_store", store)._ctx
    other = _other_client(raw, ctx.keys.name, embed)
    finding = learn_module.listing_sets
    stored: list[str] = []

    def store_again_before_the_unlisting(op_ctx: Any, namespace: str) -> Any:
        sets = yield from finding(op_ctx, namespace)
        if op_ctx is ctx and not stored:
            again = [MemoryInput(content="stored again", id=mid, scope=scope)]
            stored.extend((yield from call(lambda: other.remember_many(again), what="write")))
        return sets

    await asyncio.sleep(0.4)  # the server reaps it
    assert await store.get(mid) is None
    monkeypatch.setattr(learn_module, "listing_sets", store_again_before_the_unlisting)
    try:
        assert (await store.prune()).registry_entries == 1
        monkeypatch.undo()
        assert stored == [mid]
        for listed in (scope, Scope(agent_id="a"), Scope(thread_id="t"), Scope()):
            assert [i.id for i in (await store.list(scope=listed)).items] == [mid], listed
        assert await store.forget_by_scope(Scope(agent_id="a")) == 1
    finally:
        other.client.close()
