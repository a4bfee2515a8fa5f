"""Memories the BetterDB library writes into a shared store become ours, both ways readable.

The writer is the real ``betterdb-agent-memory`` package (the Python port of the
TypeScript library, same records) in its own virtual environment, against real servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from typing import Any

import numpy as np
import pytest

from agent_memory import IndexMismatchError, Scope, SyncMemoryStore
from benchmarks.peer import ensure_venv
from tests.conftest import _Servers

pytestmark = pytest.mark.integration

DIM = 16
TEXTS = ("ours", "unscoped peer note", "acme bot note", "thread note", "short lived note",
         "written later", "written by the peer", "dashed note")  # fmt: skip


def _unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


VECTORS = {text: _unit(i + 1) for i, text in enumerate(TEXTS)}

PEER = r"""
import asyncio, json, sys
import valkey.asyncio as valkey
from betterdb_agent_memory import MemoryStore

async def main():
    url, name, vectors, job = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    client = valkey.from_url(url)
    async def embed(text):
        return vectors.get(text) or vectors["ours"]
    store = MemoryStore(client=client, name=name, embed_fn=embed, analytics=False)
    out = {}
    if job == "write":
        await store.ensure_index()  # theirs, unless the store already has one
        for text, options in json.loads(sys.argv[5]):
            out[text] = await store.remember(text, **options)
    else:
        hits = await store.recall_by_vector(vectors[sys.argv[5]], k=10, threshold=2.0,
                                            reinforce=False, **json.loads(sys.argv[6]))
        out = [h.item.content for h in hits]
    print(json.dumps(out))
    await client.aclose()

asyncio.run(main())
"""


def _peer(url: str, name: str, job: str, *args: Any) -> Any:
    python = ensure_venv()
    env = {**os.environ, "BETTERDB_TELEMETRY": "false"}
    argv = [str(python), "-c", PEER, url, name, json.dumps(VECTORS), job, *map(str, args)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _store(url: str, name: str, adopt_interval: float | None = None) -> SyncMemoryStore:
    # adopt_interval=None: adoption only where these tests ask for it
    return SyncMemoryStore.from_url(
        url,
        name=name,
        embed=lambda text: VECTORS.get(text) or _unit(99),
        adopt_interval=adopt_interval,
    )


def _recall(store: SyncMemoryStore, text: str, scope: Scope | None = None) -> list[str]:
    return [h.item.content for h in store.recall(text, k=10, scope=scope, threshold=0.05)]


def test_peer_memories_in_our_store_are_adopted_and_stay_theirs_too(servers: _Servers) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"shared{uuid.uuid4().hex[:8]}"
    with _store(url, name) as store:
        first = store.remember("ours")
        ids = _peer(url, name, "write", json.dumps([
            ["unscoped peer note", {"tags": ["a", "b"], "importance": 0.9}],
            ["acme bot note", {"namespace": "acme", "agent_id": "bot"}],
            ["thread note", {"namespace": "acme", "thread_id": "t1"}],
            ["short lived note", {"ttl": 3600}],
            ["dashed note", {"namespace": "acme-corp"}],
        ]))  # fmt: skip
        before = store.stats()
        assert (before.items, before.foreign) == (1, 5)
        assert _recall(store, "unscoped peer note") == []  # not ours yet: not found

        report = store.adopt_foreign()
        assert (report.adopted, report.skipped, report.index_replaced) == (4, 1, False)
        after = store.stats()
        assert (after.items, after.foreign) == (5, 1)  # the dashed one stays theirs
        again = store.adopt_foreign()
        assert (again.adopted, again.skipped) == (0, 1)
        dashed = json.dumps({"namespace": "acme-corp"})
        assert _peer(url, name, "recall", "dashed note", dashed) == ["dashed note"]

        unscoped = store.get(ids["unscoped peer note"])
        assert unscoped.tags == ("a", "b") and unscoped.importance == pytest.approx(0.9)
        assert unscoped.scope == Scope() and unscoped.durability == "shared"
        assert store.get(ids["short lived note"]).expires_at is not None
        bot = store.get(ids["acme bot note"])
        assert bot.scope == Scope(namespace="acme", agent_id="bot")
        assert _recall(store, "unscoped peer note")[0] == "unscoped peer note"
        acme = Scope(namespace="acme")
        assert _recall(store, "thread note", Scope(namespace="acme", thread_id="t1")) == [
            "thread note"
        ]
        listed = {m.content for m in store.list(scope=acme).items}
        assert listed == {"acme bot note", "thread note"}
        exported = [r["id"] for r in (*store.export(), *store.export(acme))]
        assert set(exported) == set(ids.values()) - {ids["dashed note"]} | {first}

        # Their library still finds what it wrote, by the same scope fields.
        assert _peer(url, name, "recall", "acme bot note", json.dumps({"agent_id": "bot"})) == [
            "acme bot note"
        ]
        assert "unscoped peer note" in _peer(url, name, "recall", "unscoped peer note", "{}")

        assert store.forget_by_scope(acme) == 2
        assert _peer(url, name, "recall", "thread note", json.dumps({"namespace": "acme"})) == []

    # What they write later is adopted by the next process to open the store.
    later = _peer(url, name, "write", json.dumps([["written later", {}]]))
    with _store(url, name) as fresh:
        assert fresh.ensure_index().adopted == 1
        assert fresh.get(later["written later"]).content == "written later"
        assert fresh.stats().foreign == 1


def test_a_store_the_peer_created_is_taken_over_only_when_asked(servers: _Servers) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"theirs{uuid.uuid4().hex[:8]}"
    ids = _peer(url, name, "write", json.dumps([["written by the peer", {"tags": ["x"]}]]))
    with _store(url, name) as store:
        with pytest.raises(IndexMismatchError, match="replace_index=True"):
            store.adopt_foreign()
        with pytest.raises(IndexMismatchError):
            store.recall("written by the peer")
        report = store.adopt_foreign(replace_index=True)
        assert (report.adopted, report.skipped, report.index_replaced) == (1, 0, True)
        assert store.get(ids["written by the peer"]).tags == ("x",)
        assert _recall(store, "written by the peer") == ["written by the peer"]
        assert store.stats().items == 1
    assert _peer(url, name, "recall", "written by the peer", "{}") == ["written by the peer"]


def test_what_the_peer_writes_while_we_run_is_ours_within_the_interval(
    servers: _Servers,
) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"live{uuid.uuid4().hex[:8]}"
    with _store(url, name, adopt_interval=0.3) as store:
        store.remember("ours")
        store.ensure_index()
        ids = _peer(url, name, "write", json.dumps([
            ["unscoped peer note", {}],
            ["acme bot note", {"namespace": "acme", "agent_id": "bot"}],
            ["thread note", {"namespace": "acme", "thread_id": "t1"}],
        ]))  # fmt: skip
        time.sleep(0.35)  # the interval passes: the next operation adopts first
        assert _recall(store, "acme bot note", Scope(namespace="acme", agent_id="bot")) == [
            "acme bot note"
        ]
        assert _recall(store, "unscoped peer note")[0] == "unscoped peer note"
        listed = {m.content for m in store.list(scope=Scope(namespace="acme")).items}
        assert listed == {"acme bot note", "thread note"}
        stats = store.stats()
        assert (stats.items, stats.foreign) == (4, 0)
        assert store.get(ids["thread note"]).scope == Scope(namespace="acme", thread_id="t1")
    with _store(url, name) as quiet:  # adopt_interval=None: what comes later waits
        quiet.ensure_index()
        _peer(url, name, "write", json.dumps([["written later", {}]]))
        time.sleep(0.35)
        assert quiet.stats().foreign == 1


def _write_foreign(store: SyncMemoryStore, memory_id: str, **fields: Any) -> None:
    """A record as the BetterDB library writes it, ``fields`` replacing its own."""
    record: dict[str, Any] = {
        "content": memory_id, "vector": np.asarray(_unit(7), dtype="<f4").tobytes(),
        "importance": "0.5", "created_at": "1700000000000", "last_accessed_at": "1700000000000",
        "access_count": "0", "tags": "",
    }  # fmt: skip
    record.update(fields)
    store.client.hset(f"{store.name}:mem:{memory_id}", mapping=record)


DAMAGED = {
    "nan_created": {"created_at": "nan"},
    "inf_accessed": {"last_accessed_at": "inf"},
    "overflowing_count": {"access_count": "1e400"},
    "nan_importance": {"importance": "nan"},
    "zero_vector": {"vector": np.zeros(DIM, dtype="<f4").tobytes()},
    "nan_vector": {"vector": np.full(DIM, np.nan, dtype="<f4").tobytes()},
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_foreign_record_is_skipped_and_the_sound_ones_adopted(
    servers: _Servers, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"damaged{uuid.uuid4().hex[:8]}"
    with _store(url, name) as store:
        store.remember("ours")
        _write_foreign(store, "damaged", **DAMAGED[damage])
        _write_foreign(store, "sound")
    with _store(url, name) as fresh, caplog.at_level("WARNING", "agent_memory.store"):
        assert fresh.ensure_index().adopted == 1
        assert fresh._ctx.counters.get("foreign_skipped") == 1
        assert "foreign record damaged" in caplog.text
        assert fresh.get("sound").content == "sound"
        assert _recall(fresh, "ours")  # the store goes on working
        report = fresh.adopt_foreign()
        assert (report.adopted, report.skipped) == (0, 1)
        assert not fresh.client.hexists(f"{name}:mem:damaged", "session")  # left as it was


def test_the_periodic_adoption_never_fails_the_operation(
    servers: _Servers, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"periodic{uuid.uuid4().hex[:8]}"
    with _store(url, name, adopt_interval=0.2) as store:
        store.remember("ours")
        store.ensure_index()
        _write_foreign(store, "damaged", created_at="nan")
        _write_foreign(store, "sound")
        time.sleep(0.25)
        assert _recall(store, "ours")[0] == "ours"
        assert store._ctx.counters.get("foreign_skipped") == 1
        assert store.get("sound").content == "sound"

        # Whatever a check raises (here: a bug of ours) is logged and counted.
        def broken(*_: Any) -> Any:
            raise RuntimeError("a bug in the check")

        monkeypatch.setattr("agent_memory.store.sync_store.adopt_if_changed", broken)
        time.sleep(0.25)
        with caplog.at_level("WARNING", "agent_memory.store"):
            assert _recall(store, "ours")[0] == "ours"
        assert store._ctx.counters.get("adoption_failures") == 1
        assert "a bug in the check" in caplog.text


def _term_counts(store: SyncMemoryStore, namespace: str | None) -> dict[str, int]:
    from agent_memory.schema.encoding import namespace_token

    key = store._ctx.keys.term_stats(namespace_token(namespace))
    return {
        (k.decode() if isinstance(k, bytes) else k): int(v)
        for k, v in store.client.hgetall(key).items()
        if int(v)
    }


@pytest.mark.parametrize("kind", ["valkey-search-1.2", "valkey-redisearch"])
def test_adopting_a_record_keeps_the_term_statistics_exact(servers: _Servers, kind: str) -> None:
    """The foreign record deleted before its rewrite was never counted in the term
    statistics (it names a namespace but no session): the deletion takes nothing out of
    them, the rewrite adds its text once."""
    url = servers.get(kind).url
    name = f"terms{uuid.uuid4().hex[:8]}"
    tenant = Scope(namespace="tenant1")
    with _store(url, name) as store:
        store.remember("alpha beta", scope=tenant)
        store.remember("alpha gamma", scope=tenant)
        before = _term_counts(store, "tenant1")
        _write_foreign(store, "foreign1", content="alpha beta", namespace="tenant1")
        assert store.adopt_foreign().adopted == 1
        after = _term_counts(store, "tenant1")
        assert after["n"] == before["n"] + 1 == 3
        assert after["t:alpha"] == 3 and after["t:beta"] == 2 and after["t:gamma"] == 1
        assert store.get("foreign1").scope == tenant
        for memory_id in [m.id for m in store.list(scope=tenant).items]:
            store.forget(memory_id)
        assert _term_counts(store, "tenant1") == {}
        _write_foreign(store, "foreign2", content="alpha beta", namespace="tenant1")
        assert store.forget("foreign2")  # never adopted: nothing to take out
        assert _term_counts(store, "tenant1") == {}


@pytest.mark.parametrize("kind", ["valkey-search-1.2", "valkey-redisearch"])
def test_a_record_that_cannot_be_adopted_is_scanned_for_once(
    servers: _Servers, kind: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The periodic check counts the records the last scan left as they were as known:
    one it cannot adopt is logged and counted once, and the keyspace is not scanned for
    it at every interval; a record written later is still adopted."""
    from agent_memory.store.ops import adopt

    scans: list[int] = []
    real = adopt.foreign_ids

    def counted(ctx: Any) -> Any:
        scans.append(1)
        return real(ctx)

    monkeypatch.setattr(adopt, "foreign_ids", counted)
    url = servers.get(kind).url
    name = f"unadoptable{uuid.uuid4().hex[:8]}"
    with _store(url, name, adopt_interval=0.05) as store, caplog.at_level("WARNING"):
        store.remember("ours")
        store.ensure_index()
        _write_foreign(store, "bad1", namespace="acme-corp")  # not plain: left as it is
        time.sleep(0.1)
        assert _recall(store, "ours")[0] == "ours"
        assert (store._ctx.counters.get("foreign_skipped"), len(scans)) == (1, 1)
        for _ in range(5):
            time.sleep(0.06)
            assert _recall(store, "ours")[0] == "ours"
        assert (store._ctx.counters.get("foreign_skipped"), len(scans)) == (1, 1)
        assert caplog.text.count("foreign record bad1") == 1
        _write_foreign(store, "sound")
        time.sleep(0.1)
        _recall(store, "ours")
        assert store.get("sound").content == "sound"
        assert (store._ctx.counters.get("foreign_skipped"), len(scans)) == (1, 2)
        assert not store.client.hexists(f"{name}:mem:bad1", "session")


def _between_read_and_write(op: Any, action: Any) -> Any:
    """``op`` with ``action()`` run right after its read of the foreign records (the
    batch holding their ``HMGET``): another client's write lands in that round trip."""
    from agent_memory.core.effects import Batch

    reply: Any = None
    done = False
    try:
        effect = op.send(None)
        while True:
            reply = yield effect
            if not done and isinstance(effect, Batch):
                names = [str(c.args[0]).upper() for c in effect.commands]
                if names and names[0] == "HMGET" and "PTTL" in names:
                    action()
                    done = True
            effect = op.send(reply)
    except StopIteration as stop:
        return stop.value


@pytest.mark.parametrize("kind", ["valkey-search-1.2", "valkey-redisearch"])
def test_an_update_between_the_read_and_the_rewrite_is_not_overwritten(
    servers: _Servers, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Their library bumps ``access_count`` (or edits the text) after our read of the
    record: the rewrite built from that read is not written; the record stays foreign,
    with their update, and the next adoption takes it as it is then."""
    from agent_memory.core.runner import run_sync
    from agent_memory.store.ops.adopt import adopt_foreign

    url = servers.get(kind).url
    name = f"racing{uuid.uuid4().hex[:8]}"
    with _store(url, name) as store, caplog.at_level("INFO", "agent_memory.store"):
        store.remember("ours")
        _write_foreign(store, "theirs", access_count="3")
        _write_foreign(store, "quiet")
        key = f"{name}:mem:theirs"

        def their_update() -> None:
            store.client.hset(key, mapping={"access_count": "4", "content": "edited"})

        op = _between_read_and_write(adopt_foreign(store._ctx), their_update)
        report = run_sync(op, store._executor)
        assert (report.adopted, report.skipped) == (1, 1)  # "quiet" adopted, "theirs" left
        assert store.client.hget(key, "access_count") == b"4"
        assert store.client.hget(key, "content") == b"edited"
        assert not store.client.hexists(key, "session")  # still theirs
        assert store._ctx.counters.get("foreign_changed") == 1
        assert "changed while it was adopted" in caplog.text
        assert store.adopt_foreign().adopted == 1
        adopted = store.get("theirs")
        assert (adopted.content, adopted.access_count) == ("edited", 4)


@pytest.mark.parametrize("kind", ["valkey-search-1.2", "valkey-redisearch"])
def test_two_adopters_of_one_record_rewrite_it_once(servers: _Servers, kind: str) -> None:
    """Two processes read the same foreign record; only the first rewrite is written
    (the second finds it ours already) and only it is counted."""
    from agent_memory.core.runner import run_sync
    from agent_memory.store.ops.adopt import adopt_foreign

    url = servers.get(kind).url
    name = f"twice{uuid.uuid4().hex[:8]}"
    with _store(url, name) as first, _store(url, name) as second:
        first.remember("ours")
        second.ensure_index()
        _write_foreign(first, "theirs")
        reports: list[Any] = []

        def the_other_adopts() -> None:
            reports.append(second.adopt_foreign())
            second.update("theirs", importance=0.9)  # and goes on using it

        op = _between_read_and_write(adopt_foreign(first._ctx), the_other_adopts)
        report = run_sync(op, first._executor)
        assert (reports[0].adopted, report.adopted, report.skipped) == (1, 0, 1)
        assert first.get("theirs").importance == pytest.approx(0.9)
        assert first.stats().items == 2


def test_what_the_peer_writes_into_our_default_namespace_is_adopted_there(
    servers: _Servers,
) -> None:
    """Their library sees our default namespace as ``_d`` and may write there: such a
    record joins our default namespace (its field stays ``_d``), it is not left foreign
    for the underscore."""
    url = servers.get("valkey-redisearch").url
    name = f"defaultns{uuid.uuid4().hex[:8]}"
    with _store(url, name) as store:
        store.remember("ours")
        ids = _peer(url, name, "write", json.dumps([["written by the peer", {"namespace": "_d"}]]))
        report = store.adopt_foreign()
        assert (report.adopted, report.skipped) == (1, 0)
        adopted = store.get(ids["written by the peer"])
        assert adopted.scope == Scope()
        assert _recall(store, "written by the peer")[0] == "written by the peer"
        theirs = json.dumps({"namespace": "_d"})
        assert "written by the peer" in _peer(url, name, "recall", "written by the peer", theirs)
