"""Interleavings of two writers of one memory, replayed step by step: what one writer's
late step must not undo of the other's."""

from __future__ import annotations

from typing import Any

from agent_memory import Scope
from agent_memory.core.effects import Command
from agent_memory.store.ops.forget import bookkeeping, delete_command, deleted_from
from tests.store.conftest import StoreEnv
from tests.store.test_consolidate import _export


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
