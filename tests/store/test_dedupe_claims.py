"""Claims on exact scopes that make ``dedupe=True`` writers take turns: the pure steps,
the retry loop driven by hand, a claim whose holder never released it, and writers
abandoned (cancelled, interrupted) while holding one."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import valkey

from agent_memory import MemoryStore, Scope, SyncMemoryStore
from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Batch, Call, Operation, Sleep
from agent_memory.errors import OperationTimeoutError, ServerResponseError
from agent_memory.schema import scripts
from agent_memory.schema.layout import Keys
from agent_memory.store import abandoned
from agent_memory.store.ops import claims, write
from tests.conftest import ServerInfo, _Servers
from tests.store.conftest import StoreEnv
from tests.support import TableEmbedder


class _Settings:
    wait_replicas = 0
    wait_timeout_ms = 1000


def _ctx() -> StoreContext:
    return StoreContext(keys=Keys("n"), settings=_Settings(), config=None)  # type: ignore[arg-type]


def _key(bucket: str) -> str:
    return f"n:__mem_claim:{bucket}"


def test_claim_and_release_commands_name_each_key_with_the_token() -> None:
    (claim,) = claims.claim_commands([_key("b")], "tok", 10_000)
    assert claim.args == ("SET", _key("b"), "tok", "NX", "PX", "10000")
    (release,) = claims.release_commands([_key("b")], "tok")
    assert release.args == ("EVAL", scripts.DELETE_IF_HOLDS, "1", _key("b"), "tok")


def test_the_lease_covers_the_replication_wait() -> None:
    ctx = _ctx()
    assert claims.lease_ms(ctx) == claims.CLAIM_LEASE_MS
    ctx.settings.wait_replicas, ctx.settings.wait_timeout_ms = 1, 30_000  # type: ignore[misc]
    assert claims.lease_ms(ctx) == claims.CLAIM_LEASE_MS + 30_000


def test_held_prefix_keeps_the_claims_won_up_to_the_first_miss() -> None:
    error = ServerResponseError("OOM", command="SET")
    assert claims.held_prefix(["a", "b", "c"], ["OK", "OK", "OK"]) == (3, [], None)
    assert claims.held_prefix(["a", "b", "c"], ["OK", None, True]) == (1, ["c"], None)
    assert claims.held_prefix(["a", "b", "c"], [None, "OK", None]) == (0, ["b"], None)
    assert claims.held_prefix(["a", "b"], [error, "OK"]) == (0, ["b"], error)


def test_pauses_grow_to_a_cap() -> None:
    pauses = [0.002]
    for _ in range(8):
        pauses.append(claims.next_pause(pauses[-1]))
    assert pauses[:3] == [0.002, 0.004, 0.008] and pauses[-1] == 0.05


def test_a_batch_keeps_the_claims_it_won_in_order_and_waits_for_the_rest() -> None:
    ctx = _ctx()
    op = claims.claim_scopes(ctx, ["b3", "b1", "b2", "b3"])
    first = op.send(None)
    assert isinstance(first, Batch)
    assert [c.args[1] for c in first.commands] == [_key("b1"), _key("b2"), _key("b3")]
    token = first.commands[0].args[2]
    release = op.send(["OK", None, "OK"])  # b2 held by another writer: b3 is given back
    assert isinstance(release, Batch)
    assert [c.args[3:] for c in release.commands] == [(_key("b3"), token)]
    assert isinstance(op.send([1]), Sleep)
    again = op.send(None)  # b1 is kept; only the rest are asked for again
    assert isinstance(again, Batch) and [c.args[1] for c in again.commands] == [
        _key("b2"),
        _key("b3"),
    ]
    with pytest.raises(StopIteration) as done:
        op.send(["OK", "OK"])
    assert done.value.value == ([_key("b1"), _key("b2"), _key("b3")], token)
    assert ctx.counters["dedupe_claim_waits"] == 1


def test_a_server_error_releases_the_claims_won_before_it_is_raised() -> None:
    op = claims.claim_scopes(_ctx(), ["b1", "b2"])
    token = op.send(None).commands[0].args[2]  # type: ignore[union-attr]
    release = op.send(["OK", ServerResponseError("OOM command not allowed", command="SET")])
    assert isinstance(release, Batch)
    assert [c.args[3:] for c in release.commands] == [(_key("b1"), token)]
    with pytest.raises(ServerResponseError, match="OOM"):
        op.send([1])


def test_a_writer_gives_up_when_the_scope_stays_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claims, "CLAIM_WAIT_SECONDS", 0.0)
    op = claims.claim_scopes(_ctx(), ["b1", "b2"])
    op.send(None)
    release = op.send(["OK", None])  # b1 won, b2 never comes free
    assert isinstance(release, Batch) and [c.args[3] for c in release.commands] == [_key("b1")]
    with pytest.raises(OperationTimeoutError, match="waited"):
        op.send([1])


def test_an_abandoned_claim_is_noted_for_the_store() -> None:
    ctx = _ctx()
    op = claims.under_claims(ctx, ["b"], iter([Sleep(5.0)]))  # type: ignore[arg-type]
    token = op.send(None).commands[0].args[2]  # type: ignore[union-attr]
    assert isinstance(op.send(["OK"]), Sleep)  # the body runs, holding the claim
    op.close()
    assert ctx.abandoned_claims == [((_key("b"),), token)]


async def test_a_claim_its_writer_never_released_delays_the_next_writer_until_its_lease_ends(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claims, "CLAIM_LEASE_MS", 1500)
    store = env.make(dedupe=True)
    scope = Scope(agent_id="a")
    monkeypatch.setattr(claims, "release_commands", lambda keys, token: [])  # a writer dies
    first = await store.remember("User likes tea", scope=scope)
    monkeypatch.setattr(claims, "release_commands", _real_release)
    counters: dict[str, Any] = store._ctx.counters
    assert await store.remember("User likes tea", scope=scope) == first
    assert counters.get("dedupe_claim_waits", 0) >= 1  # it waited for the lease to end
    assert (await store.list(scope=scope)).total == 1


_real_release = claims.release_commands


def _parked(_ctx: StoreContext, _memories: Any) -> Operation[tuple[list[str], list[Any]]]:
    yield Sleep(30.0)  # holds its claim until cancelled
    return [], []


def _interrupted(_ctx: StoreContext, _memories: Any) -> Operation[tuple[list[str], list[Any]]]:
    yield Call(_raise_interrupt, (), "labeler")
    return [], []


def _raise_interrupt() -> None:
    raise KeyboardInterrupt


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey-redisearch")


@pytest.fixture
def raw(server: ServerInfo) -> Iterator[valkey.Valkey]:
    client = valkey.Valkey.from_url(server.url)
    yield client
    client.close()


def _claims_held(raw: valkey.Valkey, name: str) -> list[bytes]:
    return list(raw.scan_iter(f"{name}:__mem_claim:*"))


async def test_a_cancelled_deduplicating_write_releases_its_claim(
    server: ServerInfo, raw: valkey.Valkey, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"t{uuid.uuid4().hex[:12]}"
    store = MemoryStore.from_url(server.url, name=name, embed=TableEmbedder(), dedupe=True)
    try:
        await store.ensure_index()
        monkeypatch.setattr(write, "_deduplicated_write", _parked)
        task = asyncio.create_task(store.remember("User likes tea"))
        for _ in range(500):
            if _claims_held(raw, name):
                break
            await asyncio.sleep(0.01)
        assert _claims_held(raw, name)  # the writer holds its claim, parked
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(500):
            if not _claims_held(raw, name):
                break
            await asyncio.sleep(0.01)
        assert _claims_held(raw, name) == []  # released now, not at the lease's end
        monkeypatch.undo()
        await store.remember("User likes tea")
        assert store._ctx.counters.get("dedupe_claim_waits", 0) == 0
    finally:
        await store.close()


async def _cancel_me() -> None:
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    await asyncio.sleep(0)


async def test_a_write_cancelled_after_its_release_counts_no_expired_claim(
    server: ServerInfo, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Cancelled once its release was sent (its reply unread), a deduplicating write
    had its claim released again by the store, which found it gone and reported a
    claim whose lease had run out before its write ended (logged and counted in
    ``dedupe_claims_expired``), though none had."""
    real_release = claims.release_scopes

    def release_then_cancelled(*args: Any, **kwargs: Any) -> Operation[None]:
        yield from real_release(*args, **kwargs)
        yield Call(_cancel_me, (), "labeler")  # the task is cancelled right after

    name = f"t{uuid.uuid4().hex[:12]}"
    store = MemoryStore.from_url(server.url, name=name, embed=TableEmbedder(), dedupe=True)
    try:
        await store.ensure_index()
        monkeypatch.setattr(claims, "release_scopes", release_then_cancelled)
        with pytest.raises(asyncio.CancelledError):
            await store.remember("User likes tea")
        monkeypatch.undo()
        while abandoned._releasing:  # the store's release of the abandoned claim
            await asyncio.gather(*abandoned._releasing)
        assert store._ctx.counters.get("dedupe_claims_expired", 0) == 0
        assert "had run out" not in caplog.text
        assert (await store.list()).total == 1  # the write itself was done
    finally:
        await store.close()


def test_an_interrupted_blocking_deduplicating_write_releases_its_claim(
    server: ServerInfo, raw: valkey.Valkey, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"t{uuid.uuid4().hex[:12]}"
    store = SyncMemoryStore.from_url(server.url, name=name, embed=TableEmbedder(), dedupe=True)
    try:
        monkeypatch.setattr(write, "_deduplicated_write", _interrupted)
        with pytest.raises(KeyboardInterrupt):
            store.remember("User likes tea")
        assert _claims_held(raw, name) == []
        assert store._ctx.abandoned_claims == []
    finally:
        store.close()
