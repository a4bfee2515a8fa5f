"""Claims on exact scopes: ``dedupe=True`` writes to one scope take turns.

Deduplication is a search followed by a write. Two writers of the same text that both
search before either writes would each find nothing and each store a copy; so a
deduplicating write first claims every exact scope it writes to (``SET NX PX`` on
``{name}:__mem_claim:{bucket}`` with a token of its own), searches and writes, then
releases the claims (deleting only a claim that still holds its token). A writer that
finds a scope claimed waits, with growing pauses, until the holder releases it or the
claim's lease runs out, so a writer that died holding one delays the others by at most
the lease (:func:`lease_ms`).

A batch that spans several scopes claims them in one round trip, in the order of their
keys, and keeps the claims it won up to the first one it did not (releasing any won
after it): every writer waits only for a key above all those it holds, so no two
writers wait for each other, and a batch keeps its place while single-scope writers
come and go.

An operation abandoned while it may hold claims (its task cancelled, the process
interrupted) cannot send commands any more: it notes them in the store's context, and
the store releases them as the operation ends (:mod:`agent_memory.store.abandoned`).
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Sequence

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation, T, execute_batch, sleep
from agent_memory.errors import AgentMemoryError, OperationTimeoutError
from agent_memory.schema import scripts

logger = logging.getLogger("agent_memory.store")

CLAIM_LEASE_MS = 10_000
"""How long a claim lasts if its holder never releases it (it died, or lost the server),
beyond the replication wait of a store with ``wait_replicas``."""

CLAIM_WAIT_SECONDS = 30.0
"""How long a writer waits for claimed scopes before it gives up with a timeout."""

_FIRST_PAUSE = 0.002
_LONGEST_PAUSE = 0.05


def lease_ms(ctx: StoreContext) -> int:
    """A claim's lease: :data:`CLAIM_LEASE_MS`, plus the replication wait a write makes."""
    settings = ctx.settings
    return CLAIM_LEASE_MS + (settings.wait_timeout_ms if settings.wait_replicas else 0)


def claim_commands(keys: Sequence[str], token: str, lease: int) -> list[Command]:
    """One ``SET NX PX`` per claim key."""
    return [Command(("SET", key, token, "NX", "PX", str(lease))) for key in keys]


def release_commands(keys: Sequence[str], token: str) -> list[Command]:
    """One token-checked delete per claim key."""
    return [Command(("EVAL", scripts.DELETE_IF_HOLDS, "1", key, token)) for key in keys]


def held_prefix(
    keys: Sequence[str], replies: Sequence[object]
) -> tuple[int, list[str], AgentMemoryError | None]:
    """How many keys, from the first, were won (``SET NX`` answered ``OK``); the keys
    won after that (to release); and the first error among the replies."""
    won = [r is not None and r is not False and not isinstance(r, Exception) for r in replies]
    error = next((r for r in replies if isinstance(r, AgentMemoryError)), None)
    prefix = 0
    while prefix < len(keys) and won[prefix]:
        prefix += 1
    beyond = [key for key, ok in zip(keys[prefix:], won[prefix:], strict=True) if ok]
    return prefix, beyond, error


def next_pause(pause: float) -> float:
    """The pause after ``pause``: doubled, capped at 50 ms."""
    return min(pause * 2, _LONGEST_PAUSE)


def claim_scopes(ctx: StoreContext, buckets: Sequence[str]) -> Operation[tuple[list[str], str]]:
    """Claim every exact scope of ``buckets``; returns the claim keys and the token.

    Raises:
        OperationTimeoutError: other writers held a scope for
            :data:`CLAIM_WAIT_SECONDS` (longer than a lease, so only a stream of other
            writers can do that); the claims won meanwhile are released.
        ServerUnavailableError, ServerResponseError...: a claim failed on the server;
            the claims won are released.
    """
    keys = sorted({ctx.keys.scope_claim(bucket) for bucket in buckets})
    token = uuid.uuid4().hex
    lease = lease_ms(ctx)
    deadline = time.monotonic() + CLAIM_WAIT_SECONDS
    pause = _FIRST_PAUSE
    held = 0
    try:
        while True:
            wanted = keys[held:]
            replies = yield from execute_batch(claim_commands(wanted, token, lease))
            prefix, beyond, error = held_prefix(wanted, replies)
            held += prefix
            if beyond:
                yield from release_scopes(ctx, beyond, token)
            if error is not None:
                raise error
            if held == len(keys):
                return keys, token
            if time.monotonic() >= deadline:
                raise OperationTimeoutError(
                    f"{ctx.keys.name}: a deduplicating write waited {CLAIM_WAIT_SECONDS:.0f} s "
                    "for other writers to the same scope"
                )
            ctx.count("dedupe_claim_waits")
            yield from sleep(pause * random.uniform(0.5, 1.5))
            pause = next_pause(pause)
    except GeneratorExit:
        abandon(ctx, keys, token)  # a claim batch may have been applied unseen
        raise
    except AgentMemoryError:
        yield from release_scopes(ctx, keys[:held], token)
        raise


def under_claims(ctx: StoreContext, buckets: Sequence[str], body: Operation[T]) -> Operation[T]:
    """Run ``body`` holding claims on the exact scopes of ``buckets``; they are released
    after it, also when it fails, and noted for the store when it is abandoned."""
    keys, token = yield from claim_scopes(ctx, buckets)
    try:
        result = yield from body
    except GeneratorExit:
        abandon(ctx, keys, token)  # no command can be sent from here
        raise
    except Exception:
        yield from release_scopes(ctx, keys, token)
        raise
    try:
        yield from release_scopes(ctx, keys, token)
    except GeneratorExit:
        abandon(ctx, keys, token)
        raise
    return result


def abandon(ctx: StoreContext, keys: Sequence[str], token: str) -> None:
    """Note claims that an abandoned operation may hold, for the store to release."""
    ctx.abandoned_claims.append((tuple(keys), token))


def release_scopes(
    ctx: StoreContext, keys: Sequence[str], token: str, *, abandoned: bool = False
) -> Operation[None]:
    """Release claims taken by :func:`claim_scopes`; best-effort: a failure is logged
    and counted (``dedupe_claim_release_failures``), the lease ends the claim anyway. A
    claim found no longer held (its lease ran out first, so another writer may have
    written meanwhile) is logged and counted as ``dedupe_claims_expired``; not one of
    ``abandoned`` claims (:func:`abandon`): the operation may never have won it (its
    claim batch never sent, or lost to another writer) or released it already (the
    release's reply unread), so finding it gone says nothing of a lease."""
    if not keys:
        return
    try:
        replies = yield from execute_batch(release_commands(keys, token))
    except AgentMemoryError as exc:
        replies = [exc]
    failures = [r for r in replies if isinstance(r, AgentMemoryError)]
    if failures:
        logger.warning(
            "%s: releasing a dedupe claim failed (it ends with its lease): %s",
            ctx.keys.name, failures[0],
        )  # fmt: skip
        ctx.count("dedupe_claim_release_failures")
    expired = 0 if abandoned else sum(1 for r in replies if r == 0)
    if expired:
        logger.warning(
            "%s: %d dedupe claim(s) had run out before their write ended", ctx.keys.name, expired
        )
        ctx.count("dedupe_claims_expired", expired)
