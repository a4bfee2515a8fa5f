"""The store's namespace set: ``stats`` and ``prune`` find the registries without a SCAN
of the keyspace, a store written before the set existed is scanned once to fill it, and a
damaged set costs a scan, never a count (every server/client)."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_memory import Scope
from tests.store.conftest import StoreEnv
from tests.store.test_lifecycle import _raw


def _inner(store: Any) -> Any:
    return getattr(store, "wrapped", store)


def _members(reply: Any) -> set[str]:
    return {m.decode() if isinstance(m, bytes) else str(m) for m in reply or ()}


async def _scans(env: StoreEnv, store: Any) -> int | None:
    """SCAN calls the server has answered so far (None on the in-process keyspace)."""
    if env.keyspace is not None:
        return None
    info = await _raw(store, "INFO", "commandstats")
    if isinstance(info, (bytes, str)):
        text = info.decode() if isinstance(info, bytes) else info
        for line in text.splitlines():
            if line.startswith("cmdstat_scan:"):
                return int(line.split("calls=")[1].split(",")[0])
        return 0
    entry = info.get("cmdstat_scan") or {}
    return int(entry.get("calls", 0))


async def _fill(store: Any) -> None:
    await store.remember("in the default namespace")
    for ns in ("alpha", "beta"):
        scope = Scope(namespace=ns)
        await store.remember_many([{"content": f"{ns} {n}", "scope": scope} for n in ("a", "b")])


async def test_every_write_lists_its_namespace_and_stats_never_scans(env: StoreEnv) -> None:
    store = env.make()
    await _fill(store)
    keys = _inner(store)._ctx.keys
    assert _members(await _raw(store, "SMEMBERS", keys.namespaces)) == {"_d", "alpha", "beta"}
    before = await _scans(env, store)
    assert (await store.stats()).items == 5
    result = await store.prune()
    assert result.deleted == ()
    assert await _scans(env, store) == before  # None == None in process: nothing to count


async def test_a_store_written_before_the_set_is_scanned_once_to_fill_it(env: StoreEnv) -> None:
    store = env.make()
    await _fill(store)
    keys = _inner(store)._ctx.keys
    await _raw(store, "DEL", keys.namespaces)
    await _raw(store, "HDEL", keys.meta, "namespaces")
    reopened = env.make(name=_inner(store).name)
    assert (await reopened.stats()).items == 5  # found by a scan, which fills the set
    assert _members(await _raw(store, "SMEMBERS", keys.namespaces)) == {"_d", "alpha", "beta"}
    assert (await _raw(store, "HGET", keys.meta, "namespaces")) in (b"v1", "v1")
    before = await _scans(env, reopened)
    assert (await reopened.stats()).items == 5
    assert await _scans(env, reopened) == before


async def test_a_damaged_set_is_reported_and_the_registries_found_by_a_scan(
    env: StoreEnv,
) -> None:
    store = env.make()
    await _fill(store)
    inner = _inner(store)
    keys = inner._ctx.keys
    await _raw(store, "DEL", keys.namespaces)
    await _raw(store, "SET", keys.namespaces, "not a set")
    before = inner._ctx.counters.get("corrupt_records", 0)
    assert (await store.stats()).items == 5
    assert inner._ctx.counters.get("corrupt_records", 0) > before
    # A write beside the damage stores and registers its memory, and counts the failure.
    failures = inner._ctx.counters.get("bookkeeping_failures", 0)
    memory_id = await store.remember("gamma one", scope=Scope(namespace="gamma"))
    assert (await store.get(memory_id)).content == "gamma one"
    assert inner._ctx.counters.get("bookkeeping_failures", 0) > failures
    assert (await store.stats()).items == 6
    assert (await store.prune()).deleted == ()  # the token removal fails, reported
    assert (await _raw(store, "GET", keys.namespaces)) in (b"not a set", "not a set")


async def test_a_member_that_is_not_a_token_is_skipped_and_counted(env: StoreEnv) -> None:
    store = env.make()
    await _fill(store)
    inner = _inner(store)
    await _raw(store, "SADD", inner._ctx.keys.namespaces, b"\xff\xfe")
    before = inner._ctx.counters.get("corrupt_records", 0)
    assert (await store.stats()).items == 5
    if env.keyspace is None:  # the in-process keyspace keeps members as text
        assert inner._ctx.counters.get("corrupt_records", 0) > before


async def test_prune_drops_the_tokens_of_emptied_namespaces(env: StoreEnv) -> None:
    store = env.make()
    await _fill(store)
    keys = _inner(store)._ctx.keys
    assert await store.forget_by_scope(Scope(namespace="beta")) == 2
    await store.prune()
    assert _members(await _raw(store, "SMEMBERS", keys.namespaces)) == {"_d", "alpha"}
    # The namespace comes back with its next write.
    await store.remember("beta again", scope=Scope(namespace="beta"))
    assert _members(await _raw(store, "SMEMBERS", keys.namespaces)) == {"_d", "alpha", "beta"}
    assert (await store.stats()).items == 4


async def test_expired_namespaces_are_counted_as_empty(env: StoreEnv) -> None:
    store = env.make()
    await store.remember("short lived", scope=Scope(namespace="brief"), ttl=0.05)
    await store.remember("kept")
    await asyncio.sleep(0.1)
    assert (await store.stats()).items == 1


async def test_a_namespace_an_older_version_wrote_is_found_again(env: StoreEnv) -> None:
    """On the search backend the index's size shows the gap and one scan lists the
    namespace; elsewhere removing the meta field (README) makes the next ``stats`` scan."""
    store = env.make()
    await _fill(store)
    keys = _inner(store)._ctx.keys
    await _raw(store, "SREM", keys.namespaces, "beta")  # as a write of an older version
    assert (await store.stats()).items == 3  # the set is what stats reads
    reopened = env.make(name=_inner(store).name)
    if env.expected_backend == "ft":
        await reopened.ensure_index()  # the index holds 5 documents, the set lists 3: a scan
    else:
        await _raw(store, "HDEL", keys.meta, "namespaces")
        assert (await reopened.stats()).items == 5  # scanned once, the set completed
    assert _members(await _raw(store, "SMEMBERS", keys.namespaces)) == {"_d", "alpha", "beta"}
    assert (await reopened.stats()).items == 5
    assert (await reopened.stats()).foreign == 0
