"""Interleavings of two writers of one memory, replayed step by step: what one writer's
late step must not undo of the other's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agent_memory import InvalidInputError, MemoryInput, MemoryItem, Scope, SyncMemoryStore
from agent_memory.backends.inprocess import InProcessClient
from agent_memory.core.effects import Command, call
from agent_memory.store.ops import forget as forget_module
from agent_memory.store.ops.forget import bookkeeping, delete_command, deleted_from
from tests.store.conftest import StoreEnv
from tests.store.test_consolidate import _export
from tests.support import TableEmbedder


async def _send(store: Any, cmd: Command) -> Any:
    reply = store.client.execute_command(*cmd.args)
    return await reply if hasattr(reply, "__await__") else reply


async def test_a_late_unregistration_spares_a_memory_stored_again(env: StoreEnv) -> None:
    """A forget deletes a memory; before its bookkeeping runs, an import stores the
    memory again under its id. The forget's late bookkeeping must leave the new
    memory's registrations: stored, it stays listed, and forget_by_scope finds it."""
    store = env.make()
    raw = getattr(store, "wrapped", store)
    scope = Scope(namespace="n", agent_id="a")
    mid = await store.remember("walrus migration", scope=scope)
    (record,) = await _export(store, scope=Scope(namespace="n"))
    deleted = deleted_from(mid, await _send(raw, delete_command(raw._ctx, mid)))
    assert deleted is not None
    assert await store.import_records([record]) == [mid]
    for cmd in bookkeeping(raw._ctx, [deleted]):
        await _send(raw, cmd)
    assert [i.id for i in (await store.list(scope=scope)).items] == [mid]
    assert await store.forget_by_scope(Scope(namespace="n")) == 1
    assert await store.get(mid) is None


async def test_a_late_unregistration_clears_the_old_scope_of_a_memory_stored_elsewhere(
    env: StoreEnv,
) -> None:
    """A forget deletes a memory of namespace a; before its bookkeeping runs, a write
    stores the id again in namespace b. The late bookkeeping skipped every set because
    the id existed again, so namespace a kept listing (and listed) a memory of b. It
    must take the id out of a's sets and leave b's."""
    store = env.make()
    raw = getattr(store, "wrapped", store)
    mid = await store.remember("walrus migration", scope=Scope(namespace="a", agent_id="x"))
    deleted = deleted_from(mid, await _send(raw, delete_command(raw._ctx, mid)))
    assert deleted is not None
    moved = MemoryInput("penguin colony", id=mid, scope=Scope(namespace="b", agent_id="x"))
    assert await store.remember_many([moved]) == [mid]
    for cmd in bookkeeping(raw._ctx, [deleted]):
        await _send(raw, cmd)
    assert (await store.list(scope=Scope(namespace="a"))).items == ()
    assert (await store.list(scope=Scope(namespace="a", agent_id="x"))).items == ()
    assert [i.id for i in (await store.list(scope=Scope(namespace="b"))).items] == [mid]
    assert (await store.stats()).items == 1
    assert await store.forget_by_scope(Scope(namespace="a")) == 0
    assert await store.get(mid) is not None


async def test_forget_by_scope_leaves_listed_a_memory_stored_again_meanwhile(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """forget_by_scope of an agent deletes its memories, then unlists them from the
    agent's index; an import of one of them in between stays listed there."""
    store = env.make()
    raw = getattr(store, "wrapped", store)
    scope = Scope(namespace="n", agent_id="a")
    mid = await store.remember("walrus migration", scope=scope)
    (record,) = await _export(store, scope=Scope(namespace="n"))
    other = _blocking_store(env, raw.name)
    deleting = forget_module.delete_memories
    imported: list[str] = []

    def import_after_the_deletion(ctx: Any, ids: Any) -> Any:
        deleted = yield from deleting(ctx, ids)
        if ctx is raw._ctx and not imported:  # the other writer's own calls pass through
            imported.extend(
                (yield from call(lambda: other.import_records([record]), what="import"))
            )
        return deleted

    monkeypatch.setattr(forget_module, "delete_memories", import_after_the_deletion)
    try:
        assert await store.forget_by_scope(scope) == 1
        monkeypatch.undo()
        assert [i.id for i in (await store.list(scope=scope)).items] == [mid]
        assert await store.forget_by_scope(scope) == 1
    finally:
        other.client.close()


def _blocking_store(env: StoreEnv, name: str) -> SyncMemoryStore:
    if env.keyspace is not None:
        client: Any = InProcessClient(env.keyspace)
    else:
        import valkey

        client = valkey.Valkey.from_url(env.server.url)
    return SyncMemoryStore(client, name, TableEmbedder())


async def test_a_forget_between_a_batch_write_and_its_term_statistics_takes_them_out(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """remember_many adds its texts to the term statistics once for the batch. Sent
    after the writes, a forget from another client landing after the first memory's
    write took that memory's terms out before the batch added them: they stayed counted
    for a memory that is gone. The statistics must hold exactly the memories stored."""
    from agent_memory.schema import scripts
    from agent_memory.store.ops import write as write_module
    from tests.store.test_hybrid import _expected, _stats

    store = env.make()
    raw = getattr(store, "wrapped", store)
    other = _blocking_store(env, raw.name)
    prefix = raw._ctx.keys.memory("")
    writing = write_module.execute_writes
    forgotten: list[str] = []

    def record_key(cmd: Command) -> str | None:
        if cmd.name == "HSET" or (
            cmd.name == "EVAL" and cmd.args[1] in (scripts.WRITE_MEMORY, scripts.WRITE_WITH_TTL)
        ):
            key = str(cmd.args[1] if cmd.name == "HSET" else cmd.args[3])
            return key if key.startswith(prefix) else None
        return None

    def forget_after_the_first_write(ctx: Any, commands: Any) -> Any:
        first = next((i for i, c in enumerate(commands) if record_key(c)), None)
        if ctx is not raw._ctx or first is None or forgotten:
            return (yield from writing(ctx, commands))
        replies = yield from writing(ctx, commands[: first + 1])
        memory_id = str(record_key(commands[first]))[len(prefix) :]
        assert (yield from call(lambda: other.forget(memory_id), what="forget"))
        forgotten.append(memory_id)
        return [*replies, *(yield from writing(ctx, commands[first + 1 :]))]

    monkeypatch.setattr(write_module, "execute_writes", forget_after_the_first_write)
    texts = ["walrus migration north", "penguin colony south"]
    try:
        ids = await store.remember_many([MemoryInput(content=t) for t in texts])
        monkeypatch.undo()
        assert len(forgotten) == 1
        kept = [t for memory_id, t in zip(ids, texts, strict=True) if memory_id != forgotten[0]]
        assert await _stats(store) == _expected(kept)
    finally:
        other.client.close()


async def test_a_judged_forget_keeps_a_memory_changed_after_the_judgement(env: StoreEnv) -> None:
    """``_forget_judged`` (an adapter's delete filtered in Python): another client
    changes one chosen memory while ``choose`` runs, after the read it judges. That
    memory is kept and not counted; the unchanged one goes. A bad ``choose`` deletes
    nothing and is named."""
    name = f"t{uuid.uuid4().hex[:12]}"
    store, other = env.make(name=name), env.make(name=name)
    scope = Scope(namespace="j")
    stale = [await store.remember(f"stale {i}", scope=scope, tags=["stale"]) for i in range(2)]
    for bad in (lambda items: "x", lambda items: ["not-given"], None):
        with pytest.raises(InvalidInputError) as refused:
            await store._forget_judged(stale, bad)
        assert refused.value.field == "choose"
    seen: list[str] = []

    def sync_choose(items: list[MemoryItem]) -> list[str]:
        seen.extend(i.id for i in items)
        other.wrapped.update(stale[0], tags=["revived"])
        return [i.id for i in items if "stale" in i.tags]

    async def async_choose(items: list[MemoryItem]) -> list[str]:
        seen.extend(i.id for i in items)
        await other.update(stale[0], tags=["revived"])
        return [i.id for i in items if "stale" in i.tags]

    choose = sync_choose if env.cfg.mode == "sync" else async_choose
    assert await store._forget_judged([*stale, "gone"], choose) == 1
    assert sorted(seen) == sorted(stale)
    assert await store.get(stale[1]) is None
    kept = await store.get(stale[0])
    assert kept is not None and kept.tags == ("revived",)
    assert (await store.stats()).counters.get("forgets") == 1


async def test_two_writes_under_one_chosen_id_leave_one_memory_counted_once(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers store a memory under the same caller-chosen id, in two namespaces.
    The second one's write lands after the first cleared the id but before its own
    write reached the server: the first write replaced the second's memory without
    unregistering it, so both namespaces listed the id (a memory of namespace b was
    listed, counted and searched in namespace a) and both texts stayed in the term
    statistics. One memory must remain, listed and counted in its own namespace only."""
    from agent_memory.schema import scripts
    from agent_memory.store.ops import write as write_module
    from tests.store.test_hybrid import _expected, _stats

    store = env.make()
    raw = getattr(store, "wrapped", store)
    other = _blocking_store(env, raw.name)
    writing = write_module.execute_writes
    raced: list[str] = []

    def race_before_the_write(ctx: Any, commands: Any) -> Any:
        writes = any(c.name == "EVAL" and c.args[1] == scripts.WRITE_MEMORY for c in commands)
        if ctx is raw._ctx and writes and not raced:
            raced.extend(
                (yield from call(
                    lambda: other.remember_many(
                        [MemoryInput("penguin colony south", id="m1", scope=Scope(namespace="b"))]
                    ),
                    what="the other write",
                ))
            )  # fmt: skip
        return (yield from writing(ctx, commands))

    monkeypatch.setattr(write_module, "execute_writes", race_before_the_write)
    try:
        await store.remember_many(
            [MemoryInput("walrus migration north", id="m1", scope=Scope(namespace="a"))]
        )
        monkeypatch.undo()
        assert raced == ["m1"]
        item = await store.get("m1")
        assert item is not None and item.content == "walrus migration north"
        assert [i.id for i in (await store.list(scope=Scope(namespace="a"))).items] == ["m1"]
        assert (await store.list(scope=Scope(namespace="b"))).items == ()
        assert (await store.stats()).items == 1
        assert await _stats(store, "a") == _expected(["walrus migration north"])
        assert await _stats(store, "b") == {}
        assert await store.forget_by_scope(Scope(namespace="b")) == 0
        assert await store.get("m1") is not None
    finally:
        other.client.close()


async def test_a_write_under_a_chosen_id_that_never_lands_keeps_the_memory_it_replaces(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write under an existing caller-chosen id deleted the stored memory in a round
    trip of its own, then wrote the new one: the connection lost before the write left
    no memory at all (and a reader in between found none). The replacement is one step:
    a write that never reaches the server leaves the old memory, listed and counted."""
    from agent_memory.errors import ServerUnavailableError
    from agent_memory.schema import scripts
    from agent_memory.store.ops import write as write_module
    from tests.store.test_hybrid import _expected, _stats

    store = env.make()
    raw = getattr(store, "wrapped", store)
    scope = Scope(namespace="a")
    await store.remember_many([MemoryInput("walrus migration north", id="m1", scope=scope)])
    writing = write_module.execute_writes

    def lost_before_the_write(ctx: Any, commands: Any) -> Any:
        if ctx is raw._ctx and any(
            c.name == "EVAL" and c.args[1] == scripts.WRITE_MEMORY for c in commands
        ):
            raise ServerUnavailableError("connection lost")
        return (yield from writing(ctx, commands))

    monkeypatch.setattr(write_module, "execute_writes", lost_before_the_write)
    with pytest.raises(ServerUnavailableError):
        await store.remember_many([MemoryInput("penguin colony", id="m1", scope=scope)])
    monkeypatch.undo()
    item = await store.get("m1")
    assert item is not None and item.content == "walrus migration north"
    assert [i.id for i in (await store.list(scope=scope)).items] == ["m1"]
    assert (await store.stats()).items == 1
    assert await _stats(store, "a") == _expected(["walrus migration north"])


async def _score(store: Any, key: str, member: str) -> float | None:
    raw = getattr(store, "wrapped", store)
    held = await _send(raw, Command(("ZSCORE", key, member)))
    return float(held) if held is not None else None


async def _listings_agree_with_the_record(
    store: Any, mid: str, home: Scope, away: Scope, *, items: int = 1
) -> None:
    """The memory ``mid`` lives in ``home``: its listings there score it as its record
    expires, and ``away``'s (where it lived before) no longer list it."""
    from agent_memory.schema.encoding import encode_value, namespace_token

    raw = getattr(store, "wrapped", store)
    keys = raw._ctx.keys
    expires = await _send(raw, Command(("HGET", keys.memory(mid), "expires_at")))
    wanted = float(expires) if expires is not None else float("inf")
    for scope, listed in ((home, wanted), (away, None)):
        ns = namespace_token(scope.namespace)
        for key in keys.expiry_sets(ns, encode_value(str(scope.agent_id)), None):
            assert await _score(store, key, mid) == listed, key
    assert (await store.stats()).items == items


def _race_before(
    module: Any, monkeypatch: pytest.MonkeyPatch, store: Any, other_write: Any
) -> list[Any]:
    """Run ``other_write`` (a blocking call on another client) once, just before the
    first batch ``module`` sends through ``execute_writes`` for ``store``."""
    raw = getattr(store, "wrapped", store)
    writing = module.execute_writes
    raced: list[Any] = []

    def race_before_the_write(ctx: Any, commands: Any) -> Any:
        if ctx is raw._ctx and not raced:
            raced.append((yield from call(other_write, what="the other write")))
        return (yield from writing(ctx, commands))

    monkeypatch.setattr(module, "execute_writes", race_before_the_write)
    return raced


@pytest.mark.parametrize("operation", ["expire_many", "update"])
async def test_an_expiry_racing_a_write_under_its_id_leaves_listings_scored_as_the_record(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """``expire_many`` / ``update(ttl=)`` read where a memory is listed, then set its
    record's expiry and re-scored those listings. A write under its id moving it to
    another namespace in between kept its new listings scored as persistent (+inf)
    while its record got the expiry: the listings must score the memory as its record
    expires, and the old namespace must not list it."""
    from agent_memory.store.ops import expiry as expiry_module
    from agent_memory.store.ops import update as update_module

    store = env.make()
    raw = getattr(store, "wrapped", store)
    before, after = Scope(namespace="a", agent_id="x"), Scope(namespace="b", agent_id="y")
    await store.remember_many([MemoryInput("walrus migration", id="m1", scope=before)])
    other = _blocking_store(env, raw.name)
    module = expiry_module if operation == "expire_many" else update_module
    raced = _race_before(
        module, monkeypatch, store,
        lambda: other.remember_many([MemoryInput("penguin colony", id="m1", scope=after)]),
    )  # fmt: skip
    try:
        if operation == "expire_many":
            assert await store.expire_many({"m1": 600.0}) == ["m1"]
        else:
            assert (await store.update("m1", ttl=600.0)).expires_at is not None
        monkeypatch.undo()
        assert raced == [["m1"]]
        await _listings_agree_with_the_record(store, "m1", after, before)
    finally:
        other.client.close()


async def test_an_update_of_the_text_racing_the_same_text_elsewhere_trades_the_right_terms(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``update(content=)`` checked only that the stored text was the one it read, then
    traded terms in the namespace it read. A write of that same text under the id in
    another namespace in between passed the check: the old namespace got the new
    text's terms and the new one kept the old text's. Each namespace's statistics must
    hold exactly its memories' texts."""
    from agent_memory.store.ops import update as update_module
    from tests.store.test_hybrid import _expected, _stats

    store = env.make()
    raw = getattr(store, "wrapped", store)
    text = "walrus migration north"
    await store.remember_many([MemoryInput(text, id="m1", scope=Scope(namespace="a"))])
    other = _blocking_store(env, raw.name)
    moved = [MemoryInput(text, id="m1", scope=Scope(namespace="b"))]
    raced = _race_before(update_module, monkeypatch, store, lambda: other.remember_many(moved))
    try:
        item = await store.update("m1", content="penguin colony south")
        monkeypatch.undo()
        assert raced == [["m1"]]
        assert item.content == "penguin colony south"
        assert await _stats(store, "a") == {}
        assert await _stats(store, "b") == _expected(["penguin colony south"])
    finally:
        other.client.close()


async def test_a_dedupe_refresh_racing_a_write_under_the_duplicates_id_leaves_the_new_memory(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deduplicating write found a stored duplicate, then refreshed it by its id. A
    write under that id in between (another text, another namespace) was refreshed in
    its place: its access count, importance and lifetime changed for a write it never
    matched, and the deduplicating write answered its id. The refresh must apply only to
    the memory found: refused, the duplicate is gone and the write stores a fresh one."""
    from agent_memory.store.ops import dedupe as dedupe_module

    store = env.make()
    raw = getattr(store, "wrapped", store)
    before, after = Scope(namespace="a", agent_id="x"), Scope(namespace="b", agent_id="y")
    await store.remember_many(
        [MemoryInput("walrus migration", id="m1", scope=before, ttl=60.0, importance=0.1)]
    )
    other = _blocking_store(env, raw.name)
    moved = [MemoryInput("penguin colony", id="m1", scope=after, ttl=60.0, importance=0.1)]
    raced = _race_before(dedupe_module, monkeypatch, store, lambda: other.remember_many(moved))
    try:
        again = MemoryInput("walrus migration", scope=before, ttl=600.0, importance=0.9)
        (written,) = await store.remember_many([again], dedupe=True)
        monkeypatch.undo()
        assert raced == [["m1"]]
        assert written != "m1"
        moved_item = await store.get("m1")
        assert moved_item is not None and moved_item.content == "penguin colony"
        assert moved_item.access_count == 0
        assert moved_item.importance == pytest.approx(0.1)
        fresh = await store.get(written)
        assert fresh is not None and fresh.content == "walrus migration"
        await _listings_agree_with_the_record(store, "m1", after, before, items=2)
        listed = await store.list(scope=before)
        assert [i.id for i in listed.items] == [written]
    finally:
        other.client.close()


async def test_labels_of_a_write_land_only_on_the_memory_they_were_computed_for(
    env: StoreEnv,
) -> None:
    """The labeler runs after a memory is committed, and its labels are written by id.
    A write under that id in between (another text, another namespace) got the labels
    computed for the old text. They must land only on the memory written."""
    raw_holder: list[Any] = []
    others: list[SyncMemoryStore] = []

    def labeler(text: str) -> dict[str, list[str]]:
        if text == "walrus migration" and not others:
            others.append(_blocking_store(env, raw_holder[0].name))
            moved = MemoryInput("penguin colony", id="m1", scope=Scope(namespace="b"))
            assert others[0].remember_many([moved]) == ["m1"]
        return {"topic": ["walrus"]} if "walrus" in text else {}

    store = env.make(labeler=labeler)
    raw_holder.append(getattr(store, "wrapped", store))
    try:
        mine = MemoryInput("walrus migration", id="m1", scope=Scope(namespace="a"))
        assert await store.remember_many([mine]) == ["m1"]
        assert len(others) == 1
        item = await store.get("m1")
        assert item is not None and item.content == "penguin colony"
        assert dict(item.labels) == {}
    finally:
        for other in others:
            other.client.close()
