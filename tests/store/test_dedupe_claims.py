"""Claims on exact scopes that make ``dedupe=True`` writers take turns: the pure steps,
the retry loop driven by hand, and a claim whose holder never released it."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory import Scope
from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Batch, Sleep
from agent_memory.errors import OperationTimeoutError, ServerResponseError
from agent_memory.schema import scripts
from agent_memory.schema.layout import Keys
from agent_memory.store.ops import claims
from tests.store.conftest import StoreEnv


def _ctx() -> StoreContext:
    return StoreContext(keys=Keys("n"), settings=None, config=None)  # type: ignore[arg-type]


def test_claim_and_release_commands_name_each_key_with_the_token() -> None:
    (claim,) = claims.claim_commands(["n:__mem_claim:b"], "tok")
    assert claim.args == ("SET", "n:__mem_claim:b", "tok", "NX", "PX", str(claims.CLAIM_LEASE_MS))
    (release,) = claims.release_commands(["n:__mem_claim:b"], "tok")
    assert release.args == ("EVAL", scripts.RELEASE_CLAIM, "1", "n:__mem_claim:b", "tok")


def test_won_claims_are_the_keys_set_and_a_server_error_is_raised() -> None:
    assert claims.won_claims(["a", "b", "c"], ["OK", None, True]) == ["a", "c"]
    with pytest.raises(ServerResponseError):
        claims.won_claims(["a"], [ServerResponseError("READONLY", command="SET")])


def test_pauses_grow_to_a_cap() -> None:
    pauses = [0.002]
    for _ in range(8):
        pauses.append(claims.next_pause(pauses[-1]))
    assert pauses[:3] == [0.002, 0.004, 0.008] and pauses[-1] == 0.05


def test_a_batch_that_wins_some_scopes_releases_them_pauses_and_claims_all_again() -> None:
    ctx = _ctx()
    op = claims.claim_scopes(ctx, ["b2", "b1", "b2"])
    first = op.send(None)
    assert isinstance(first, Batch)
    keys = [c.args[1] for c in first.commands]
    assert keys == ["n:__mem_claim:b1", "n:__mem_claim:b2"]  # sorted, once each
    token = first.commands[0].args[2]
    release = op.send(["OK", None])  # b1 won, b2 held by another writer
    assert isinstance(release, Batch)
    assert [c.args[3:] for c in release.commands] == [("n:__mem_claim:b1", token)]
    assert isinstance(op.send([1]), Sleep)
    again = op.send(None)
    assert isinstance(again, Batch) and [c.args[2] for c in again.commands] == [token, token]
    with pytest.raises(StopIteration) as done:
        op.send(["OK", "OK"])
    assert done.value.value == (keys, token)
    assert ctx.counters["dedupe_claim_waits"] == 1


def test_a_writer_gives_up_when_the_scope_stays_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claims, "CLAIM_WAIT_SECONDS", 0.0)
    op = claims.claim_scopes(_ctx(), ["b"])
    op.send(None)
    with pytest.raises(OperationTimeoutError, match="waited"):
        op.send([None])


async def test_a_claim_its_writer_never_released_delays_the_next_writer_until_its_lease_ends(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claims, "CLAIM_LEASE_MS", 300)
    store = env.make(dedupe=True)
    scope = Scope(agent_id="a")
    monkeypatch.setattr(claims, "release_commands", lambda keys, token: [])  # a writer dies
    first = await store.remember("User likes tea", scope=scope)
    monkeypatch.undo()
    monkeypatch.setattr(claims, "CLAIM_LEASE_MS", 300)
    counters: dict[str, Any] = store._ctx.counters
    assert await store.remember("User likes tea", scope=scope) == first
    assert counters.get("dedupe_claim_waits", 0) >= 1  # it waited for the lease to end
    assert (await store.list(scope=scope)).total == 1
