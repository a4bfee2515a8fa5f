"""TTL, capacity, live config, update, stats, identity checks (every server/client)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agent_memory import (
    Forgetting,
    IndexMismatchError,
    MemoryInput,
    NotFoundError,
    Scope,
    StoreClosedError,
)
from agent_memory.core.effects import command, execute_batch
from agent_memory.schema.encoding import namespace_token
from agent_memory.store.ops import capacity, write
from tests.store.conftest import StoreEnv
from tests.store.test_ranking import Clock
from tests.support import TableEmbedder, count_round_trips, near, random_unit
from tests.support import raw_command as _raw

DAY = 86400.0


def _key(store: Any, memory_id: str) -> str:
    return getattr(store, "wrapped", store)._ctx.keys.memory(memory_id)


async def test_ttl_is_set_with_the_write_and_expired_memories_never_return(env: StoreEnv) -> None:
    clock = Clock()
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("short lived", near(q, 0.1))
    store = env.make(embed, clock=clock)
    mid = await store.remember("short lived", ttl=30)
    pttl = int(await _raw(store, "PTTL", _key(store, mid)))
    assert 0 < pttl <= 30_000
    assert (await store.get(mid)).expires_at == int(clock.now * 1000) + 30_000  # type: ignore[union-attr]
    assert len(await store.recall("query")) == 1
    clock.now += 31  # logically expired before the server reaps it
    assert len(await store.recall("query")) == 0
    assert await store.get(mid) is None
    assert (await store.list()).total == 0


async def test_a_memory_expired_by_the_stores_clock_is_never_changed_or_revived(
    env: StoreEnv,
) -> None:
    clock = Clock()
    store = env.make(clock=clock)
    mid = await store.remember("the deploy window is friday", ttl=30)
    clock.now += 31  # expired for the store; the server has not reaped it
    with pytest.raises(NotFoundError):
        await store.update(mid, importance=0.9)
    with pytest.raises(NotFoundError):
        await store.feedback(mid, 1.0)
    assert await store.expire_many({mid: 3600}) == []
    assert await store.get(mid) is None
    fields = await _raw(store, "HMGET", _key(store, mid), "importance", "manual_utility")
    assert fields[1] is None and float(fields[0]) == 0.5  # nothing written


async def test_a_deduplicated_write_keeps_the_longer_lifetime(env: StoreEnv) -> None:
    """A write collapsing into a stored duplicate with a TTL keeps the longer lifetime
    (none: persistent), in the record, on the server and in the expiry sets; a duplicate
    already expired by the store's clock is not refreshed but written anew."""
    clock = Clock()
    store = env.make(clock=clock)
    keys = getattr(store, "wrapped", store)._ctx.keys
    scope = Scope(agent_id="a")
    listed = keys.expiry_sets(namespace_token(None), "a", None)
    old = await store.remember("fact about user", ttl=1, scope=scope)
    assert await store.remember("fact about user", dedupe=True, scope=scope) == old
    assert int(await _raw(store, "PTTL", _key(store, old))) == -1
    clock.now += 2
    item = await store.get(old)
    assert item is not None and item.expires_at is None
    for key in listed:
        assert float(await _raw(store, "ZSCORE", key, old)) == float("inf")
    short = await store.remember("a passing note", ttl=10, scope=scope)
    assert await store.remember("a passing note", ttl=100, dedupe=True, scope=scope) == short
    assert await store.remember("a passing note", ttl=5, dedupe=True, scope=scope) == short
    expires = int(clock.now * 1000) + 100_000
    assert (await store.get(short)).expires_at == expires  # type: ignore[union-attr]
    assert 10_000 < int(await _raw(store, "PTTL", _key(store, short))) <= 100_000
    for key in listed:
        assert float(await _raw(store, "ZSCORE", key, short)) == expires
    gone = await store.remember("soon gone", ttl=1, scope=scope)
    clock.now += 2  # expired for the store; the server has not reaped it
    fresh = await store.remember("soon gone", dedupe=True, scope=scope)
    assert fresh != gone and await store.get(gone) is None
    assert (await store.get(fresh)).expires_at is None  # type: ignore[union-attr]


async def test_a_batch_of_duplicates_of_a_vanished_memory_stores_one_copy(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes of one batch that all find one stored duplicate, gone before its refresh
    (expired by the store's clock; deleted by another client after the search), store
    one fresh memory between them: each of them used to be written as a copy."""
    clock = Clock()
    store = env.make(clock=clock)
    scope = Scope(agent_id="a")
    batch = [MemoryInput("soon gone", scope=scope), MemoryInput("soon gone", scope=scope)]
    gone = await store.remember("soon gone", ttl=1, scope=scope)
    clock.now += 2  # expired for the store; the server has not reaped it
    ids = await store.remember_many(batch, dedupe=True)
    assert ids[0] == ids[1] != gone
    assert [item.id for item in (await store.list(scope=scope)).items] == [ids[0]]

    searching = write.find_duplicates

    def deleted_after_search(ctx: Any, memories: Any, distance: float) -> Any:
        found = yield from searching(ctx, memories, distance)
        yield from execute_batch([command("DEL", ctx.keys.memory(m)) for m in found[0] if m])
        return found

    scope = Scope(agent_id="b")
    batch = [MemoryInput("forgotten", scope=scope), MemoryInput("forgotten", scope=scope)]
    stored = await store.remember("forgotten", scope=scope)
    monkeypatch.setattr(write, "find_duplicates", deleted_after_search)
    again = await store.remember_many(batch, dedupe=True)
    assert again[0] == again[1] != stored
    assert [item.id for item in (await store.list(scope=scope)).items] == [again[0]]


async def test_a_deduplicating_batch_refreshes_as_its_writes_one_after_another_would(
    env: StoreEnv,
) -> None:
    """Copies in one ``remember_many(dedupe=True)`` leave what the same writes, one
    ``remember(dedupe=True)`` after another, leave: the higher importance, the longer
    lifetime (none: persistent) and an access per copy, in the record, on the server and
    in the expiry sets; a later copy collapsing into an earlier one of the batch used to
    add nothing to it, and a stored memory met by several copies counted one access."""
    clock = Clock()
    store = env.make(clock=clock)
    keys = getattr(store, "wrapped", store)._ctx.keys

    async def state(mid: str, agent: str) -> tuple[Any, ...]:
        item = await store.get(mid)
        assert item is not None
        listed = keys.expiry_sets(namespace_token(None), agent, None)
        scores = [await _raw(store, "ZSCORE", key, mid) for key in listed]
        pttl = int(await _raw(store, "PTTL", _key(store, mid)))
        lifetime = -1 if pttl == -1 else item.expires_at
        return item.importance, item.expires_at, item.access_count, lifetime, scores

    writes = [
        [("a note", 0.1, 10.0), ("a note", 0.9, None), ("a note", 0.5, 20.0)],
        [("brief", 0.9, 10.0), ("brief", 0.2, 30.0), ("brief", 0.1, 20.0)],
    ]
    for stored in (None, 5.0):  # copies of one another; then copies of a stored memory
        for number, copies in enumerate(writes):
            one, batch = (
                Scope(agent_id=f"one{number}{stored}"),
                Scope(agent_id=f"all{number}{stored}"),
            )
            if stored is not None:
                for scope in (one, batch):
                    await store.remember(copies[0][0], importance=0.3, ttl=stored, scope=scope)
            alone = [
                await store.remember(text, importance=i, ttl=ttl, scope=one, dedupe=True)
                for text, i, ttl in copies
            ]
            together = await store.remember_many(
                [MemoryInput(text, importance=i, ttl=ttl, scope=batch) for text, i, ttl in copies],
                dedupe=True,
            )
            assert len(set(alone)) == 1 and len(set(together)) == 1
            assert (await store.list(scope=batch)).total == 1
            assert await state(together[0], batch.agent_id or "") == await state(
                alone[0], one.agent_id or ""
            )


async def test_a_duplicate_expired_by_the_stores_clock_does_not_hide_a_live_one(
    env: StoreEnv,
) -> None:
    """A search that meets a duplicate expired by the store's clock (the server has not
    reaped it) before the live one written in its place refreshes the live one: the
    expired one used to be chosen, found gone, and a new copy written on each write."""
    clock = Clock()
    store = env.make(clock=clock)
    scope = Scope(agent_id="a")
    expired = [await store.remember("a passing note", ttl=1, scope=scope) for _ in range(4)]
    clock.now += 2  # expired for the store; the server has not reaped them
    live = await store.remember("a passing note", dedupe=True, scope=scope)
    assert live not in expired
    for _ in range(3):
        assert await store.remember("a passing note", dedupe=True, scope=scope) == live
    assert [item.id for item in (await store.list(scope=scope)).items] == [live]


async def test_dedupe_distance_zero_collapses_exact_copies(env: StoreEnv) -> None:
    """At ``dedupe_distance=0`` only exact copies are duplicates: two in one batch used to
    be measured a rounding error apart (a float64 product of float32 vectors) and both
    stored."""
    store = env.make(dedupe_distance=0.0)
    scope = Scope(agent_id="a")
    ids = await store.remember_many(
        [MemoryInput("other", scope=scope), MemoryInput("other", scope=scope)], dedupe=True
    )
    assert ids[0] == ids[1]
    assert await store.remember("other", scope=scope, dedupe=True) == ids[0]
    assert await store.remember("another", scope=scope, dedupe=True) != ids[0]
    assert (await store.list(scope=scope)).total == 2


async def test_update_of_a_record_without_a_namespace_says_so(env: StoreEnv) -> None:
    store = env.make()
    mid = await store.remember("a note")
    await _raw(store, "HDEL", _key(store, mid), "namespace")
    for change in ({"importance": 0.7}, {"ttl": 60.0}, {"content": "new text"}):
        with pytest.raises(NotFoundError, match="no namespace"):
            await store.update(mid, **change)


async def test_stats_skips_a_counter_another_writer_damaged(env: StoreEnv) -> None:
    store = env.make()
    await store.remember("a note")
    name = getattr(store, "wrapped", store).name
    await _raw(store, "HSET", f"{name}:__mem_stats", "oops", "not a number")
    stats = await store.stats()
    assert stats.items == 1 and stats.counters["remembers"] == 1
    assert "oops" not in stats.counters
    assert getattr(store, "wrapped", store)._ctx.counters["corrupt_records"] == 1
    if env.expected_backend == "ft":
        await _raw(store, "FT.DROPINDEX", f"{name}:mem:idx")
        assert (await store.stats()).foreign == 0
        assert getattr(store, "wrapped", store)._ctx.counters["index_info_failures"] == 1


async def test_server_side_expiry_removes_the_memory(env: StoreEnv) -> None:
    store = env.make()
    mid = await store.remember("ephemeral", ttl=0.2)
    await asyncio.sleep(0.4)
    assert int(await _raw(store, "EXISTS", _key(store, mid))) == 0
    assert await store.get(mid) is None


async def test_prune_unlists_expired_memories_everywhere(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("short lived", near(q, 0.1))
    embed.set("kept", near(q, 0.2, "k"))
    store = env.make(embed)
    name = getattr(store, "wrapped", store).name
    scope = Scope(agent_id="a", thread_id="t")
    gone = await store.remember("short lived", ttl=0.3, scope=scope)
    kept = await store.remember("kept", scope=scope)
    assert len(await store.recall("query", scope=scope)) == 2  # usage counters for both
    await asyncio.sleep(0.6)  # the server reaps it

    async def listed_in() -> set[str]:
        where: set[str] = set()
        for pattern in ("__mem_agent", "__mem_thread", "__mem_scope"):
            for key in await _raw(store, "KEYS", f"{name}:{pattern}:*"):
                members = await _raw(store, "ZRANGE", key, "0", "-1")
                if any(m in (gone, gone.encode()) for m in members):
                    where.add(pattern)
        usage = await _raw(store, "HKEYS", f"{name}:__mem_use")
        if any(gone in (f.decode() if isinstance(f, bytes) else f) for f in usage):
            where.add("usage")
        return where

    if not env.server.kind.startswith("inprocess"):
        assert await listed_in() == {"__mem_agent", "__mem_thread", "__mem_scope", "usage"}
    result = await store.prune()
    assert result.registry_entries == 1
    assert await listed_in() == set()
    assert [i.id for i in (await store.list(scope=Scope(agent_id="a"))).items] == [kept]


async def test_prune_ahead_of_the_servers_time_leaves_live_memories_listed(
    env: StoreEnv,
) -> None:
    """A pruner whose clock runs two minutes ahead sees a one-minute memory as expired;
    the server still holds it, so it stays in the namespace's listing for the others."""
    writer = env.make()
    name = getattr(writer, "wrapped", writer).name
    pruner = env.make(name=name, clock=lambda: time.time() + 120)
    scope = Scope(agent_id="a")
    live = await writer.remember("still alive on the server", ttl=60, scope=scope)
    kept = await writer.remember("no expiry", scope=scope)
    result = await pruner.prune()
    assert result.registry_entries == 0
    listed = [i.id for i in (await writer.list(scope=scope)).items]
    assert sorted(listed) == sorted([live, kept])


async def test_prune_removes_an_expired_registry_entry_that_names_no_memory(
    env: StoreEnv,
) -> None:
    """An expired entry that is not UTF-8 (no memory of this library) goes unchecked;
    an unexpired one stays (the ghost sweep judges it), and the store stays usable."""
    store = env.make()
    name = getattr(store, "wrapped", store).name
    kept = await store.remember("kept")
    await _raw(store, "ZADD", f"{name}:__mem_reg:_d", "1", b"\xff\xfe", "+inf", b"\xfe\xff")
    result = await store.prune()
    assert result.registry_entries == 1
    registry = f"{name}:__mem_reg:_d"
    assert await _raw(store, "ZSCORE", registry, b"\xff\xfe") is None
    assert await _raw(store, "ZSCORE", registry, b"\xfe\xff") is not None
    assert await _raw(store, "ZSCORE", registry, kept) is not None
    assert [i.id for i in (await store.list()).items] == [kept]


async def test_capacity_evicts_lowest_importance_and_recency_exactly(env: StoreEnv) -> None:
    clock = Clock()
    store = env.make(clock=clock, max_items_per_scope=3)
    scope = Scope(agent_id="capped")
    kept = []
    for i, importance in enumerate([0.9, 0.1, 0.8, 0.2, 0.7]):
        clock.now += 1
        mid = await store.remember(f"m{i}", importance=importance, scope=scope)
        if importance > 0.5:
            kept.append(mid)
    other = await store.remember("other scope", scope=Scope(agent_id="free"), importance=0.0)
    page = await store.list(scope=scope)
    assert sorted(i.id for i in page.items) == sorted(kept)
    assert await store.get(other) is not None
    stats = await store.stats()
    assert stats.evictions == 2
    assert stats.items == 4


async def test_capacity_does_not_count_a_memory_expired_by_the_stores_clock(
    env: StoreEnv,
) -> None:
    """A memory expired by the store's clock but not yet reaped by the server is no
    memory of the scope: it used to count against the cap and, ranked by its importance,
    had a live memory evicted in its place."""
    clock = Clock()
    store = env.make(clock=clock, max_items_per_scope=2)
    scope = Scope(agent_id="capped")
    await store.remember("expiring", ttl=1, importance=0.9, scope=scope)
    low = await store.remember("low", importance=0.1, scope=scope)
    clock.now += 2  # expired for the store; the server has not reaped it
    new = await store.remember("new", importance=0.1, scope=scope)
    assert {i.id for i in (await store.list(scope=scope)).items} == {low, new}
    stats = await store.stats()
    assert stats.evictions == 0 and stats.items == 2


async def test_capacity_ties_evict_the_oldest_writes_first(env: StoreEnv) -> None:
    """Five equal memories written in one millisecond of the store's clock: the two
    written first go (ties were broken by id, so a write's own id could be evicted)."""
    for _ in range(3):
        store = env.make(clock=Clock(), max_items_per_scope=3)
        ids = [await store.remember(f"note {i}") for i in range(5)]
        assert [await store.get(m) is not None for m in ids] == [False, False, True, True, True]


@pytest.mark.parametrize("damage", ["importance", "another type"])
async def test_capacity_skips_a_member_it_cannot_read(env: StoreEnv, damage: str) -> None:
    store = env.make(max_items_per_scope=3)
    scope = Scope(agent_id="capped")
    ids = [await store.remember(f"m{i}", importance=0.5 + i / 10, scope=scope) for i in range(3)]
    if damage == "importance":
        await _raw(store, "HSET", _key(store, ids[0]), "importance", "not-a-number")
    else:
        await _raw(store, "DEL", _key(store, ids[0]))
        await _raw(store, "SET", _key(store, ids[0]), "junk")
    later = [await store.remember(f"n{i}", importance=0.9, scope=scope) for i in range(3)]
    readable = {i.id for i in (await store.list(scope=scope, limit=100)).items}
    # the damaged member is neither evicted nor ranked: the readable ones keep the cap
    assert readable - {ids[0]} == set(later)
    assert int(await _raw(store, "EXISTS", _key(store, ids[0]))) == 1
    assert getattr(store, "wrapped", store)._ctx.counters["corrupt_records"] >= 1


async def test_eviction_spares_a_victim_lifted_after_it_was_ranked(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = env.make(max_items_per_scope=2)
    scope = Scope(agent_id="capped")
    low, middle = [
        await store.remember(f"m{i}", importance=0.1 + i / 10, scope=scope) for i in range(2)
    ]
    deleting = capacity.delete_checked
    lifted: list[str] = []

    def lifted_first(ctx: Any, deletions: Any, **kwargs: Any) -> Any:
        if not lifted:  # another writer raises the chosen victim's importance meanwhile
            lifted.append(deletions[0][0])
            key = ctx.keys.memory(lifted[0])
            yield from execute_batch([command("HSET", key, "importance", "1.0")])
        deleted = yield from deleting(ctx, deletions, **kwargs)
        return deleted

    monkeypatch.setattr(capacity, "delete_checked", lifted_first)
    newest = await store.remember("m2", importance=0.9, scope=scope)
    assert lifted == [low]
    kept = {i.id for i in (await store.list(scope=scope)).items}
    assert kept == {low, newest}  # the lifted one stays; the next lowest went instead
    assert (await store.stats()).evictions == 1
    assert middle not in kept


async def test_capacity_covers_unscoped_writes(env: StoreEnv) -> None:
    store = env.make(max_items_per_scope=2)
    ids = await store.remember_many([{"content": f"u{i}", "importance": i / 10} for i in range(5)])
    remaining = (await store.list()).items
    assert sorted(i.id for i in remaining) == sorted(ids[3:])


async def test_live_config_applies_and_rejects_invalid_values(env: StoreEnv) -> None:
    store = env.make(default_threshold=0.33)
    name = getattr(store, "wrapped", store).name
    await _raw(
        store, "HSET", f"{name}:__mem_config",
        "recall.threshold", "0.5", "recall.weights.recency", "0.5",
        "recall.halfLifeSeconds", "-3", "maxItemsPerScope", "abc",
    )  # fmt: skip
    config = await store.refresh_config()
    assert config.threshold == 0.5
    assert config.weights.recency == 0.5 and config.weights.similarity == 0.75
    assert config.half_life_seconds == 604800.0
    assert config.max_items_per_scope is None
    await _raw(store, "HSET", f"{name}:__mem_config", "recall.threshold", "7")
    config = await store.refresh_config()
    assert config.threshold == 0.5  # invalid: previous value kept


@pytest.mark.filterwarnings("ignore:recall on store:RuntimeWarning")
async def test_periodic_config_refresh(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("mid distance", near(q, 0.45))
    store = env.make(embed, config_refresh=0.05)
    await store.remember("mid distance")
    assert len(await store.recall("query")) == 0
    name = getattr(store, "wrapped", store).name
    await _raw(store, "HSET", f"{name}:__mem_config", "recall.threshold", "0.5")
    await asyncio.sleep(0.1)
    assert len(await store.recall("query")) == 1


async def test_update_changes_fields_and_reembeds(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("new text", near(q, 0.05))
    store = env.make(embed)
    mid = await store.remember("old text", tags=["a"])
    assert len(await store.recall("query")) == 0
    item = await store.update(mid, content="new text", importance=0.9, tags=["b"], ttl=100)
    assert (item.content, item.importance, item.tags) == ("new text", 0.9, ("b",))
    assert item.expires_at is not None
    hits = await store.recall("query", tags=["b"])
    assert [h.item.id for h in hits] == [mid]
    assert len(await store.recall("query", tags=["a"])) == 0
    with pytest.raises(NotFoundError):
        await store.update("0" * 32, importance=0.1)


async def test_update_returns_the_item_as_get_reads_it_in_two_round_trips(
    env: StoreEnv,
) -> None:
    """The item update returns carries the memory's usage counters and retention, as
    get() reads it; the read-back travels with the write (the read, then the write)."""
    clock = Clock()
    store = env.make(TableEmbedder(), clock=clock, forgetting=Forgetting(), adopt_interval=None)
    mid = await store.remember("user likes dark mode")
    for _ in range(3):
        assert await store.recall("user likes dark mode", k=1)
    clock.now += 5 * 86400  # retention below 1
    counting = count_round_trips(store)
    item = await store.update(mid, importance=0.9)
    assert counting.round_trips == 2
    counting.round_trips = 0
    changed = await store.update(mid, content="user likes light mode", tags=["ui"], ttl=DAY)
    assert counting.round_trips == 2
    got = await store.get(mid)
    assert (item.access_count, item.exposures) == (3, 3)
    assert 0 < item.retention < 1 and item.importance == 0.9
    assert changed == got and changed.content == "user likes light mode"
    assert (changed.access_count, changed.exposures, changed.tags) == (3, 3, ("ui",))


async def test_many_ids_are_read_deleted_and_expired_in_one_batch(env: StoreEnv) -> None:
    clock = Clock()
    store = env.make(TableEmbedder(), clock=clock)
    scope = Scope(namespace="many", agent_id="a", thread_id="t")
    ids = [await store.remember(f"memory {i}", scope=scope) for i in range(3)]
    unknown = "0" * 32
    items = await store.get_many([ids[2], unknown, ids[0], ids[2]])
    assert [i.id if i else None for i in items] == [ids[2], None, ids[0], ids[2]]

    assert await store.expire_many({ids[0]: 30, ids[1]: 90, unknown: 10}) == ids[:2]
    for memory_id, seconds in ((ids[0], 30), (ids[1], 90)):
        pttl = int(await _raw(store, "PTTL", _key(store, memory_id)))
        assert 0 < pttl <= seconds * 1000
        item = await store.get(memory_id)
        assert item is not None and item.expires_at == int(clock.now * 1000) + seconds * 1000
    assert (await store.get(ids[2])).expires_at is None  # type: ignore[union-attr]
    clock.now += 31  # ids[0] expired logically: gone from reads and listings
    assert [i.id for i in (await store.list(scope=scope)).items] == [ids[2], ids[1]]
    assert (await store.get_many(ids))[0] is None

    assert await store.forget_many([ids[1], ids[2], ids[1], unknown]) == 2
    assert await store.get_many(ids[1:]) == [None, None]
    assert (await store.list(scope=Scope(namespace="many"))).total == 0


async def test_index_dimension_mismatch_is_refused(env: StoreEnv) -> None:
    store = env.make(TableEmbedder(dim=16))
    await store.ensure_index()
    name = getattr(store, "wrapped", store).name
    other = env.make(TableEmbedder(dim=8), name=name)
    with pytest.raises(IndexMismatchError):
        await other.ensure_index()
    with pytest.raises(IndexMismatchError):
        await other.remember("would be invisible")
    assert (await store.stats()).items == 0


async def test_ensure_index_is_idempotent(env: StoreEnv) -> None:
    store = env.make()
    first = await store.ensure_index()
    second = await store.ensure_index()
    assert first.created and not second.created
    assert first.backend == second.backend == env.expected_backend
    assert first.dim == 16
    assert (first.dialect.family == "none") == (env.expected_backend != "ft")


async def test_closed_store_raises_and_close_is_idempotent(env: StoreEnv) -> None:
    store = env.make()
    await store.remember("x")
    await store.close()
    await store.close()
    with pytest.raises(StoreClosedError):
        await store.recall("x")


async def test_remember_many_round_trip(env: StoreEnv) -> None:
    embed = TableEmbedder()
    store = env.make(embed)
    ids = await store.remember_many(
        [{"content": f"fact {i}", "tags": [f"t{i % 3}"], "importance": 0.5} for i in range(50)]
    )
    assert len(set(ids)) == 50
    assert (await store.list(limit=100)).total == 50
    assert (await store.list(tags=["t1"], limit=100)).total == 17
    stats = await store.stats()
    assert stats.items == 50 and stats.counters["remembers"] == 50


class _NamedEmbedder(TableEmbedder):
    def __init__(self, model: str) -> None:
        super().__init__()
        self.id = model


async def test_another_embedder_of_the_same_width_is_refused(env: StoreEnv) -> None:
    first = env.make(_NamedEmbedder("model-a"))
    await first.remember("written with model a")
    name = getattr(first, "wrapped", first).name
    same = env.make(_NamedEmbedder("model-a"), name=name)
    assert (await same.ensure_index()).dim == 16
    other = env.make(_NamedEmbedder("model-b"), name=name)
    with pytest.raises(IndexMismatchError, match="model-a"):
        await other.recall("anything")


async def test_agent_and_thread_indexes_are_built_for_older_stores(env: StoreEnv) -> None:
    store = env.make()
    a = await store.remember("of agent a", scope=Scope(agent_id="a", thread_id="t"))
    await store.remember("of agent b", scope=Scope(agent_id="b", thread_id="t"))
    name = getattr(store, "wrapped", store).name
    # An older store: no member indexes, no marker.
    for key in (
        f"{name}:__mem_agent:_d:a",
        f"{name}:__mem_agent:_d:b",
        f"{name}:__mem_thread:_d:t",
    ):
        await _raw(store, "DEL", key)
    await _raw(store, "HDEL", f"{name}:__mem_meta", "member_indexes")
    reopened = env.make(name=name)
    await reopened.ensure_index()
    assert [i.id for i in (await reopened.list(scope=Scope(agent_id="a"))).items] == [a]
    assert (await reopened.list(scope=Scope(thread_id="t"))).total == 2
    assert await reopened.forget_by_scope(Scope(agent_id="b")) == 1
    assert (await reopened.list(scope=Scope(thread_id="t"))).total == 1


async def test_indexing_an_older_store_skips_records_it_cannot_read(env: StoreEnv) -> None:
    store = env.make()
    good = await store.remember("of agent a", scope=Scope(agent_id="a"))
    clobbered = await store.remember("clobbered", scope=Scope(agent_id="a"))
    name = getattr(store, "wrapped", store).name
    await _raw(store, "DEL", f"{name}:__mem_agent:_d:a")
    await _raw(store, "HDEL", f"{name}:__mem_meta", "member_indexes")
    await _raw(store, "DEL", _key(store, clobbered))
    await _raw(store, "SET", _key(store, clobbered), "junk")
    await _raw(store, "ZADD", f"{name}:__mem_reg:_d", "+inf", b"\xff\xfe")
    reopened = env.make(name=name)
    await reopened.ensure_index()
    assert [i.id for i in (await reopened.list(scope=Scope(agent_id="a"))).items] == [good]
    assert getattr(reopened, "wrapped", reopened)._ctx.counters["corrupt_records"] >= 1


async def test_effective_config_is_published_never_imposed(env: StoreEnv) -> None:
    """ensure_index fills the unset fields of {name}:__mem_config (Monitor shows them),
    never overwrites an operator's value, and another process does not take a published
    default for an override; an operator's later change is applied."""
    first = env.make(default_threshold=0.5)
    name = getattr(first, "wrapped", first).name
    await _raw(first, "HSET", f"{name}:__mem_config", "recall.weights.recency", "0.2")
    await first.ensure_index()
    raw = await _raw(first, "HGETALL", f"{name}:__mem_config")
    config = {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in (
            raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
        )
    }
    assert float(config["recall.threshold"]) == 0.5
    assert config["recall.weights.recency"] == "0.2"  # the operator's, untouched
    assert float(config["recall.halfLifeSeconds"]) == 604800.0
    second = env.make(name=name, default_threshold=0.3)
    await second.ensure_index()
    seen = await second.refresh_config()
    assert seen.threshold == 0.3  # 0.5 was the first store's default, not an override
    assert seen.weights.recency == 0.2  # the operator's override applies to everyone
    await _raw(first, "HSET", f"{name}:__mem_config", "recall.threshold", "0.9")
    assert (await second.refresh_config()).threshold == 0.9


async def test_an_unreadable_published_config_is_reported(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """The published defaults no writer makes unreadable: every field is then checked
    as the operator's (valid ones apply), and the damage is logged and counted."""
    store = env.make(default_threshold=0.5)
    name = getattr(store, "wrapped", store).name
    await store.ensure_index()
    await _raw(store, "HSET", f"{name}:__mem_config", "agent_memory.published", "[not json")
    counters = getattr(store, "wrapped", store)._ctx.counters
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        assert (await store.refresh_config()).threshold == 0.5
    assert "published config (agent_memory.published) is unreadable" in caplog.text
    assert counters.get("corrupt_records", 0) == 1
