"""``prune`` removes registry entries that name no memory (a cluster write cut short
between its registration and its record, an evicted memory), but never the entry of a
write still in flight: an entry is removed only when two prunes at least the grace apart
both found its memory missing (every server/client)."""

from __future__ import annotations

from typing import Any

from agent_memory import Scope
from agent_memory.schema import layout as L
from agent_memory.schema.encoding import encode_value, namespace_token
from agent_memory.store.ops.ghosts import GHOST_GRACE_MS
from tests.store.conftest import StoreEnv
from tests.store.test_ranking import Clock
from tests.support import TableEmbedder
from tests.support import raw_command as _raw

GRACE_S = GHOST_GRACE_MS / 1000


def _keys(store: Any) -> L.Keys:
    return L.Keys(str(getattr(store, "wrapped", store).name))


async def _listed(store: Any, key: str, memory_id: str) -> bool:
    return await _raw(store, "ZSCORE", key, memory_id) is not None


async def test_prune_unregisters_a_missing_memory_after_the_grace(env: StoreEnv) -> None:
    clock = Clock()
    store = env.make(TableEmbedder(), clock=clock)
    scope = Scope(namespace="ns", agent_id="a1", thread_id="t1")
    kept = await store.remember("still here", scope=scope)
    lost = await store.remember("its record never arrived", scope=scope)
    keys, ns = _keys(store), namespace_token("ns")
    agent_index = keys.agent_index(ns, encode_value("a1"))
    thread_index = keys.thread_index(ns, encode_value("t1"))
    await _raw(store, "DEL", keys.memory(lost))  # what a write cut short leaves behind
    assert (await store.stats()).items == 2

    first = await store.prune(Scope(namespace="ns"))
    assert first.ghost_entries == 0  # suspected only: it may be a write in flight
    assert await _listed(store, keys.registry(ns), lost)

    # A write in flight: registered after the first prune, its record not written yet.
    clock.now += GRACE_S - 1
    await _raw(store, "ZADD", keys.registry(ns), "+inf", "inflight")
    await _raw(store, "ZADD", agent_index, "+inf", "inflight")
    assert (await store.prune(Scope(namespace="ns"))).ghost_entries == 0  # not yet the grace
    clock.now += 1
    second = await store.prune(Scope(namespace="ns"))
    assert second.ghost_entries == 1
    for key in (keys.registry(ns), agent_index, thread_index):
        assert not await _listed(store, key, lost), key
    assert await _listed(store, keys.registry(ns), "inflight")  # seen missing too recently
    assert await _listed(store, keys.registry(ns), kept)
    listing = await store.list(scope=Scope(namespace="ns", agent_id="a1"))
    assert [i.id for i in listing.items] == [kept]
    assert (await store.stats()).items == 2  # kept, and the write in flight

    # The write in flight completes: its entry stays, whatever the time.
    await _raw(store, "HSET", keys.memory("inflight"), "content", "late but stored")
    clock.now += 2 * GRACE_S
    assert (await store.prune(Scope(namespace="ns"))).ghost_entries == 0
    assert await _listed(store, keys.registry(ns), "inflight")
    assert await _raw(store, "EXISTS", keys.ghost_suspects(ns)) == 0  # nothing suspected


async def test_prune_of_every_namespace_sweeps_each(env: StoreEnv) -> None:
    clock = Clock()
    store = env.make(TableEmbedder(), clock=clock)
    gone = [await store.remember(f"memory {n}", scope=Scope(namespace=n)) for n in ("a", "b")]
    for memory_id in gone:
        await _raw(store, "DEL", _keys(store).memory(memory_id))
    await store.prune()
    clock.now += GRACE_S
    assert (await store.prune()).ghost_entries == 2
    assert (await store.stats()).items == 0


async def test_an_unreadable_suspect_entry_is_reported_and_replaced(
    env: StoreEnv, caplog: Any
) -> None:
    """A suspects-hash entry no sweep writes (a time that is not a number) is logged and
    counted, deleted, and its id, still missing, is suspected again from scratch: the
    grace starts over rather than the entry staying forever."""
    clock = Clock()
    store = env.make(TableEmbedder(), clock=clock)
    raw = getattr(store, "wrapped", store)
    lost = await store.remember("gone", scope=Scope(namespace="ns"))
    keys, ns = _keys(store), namespace_token("ns")
    await _raw(store, "DEL", keys.memory(lost))
    await _raw(store, "HSET", keys.ghost_suspects(ns), lost, "soon", "no-such-id", "x")
    before = raw._ctx.counters.get("corrupt_records", 0)
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        assert (await store.prune(Scope(namespace="ns"))).ghost_entries == 0
    assert raw._ctx.counters.get("corrupt_records", 0) - before == 2
    assert caplog.text.count("ghost-suspect entry") == 2
    entries = await _raw(store, "HGETALL", keys.ghost_suspects(ns))
    decoded = {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in (
            entries.items()
            if isinstance(entries, dict)
            else zip(entries[::2], entries[1::2], strict=True)
        )
    }
    assert decoded == {lost: str(int(clock.now * 1000))}  # suspected anew, the rest gone
    clock.now += GRACE_S
    assert (await store.prune(Scope(namespace="ns"))).ghost_entries == 1
