"""The portable mirror refreshed after writes: it reuses the rows it holds (appending
new memories, dropping forgotten and expired ones) and ends up exactly where a mirror
loaded from scratch would; filters on tags, labels and sources are array operations;
a damaged record is reported once."""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import valkey
import valkey.asyncio

from agent_memory import MemoryStore, Scope, SyncMemoryStore
from agent_memory.backends.portable import PortableBackend
from agent_memory.backends.snapshot import Entry, Snapshot
from agent_memory.embedders.hashing import HashingEmbedder
from agent_memory.schema import layout as L
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.lexical import LEX_DIM
from tests.conftest import ServerInfo
from tests.support import AsyncView

DIM = 16


class _Clock:
    """A clock tests move forward: memories expire without waiting. It starts at the
    real time, so the server-side expiries it sets lie in the future."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@dataclass
class _Env:
    mode: str
    url: str
    name: str
    clock: _Clock
    clients: list[Any]

    def store(self) -> Any:
        """A store on the same name, with a mirror of its own."""
        embed = HashingEmbedder(DIM)
        if self.mode == "async":
            client: Any = valkey.asyncio.Valkey.from_url(self.url)
            self.clients.append(client)
            return MemoryStore(client, self.name, embed, default_threshold=1.9, clock=self.clock)
        client = valkey.Valkey.from_url(self.url)
        self.clients.append(client)
        store = SyncMemoryStore(client, self.name, embed, default_threshold=1.9, clock=self.clock)
        return AsyncView(store)


@pytest.fixture(params=["async", "sync"])
async def env(request: pytest.FixtureRequest, plain_server: ServerInfo) -> AsyncIterator[_Env]:
    environment = _Env(
        request.param, plain_server.url, f"refresh{uuid.uuid4().hex[:8]}", _Clock(), []
    )
    yield environment
    cleaner = valkey.asyncio.Valkey.from_url(plain_server.url)
    keys = [k async for k in cleaner.scan_iter(match=f"{environment.name}:*", count=1000)]
    if keys:
        await cleaner.delete(*keys)
    await cleaner.aclose()
    for client in environment.clients:
        if environment.mode == "async":
            await client.aclose()
        else:
            client.close()


def _ctx(store: Any) -> Any:
    return getattr(store, "wrapped", store)._ctx


def _mirror(store: Any) -> Any:
    backend = _ctx(store).backend
    assert isinstance(backend, PortableBackend)
    [mirror] = backend._mirrors.values()
    return mirror


def _snapshot(store: Any) -> Snapshot:
    snapshot = _mirror(store).snapshot
    assert snapshot is not None
    return snapshot


def _canonical(snap: Snapshot) -> dict[str, Any]:
    """What a search reads of a snapshot, in registry order, whatever its storage order."""
    rows = snap.order
    return {
        "ids": [snap.ids[r] for r in rows],
        "expires": snap.expires[rows].tolist(),
        "vectors": snap.matrix[rows].tobytes(),
        "lex": np.ascontiguousarray(snap.lex_by_dim[:, rows]).tobytes(),
    }


def _in_order(snap: Snapshot, flt: MemoryFilter, now_ms: int) -> list[str]:
    """The ids a filter keeps, in registry order (as a search ranks ties)."""
    return [snap.ids[r] for r in snap.selected(snap.mask(flt, now_ms))]


async def _stored_tokens(env: _Env, ids: list[str]) -> dict[str, dict[str, str | None]]:
    reader = valkey.asyncio.Valkey.from_url(env.url, decode_responses=True)
    try:
        tokens = {}
        for memory_id in ids:
            values = await reader.hmget(f"{env.name}:mem:{memory_id}", list(L.FILTER_FIELDS))
            tokens[memory_id] = dict(zip(L.FILTER_FIELDS, values, strict=True))
        return tokens
    finally:
        await reader.aclose()


def _filters(tokens: dict[str, dict[str, str | None]]) -> list[MemoryFilter]:
    """Filters on the tokens the memories hold (and one nobody holds)."""

    def seen(name: str) -> list[str]:
        found = {
            token
            for fields in tokens.values()
            for token in (fields.get(name) or "").split(L.TAG_SEPARATOR)
            if token
        }
        return [*sorted(found)[:3], "nobody"]

    tags, labels, sources = seen(L.F_TAGS), seen(L.F_LABELS), seen(L.F_SOURCE)
    agents, threads = seen(L.F_AGENT), seen(L.F_THREAD)
    ns = "_d"
    return [
        MemoryFilter(namespace=ns),
        *(MemoryFilter(namespace=ns, tags=(t,)) for t in tags),
        MemoryFilter(namespace=ns, tags=tuple(tags[:2])),
        MemoryFilter(namespace=ns, label_groups=(tuple(labels[:2]),)),
        MemoryFilter(namespace=ns, label_groups=((labels[0],), (labels[-2],))),
        MemoryFilter(namespace=ns, sources=tuple(sources[:2])),
        MemoryFilter(namespace=ns, sources=()),
        MemoryFilter(namespace=ns, exclude_sources=(sources[0],)),
        MemoryFilter(namespace=ns, agent=agents[0], tags=(tags[0],)),
        MemoryFilter(namespace=ns, thread=threads[0], exclude_sources=(sources[1],)),
    ]


def _item(rng: random.Random, i: int) -> dict[str, Any]:
    item: dict[str, Any] = {
        "content": f"note {i} about {rng.choice(['cats', 'dogs', 'tea', 'trains'])}",
        "tags": rng.sample(["red", "green", "blue", "even"], rng.randint(0, 3)),
        "scope": Scope(agent_id=rng.choice(["a1", "a2", None]), thread_id=rng.choice(["t1", None])),
    }
    if rng.random() < 0.5:
        item["source"] = rng.choice(["chat", "docs", "web"])
    if rng.random() < 0.5:
        item["labels"] = {"team": rng.sample(["core", "infra", "ml"], rng.randint(1, 2))}
    if rng.random() < 0.3:
        item["ttl"] = rng.choice([600, 7200])
    return item


async def _step(rng: random.Random, env: _Env, writer: Any, live: list[str], i: int) -> None:
    """A random mix of writes: adds, forgets, new expiries and the clock moving on."""
    added = await writer.remember_many([_item(rng, i * 100 + n) for n in range(rng.randint(0, 9))])
    live += added
    if live and rng.random() < 0.6:
        gone = rng.sample(live, min(len(live), rng.randint(1, 5)))
        await writer.forget_many(gone)
        live[:] = [m for m in live if m not in gone]
    if live and rng.random() < 0.4:
        await writer.expire_many({m: rng.choice([60, 3600]) for m in rng.sample(live, 2)})
    if rng.random() < 0.3:
        env.clock.now += 1800  # memories of a shorter ttl expire


async def test_an_incremental_refresh_equals_a_mirror_loaded_from_scratch(env: _Env) -> None:
    """Property-style: after random adds, forgets and expiries, the mirror refreshed
    step by step holds what a new mirror reads, filters as ``MemoryFilter.matches``
    does, and kept reusing its rows (appends) between repacks."""
    rng = random.Random(7)
    writer, reader = env.store(), env.store()
    live = await writer.remember_many([_item(rng, n) for n in range(40)])
    await reader.recall("cats", reinforce=False)
    appended = repacked = 0
    for i in range(1, 16):
        before = _snapshot(reader)
        await _step(rng, env, writer, live, i)
        await reader.recall("cats", reinforce=False)
        after = _snapshot(reader)
        if after.rows is before.rows:
            appended += 1
            # Proportional work: the rows held stay where they were, not copied.
            assert np.shares_memory(after.matrix, before.matrix)
        else:
            repacked += 1
        fresh = env.store()
        await fresh.recall("cats", reinforce=False)
        assert _canonical(after) == _canonical(_snapshot(fresh))
        now = _ctx(reader).now_ms()
        tokens = await _stored_tokens(env, list(_snapshot(fresh).row_of))
        assert set(_mirror(reader).entries) == set(tokens)  # nothing forgotten kept
        for flt in _filters(tokens):
            expected = [m for m in _in_order(_snapshot(fresh), flt, now) if flt.matches(tokens[m])]
            assert _in_order(after, flt, now) == expected, flt
            assert _in_order(_snapshot(fresh), flt, now) == expected, flt
    assert appended >= 3 and repacked >= 1


async def test_the_mirror_drops_forgotten_and_expired_memories(env: _Env) -> None:
    writer, reader = env.store(), env.store()
    for _ in range(3):
        ids = await writer.remember_many([{"content": f"note {n}"} for n in range(20)])
        await reader.recall("note", reinforce=False)
        await writer.forget_many(ids[:15])
        await reader.recall("note", reinforce=False)
        assert set(_mirror(reader).entries) == set(ids[15:])
        env.clock.now += 10  # the 5 left expire with the next step's ttl
        await writer.expire_many(dict.fromkeys(ids[15:], 5))
        env.clock.now += 10
        assert len(_snapshot(reader).ids) <= 32  # the storage was repacked, not grown
    await reader.recall("note", reinforce=False)
    assert _ctx(reader).backend._mirrors == {}  # nothing listed: no mirror kept


async def test_tag_label_and_source_filters_do_not_test_rows_one_by_one(
    env: _Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = env.store()
    even = await writer.remember("an even note", tags=["even"])
    odd = await writer.remember("an odd note", tags=["odd"], labels={"team": ["core"]})
    await writer.recall("note", reinforce=False)

    def per_row(self: MemoryFilter, fields: Any) -> bool:
        raise AssertionError("a filter tested row by row")

    monkeypatch.setattr(MemoryFilter, "matches", per_row)
    hits = await writer.recall("note", tags=["even"], reinforce=False)
    assert [h.item.id for h in hits] == [even]
    hits = await writer.recall("note", labels={"team": ["core"]}, reinforce=False)
    assert [h.item.id for h in hits] == [odd]


async def test_a_record_of_the_wrong_width_is_reported_once(
    env: _Env, caplog: pytest.LogCaptureFixture
) -> None:
    writer, reader = env.store(), env.store()
    bad = await writer.remember("a damaged note")
    raw = valkey.asyncio.Valkey.from_url(env.url)
    await raw.hset(f"{env.name}:mem:{bad}", "vector", b"\x00" * 12)
    await raw.aclose()
    with caplog.at_level(logging.WARNING):
        for n in range(4):
            await writer.remember(f"good note {n}")
            hits = await reader.recall("good note", reinforce=False)
            assert bad not in {h.item.id for h in hits}
    assert _ctx(reader).counters.get("corrupt_records") == 1
    assert sum(bad in r.getMessage() for r in caplog.records) == 1


def _entries(ids: list[str], seed: int) -> dict[str, Entry]:
    rng = np.random.default_rng(seed)
    return {
        m: Entry(
            rng.normal(size=DIM).astype(np.float32),
            {L.F_TAGS: f"t{n % 3}", L.F_AGENT: f"a{n % 2}"},
            rng.normal(size=LEX_DIM).astype(np.float32),
        )
        for n, m in enumerate(ids)
    }


def _refreshed(base: Snapshot, ids: list[str], entries: dict[str, Entry]) -> Snapshot:
    """``base`` refreshed to the listing ``ids`` (all without expiry)."""
    op = base.updated(ids, np.full(len(ids), np.inf), base.locate(ids), entries)
    try:
        while True:
            op.send(None)
    except StopIteration as stop:
        snapshot: Snapshot = stop.value
        return snapshot


def test_two_refreshes_of_one_snapshot_leave_each_other_intact() -> None:
    """A refresh racing another from the same snapshot (one past the wait deadline, or
    on another thread) finds its rows taken and repacks instead of writing over them."""
    held = [f"m{n}" for n in range(40)]
    entries = _entries([*held, "x", "y"], 1)
    base = _refreshed(Snapshot.empty(DIM), held, entries)
    first = _refreshed(base, [*held, "x"], {"x": entries["x"]})
    second = _refreshed(base, [*held, "y"], {"y": entries["y"]})
    assert first.rows is base.rows and second.rows is not base.rows
    for snap, extra in ((first, "x"), (second, "y")):
        expected = Snapshot.build(
            (*held, extra), [np.inf] * 41, {m: entries[m] for m in (*held, extra)}, DIM
        )
        assert _canonical(snap) == _canonical(expected)
        flt = MemoryFilter(namespace="_d", tags=("t1",), agent="a0")
        assert _in_order(snap, flt, 0) == _in_order(expected, flt, 0)


def test_a_refresh_racing_another_keeps_postings_of_its_own_rows_only() -> None:
    """Two threads refresh one mirror from the same snapshot: A's listing has no new id,
    B's has one tagged "t9". B appended its row right after A's (empty) append, before A
    built its snapshot, whose postings were taken then, unlocked: they named B's row,
    which A's snapshot does not have, and a tag filter raised IndexError. Now the
    postings are taken with the append, under the lock."""
    held = [f"m{n}" for n in range(8)]
    entries = _entries(held, 3)
    base = _refreshed(Snapshot.empty(DIM), held, entries)
    late = Entry(entries["m0"].vector, {L.F_TAGS: "t9"}, entries["m0"].lex)
    append = base.rows.append
    raced: list[Snapshot] = []

    def append_then_let_b_in(*args: Any) -> Any:
        result = append(*args)
        if not raced:  # A's append done: B's whole refresh runs before A goes on
            base.rows.append = append  # type: ignore[method-assign]
            raced.append(_refreshed(base, [*held, "late"], {"late": late}))
        return result

    base.rows.append = append_then_let_b_in  # type: ignore[method-assign]
    first = _refreshed(base, held[1:], {})  # A: m0 forgotten, nothing new
    (second,) = raced
    assert second.rows is first.rows and second.ids[-1] == "late"
    assert _in_order(first, MemoryFilter(namespace="_d", tags=("t9",)), 0) == []
    assert _in_order(first, MemoryFilter(namespace="_d", tags=("t1",)), 0) == ["m1", "m4", "m7"]
    assert _in_order(second, MemoryFilter(namespace="_d", tags=("t9",)), 0) == ["late"]


def test_code_tables_hold_only_the_tokens_of_rows_in_storage() -> None:
    """600 memories, each with its own thread, agent, tag and label, written and
    forgotten one after another beside one that stays: the repacks recode the live rows,
    so the code tables stay bounded, and filters still find what they held."""
    keep = Entry(
        np.ones(DIM, np.float32),
        {L.F_AGENT: "kept", L.F_TAGS: "keep"},
        np.zeros(LEX_DIM, np.float32),
    )
    snap = _refreshed(Snapshot.empty(DIM), ["anchor"], {"anchor": keep})
    for i in range(600):
        entry = Entry(
            np.ones(DIM, np.float32),
            {L.F_THREAD: f"t{i}", L.F_AGENT: f"a{i}", L.F_TAGS: f"tag{i}", L.F_LABELS: f"k:v{i}"},
            np.zeros(LEX_DIM, np.float32),
        )
        snap = _refreshed(snap, ["anchor", f"m{i}"], {f"m{i}": entry})
        assert _in_order(
            snap, MemoryFilter("", thread=f"t{i}", label_groups=((f"k:v{i}",),)), 0
        ) == [f"m{i}"]
        snap = _refreshed(snap, ["anchor"], {})
    assert max(len(table) for table in snap.codes.values()) < 20
    assert _in_order(snap, MemoryFilter(namespace="", agent="kept", tags=("keep",)), 0) == [
        "anchor"
    ]
