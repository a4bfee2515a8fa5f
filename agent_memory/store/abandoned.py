"""Releasing the claims of operations abandoned while holding them.

An operation whose task is cancelled (or whose thread is interrupted) is closed by the
runner; it cannot send commands any more, so it notes its claims in the store's context
(:func:`agent_memory.store.ops.claims.abandon`). The store hands them here as the
operation ends: the async store releases them in a task of their own (the cancelled
task must not wait), the blocking one at once. A failure is logged and counted; the
claims' lease ends them anyway.
"""

from __future__ import annotations

import asyncio
import logging

from agent_memory.backends.context import StoreContext
from agent_memory.core.clients import AsyncExecutor, SyncExecutor
from agent_memory.core.effects import Operation
from agent_memory.core.runner import run_async, run_sync
from agent_memory.store.ops.claims import release_scopes

logger = logging.getLogger("agent_memory.store")

_releasing: set[asyncio.Task[None]] = set()  # strong references until each is done


def _releases(ctx: StoreContext) -> Operation[None]:
    claims, ctx.abandoned_claims = ctx.abandoned_claims, []
    for keys, token in claims:
        yield from release_scopes(ctx, keys, token, abandoned=True)


def release_abandoned(ctx: StoreContext, executor: AsyncExecutor | SyncExecutor) -> None:
    """Release what abandoned operations of this store left claimed (if anything)."""
    if not ctx.abandoned_claims:
        return
    if isinstance(executor, SyncExecutor):
        try:
            run_sync(_releases(ctx), executor)
        except Exception as exc:  # noqa: BLE001 - logged and counted; the lease ends them
            _failed(ctx, exc)
        return
    releases = run_async(_releases(ctx), executor)
    try:
        task = asyncio.get_running_loop().create_task(releases)
    except RuntimeError as exc:  # the loop is closing: the leases end the claims
        releases.close()
        _failed(ctx, exc)
        return
    _releasing.add(task)
    task.add_done_callback(lambda done: _done(ctx, done))


def _done(ctx: StoreContext, task: asyncio.Task[None]) -> None:
    _releasing.discard(task)
    if not task.cancelled() and task.exception() is not None:
        _failed(ctx, task.exception())


def _failed(ctx: StoreContext, exc: BaseException | None) -> None:
    logger.warning("%s: releasing abandoned dedupe claims failed: %r", ctx.keys.name, exc)
    ctx.count("dedupe_claim_release_failures")
