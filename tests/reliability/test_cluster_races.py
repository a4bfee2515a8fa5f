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


def _write_foreign(client: Any, key: str, vector: list[float]) -> None:
    """A record as the BetterDB library writes it (none of our fields)."""
    import numpy as np

    client.hset(
        key,
        mapping={
            "content": "their note", "vector": np.asarray(vector, dtype="<f4").tobytes(),
            "importance": "0.5", "created_at": "1700000000000",
            "last_accessed_at": "1700000000000", "access_count": "0", "tags": "",
        },
    )  # fmt: skip


@pytest.mark.parametrize("meanwhile", ["another_adopter", "their_update"])
async def test_an_adoption_on_a_cluster_rewrites_only_what_it_read(
    cluster_store: tuple[Any, Any, TableEmbedder],  # noqa: F811
    meanwhile: str,
) -> None:
    """Between an adoption's read of a foreign record and its rewrite, another process
    adopts it and goes on using it (an update), or their library updates it: the stale
    rewrite must not replace it (on a standalone server the adoption script checks the
    record; a cluster's write is several commands)."""
    from agent_memory.core.runner import run_sync
    from agent_memory.store.ops.adopt import adopt_ids
    from tests.test_betterdb_adoption import _between_read_and_write

    store, raw, embed = cluster_store
    await store.ensure_index()
    await store.remember("ours")
    ctx = getattr(store, "_store", store)._ctx
    first = _other_client(raw, ctx.keys.name, embed)
    second = _other_client(raw, ctx.keys.name, embed)
    key = ctx.keys.memory("theirs")
    try:
        first.ensure_index()
        second.ensure_index()
        _write_foreign(raw, key, embed("their note"))
        raw.pexpire(key, 600_000)  # their TTL: kept by the rewrite

        def the_other_adopts() -> None:
            if meanwhile == "another_adopter":
                assert run_sync(adopt_ids(second._ctx, ["theirs"]), second._executor).adopted == 1
                second.update("theirs", importance=0.9)
            else:
                raw.hset(key, mapping={"access_count": "4", "content": "edited"})

        op = _between_read_and_write(adopt_ids(first._ctx, ["theirs"]), the_other_adopts)
        report = run_sync(op, first._executor)
        assert (report.adopted, report.skipped) == (0, 1)
        if meanwhile == "another_adopter":
            item = first.get("theirs")
            assert item is not None and item.importance == pytest.approx(0.9)
            assert first.stats().items == 2
        else:
            assert raw.hget(key, "content") == "edited" and not raw.hexists(key, "session")
            assert run_sync(adopt_ids(first._ctx, ["theirs"]), first._executor).adopted == 1
            item = first.get("theirs")
            assert item is not None and (item.content, item.access_count) == ("edited", 4)
        assert 0 < raw.pttl(key) <= 600_000
    finally:
        first.client.close()
        second.client.close()
