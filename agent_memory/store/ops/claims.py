"""Claims on exact scopes: ``dedupe=True`` writes to one scope take turns.

Deduplication is a search followed by a write. Two writers of the same text that both
search before either writes would each find nothing and each store a copy; so a
deduplicating write first claims every exact scope it writes to (``SET NX PX`` on
``{name}:__mem_claim:{bucket}`` with a token of its own), searches and writes, then
releases the claims (deleting only a claim that still holds its token). A writer that
finds a scope claimed waits, with growing pauses, until the holder releases it or the
claim's lease runs out, so a writer that died holding one delays the others by at most
:data:`CLAIM_LEASE_MS`.

A batch that spans several scopes claims all of them in one round trip; when it wins
only some, it releases those and tries again, so two batches never each hold what the
other waits for.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Sequence

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation, execute_batch, sleep
from agent_memory.errors import AgentMemoryError, OperationTimeoutError
from agent_memory.schema import scripts

logger = logging.getLogger("agent_memory.store")

CLAIM_LEASE_MS = 10_000
"""How long a claim lasts if its holder never releases it (it died, or lost the server)."""

CLAIM_WAIT_SECONDS = 30.0
"""How long a writer waits for claimed scopes before it gives up with a timeout."""

_FIRST_PAUSE = 0.002
_LONGEST_PAUSE = 0.05


def claim_commands(keys: Sequence[str], token: str) -> list[Command]:
    """One ``SET NX PX`` per claim key."""
    return [Command(("SET", key, token, "NX", "PX", str(CLAIM_LEASE_MS))) for key in keys]


def release_commands(keys: Sequence[str], token: str) -> list[Command]:
    """One token-checked delete per claim key."""
    return [Command(("EVAL", scripts.RELEASE_CLAIM, "1", key, token)) for key in keys]


def won_claims(keys: Sequence[str], replies: Sequence[object]) -> list[str]:
    """The keys whose ``SET NX`` succeeded (``OK``); a server error is raised."""
    won = []
    for key, reply in zip(keys, replies, strict=True):
        if isinstance(reply, AgentMemoryError):
            raise reply
        if reply is not None and reply is not False:
            won.append(key)
    return won


def next_pause(pause: float) -> float:
    """The pause after ``pause``: doubled, capped at 50 ms."""
    return min(pause * 2, _LONGEST_PAUSE)


def claim_scopes(ctx: StoreContext, buckets: Sequence[str]) -> Operation[tuple[list[str], str]]:
    """Claim every exact scope of ``buckets``; returns the claim keys and the token.

    Raises:
        OperationTimeoutError: other writers held a scope for
            :data:`CLAIM_WAIT_SECONDS` (the claim's lease is shorter, so only a stream
            of other writers can do that).
    """
    keys = sorted({ctx.keys.scope_claim(bucket) for bucket in buckets})
    token = uuid.uuid4().hex
    deadline = time.monotonic() + CLAIM_WAIT_SECONDS
    pause = _FIRST_PAUSE
    while True:
        replies = yield from execute_batch(claim_commands(keys, token))
        won = won_claims(keys, replies)
        if len(won) == len(keys):
            return keys, token
        if won:
            yield from execute_batch(release_commands(won, token))
        if time.monotonic() >= deadline:
            raise OperationTimeoutError(
                f"{ctx.keys.name}: a deduplicating write waited {CLAIM_WAIT_SECONDS:.0f} s "
                "for other writers to the same scope"
            )
        ctx.count("dedupe_claim_waits")
        yield from sleep(pause * random.uniform(0.5, 1.5))
        pause = next_pause(pause)


def release_scopes(ctx: StoreContext, keys: Sequence[str], token: str) -> Operation[None]:
    """Release claims taken by :func:`claim_scopes`; best-effort: a failure is logged
    and counted (``dedupe_claim_release_failures``), the lease ends the claim anyway."""
    try:
        replies = yield from execute_batch(release_commands(keys, token))
    except AgentMemoryError as exc:
        replies = [exc]
    failures = [r for r in replies if isinstance(r, AgentMemoryError)]
    if failures:
        logger.warning(
            "%s: releasing a dedupe claim failed (it ends with its %d ms lease): %s",
            ctx.keys.name, CLAIM_LEASE_MS, failures[0],
        )  # fmt: skip
        ctx.count("dedupe_claim_release_failures")
