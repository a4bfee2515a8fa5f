"""The side effects of a recall, in one pipelined round trip: the hits' full records,
exposure and reinforcement, counters, and the selection receipt ``complete()`` consumes.

A recall never writes the indexed documents for its counters (each write would make the
search module re-index the memory, vector included): exposures and accesses live in the
store's usage hash (:attr:`~agent_memory.schema.layout.Keys.usage`). Reinforcement still
refreshes a memory's ``last_accessed_at`` (it ranks by recency), but only when it is at
least one recency step old (:func:`recency_step_ms`), so a memory recalled again and
again is re-indexed at most once per step.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import fields_of, unreadable
from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import integer, lenient_text, optional_text
from agent_memory.errors import AgentMemoryError, ReplyParseError, WrongTypeError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.scoring import Ranked
from agent_memory.schema.types import Scope
from agent_memory.store.ops.candidates import Visible

logger = logging.getLogger("agent_memory.store")

MAX_RECENCY_STEP_MS = 3_600_000
RECEIPT_TRIM_SHARE = 0.9  # trimming keeps this share of max_receipts (amortises the trim)
# The effects script's marks (``scripts.RECALL_EFFECTS``): a memory gone, a key that
# holds another type, a usage counter the server refused to count (another writer's).
_GONE, _NOT_A_HASH, _DAMAGED_COUNTER = -1, -2, -3


def recency_step_ms(half_life_seconds: float) -> int:
    """How stale a memory's ``last_accessed_at`` must be before a reinforcing recall
    refreshes it: one hundredth of the recency half-life, at most one hour. With the
    default 7-day half-life a skipped refresh changes a recency term by under 0.5%."""
    return max(1, min(MAX_RECENCY_STEP_MS, int(half_life_seconds * 10)))


@dataclass(frozen=True, slots=True)
class HitRecord:
    """A hit's stored fields (``None``: forgotten meanwhile) and its usage counters as
    they were before this recall."""

    fields: dict[str, Any] | None
    exposures: int = 0
    accesses: int = 0


def receipt_scope(scope: Scope | None) -> list[str | None]:
    """How a receipt records the scope its recall was given (``None`` is the default
    scope), for ``complete(..., scope=)`` to compare."""
    scope = scope or Scope()
    return [scope.namespace, scope.agent_id, scope.thread_id, scope.session_id]


def _touched_at(hit: Ranked) -> int:
    payload = hit.candidate.payload
    assert isinstance(payload, Visible)
    return payload.item.last_accessed_at


def _written(hit: Ranked) -> str | None:
    """The creation stamp of a hit as ranked, as stored (``None``: unreadable), for
    ``complete()`` to credit that write only: a memory stored again under the id gets
    a new one. (A ranking field already: the write ``seq`` would cost the search one
    more field per candidate.)"""
    payload = hit.candidate.payload
    assert isinstance(payload, Visible)
    raw = payload.item.fields.get(L.F_CREATED)
    return raw if isinstance(raw, str) else lenient_text(raw)


def side_effects(
    ctx: StoreContext,
    hits: list[Ranked],
    now: int,
    reinforce: bool,
    selection_id: str,
    context: str | None,
    scope: Scope | None,
) -> Operation[list[HitRecord]]:
    """The hits' full records, then exposures, reinforcement, counters and the selection
    receipt (its ids and their creation stamps, context and the recall's ``scope``), in
    one round trip. Returns each hit's record (read before reinforcement)."""
    keys = ctx.keys
    fetches = (
        [Command(("HMGET", keys.memory(r.candidate.id), *L.ITEM_FIELDS)) for r in hits]
        if ctx.settings.cluster
        else []  # read by the effects script
    )
    step = recency_step_ms(ctx.config.half_life_seconds)
    outcome = "recall_hits" if hits else "recall_empty"
    receipt = json.dumps(
        {
            "ids": [r.candidate.id for r in hits],
            "at": [_written(r) for r in hits],
            "ctx": context or "",
            "scope": receipt_scope(scope),
        }
    )
    ttl_ms = str(max(1, int(ctx.settings.receipt_ttl * 1000)))
    flag = "1" if reinforce else "0"
    if ctx.settings.cluster:
        effects = _per_key_effects(ctx, hits, now, reinforce, step, selection_id, receipt, ttl_ms)
    else:
        effects = [
            Command(
                (
                    "EVAL", scripts.RECALL_EFFECTS, str(4 + len(hits)),
                    keys.stats, keys.usage, keys.receipts, keys.receipt(selection_id),
                    *(keys.memory(r.candidate.id) for r in hits),
                    str(now), flag, str(step), outcome, receipt, ttl_ms, selection_id,
                    str(len(L.ITEM_FIELDS)), *L.ITEM_FIELDS,
                    *(r.candidate.id for r in hits),
                )
            )
        ]  # fmt: skip
    replies = yield from execute_batch([*fetches, *effects])
    failed = [r for r in replies[len(fetches) :] if isinstance(r, AgentMemoryError)]
    for reply in failed:
        # The recall itself succeeded; a failed side effect must not lose it.
        logger.warning("recall side effect failed on %s: %s", keys.name, reply)
        ctx.count("side_effect_failures")
    usage: list[tuple[int, int]] = [(0, 0)] * len(hits)
    receipts: int | None = None
    fields: list[dict[str, Any] | None] = []
    try:
        if ctx.settings.cluster:
            usage, receipts = _per_key_usage(replies[len(fetches) :], hits, reinforce)
        elif not failed:
            entries = list(replies[0])
            usage = [(integer(e[0]), integer(e[1])) for e in entries[: len(hits)]]
            fields = [fields_of(e[2]) for e in entries[: len(hits)]]
            receipts = integer(entries[-1]) if hits else None
    except (ReplyParseError, IndexError, TypeError) as exc:
        logger.warning("recall side effect reply of %s unreadable: %s", keys.name, exc)
        ctx.count("side_effect_failures")
        fields = []
    if len(fields) != len(hits):
        # Read by the per-key fetches (clusters), or again when the script failed (a
        # server refusing writes, say): the recall still returns its hits.
        reads = fetches or [
            Command(("HMGET", keys.memory(r.candidate.id), *L.ITEM_FIELDS)) for r in hits
        ]
        values = replies[: len(fetches)] if fetches else (yield from execute_batch(reads))
        fields = []
        for r, reply in zip(hits, values, strict=True):
            if isinstance(reply, AgentMemoryError):
                if not isinstance(reply, WrongTypeError):
                    raise reply
                unreadable(ctx, r.candidate.id, "its key holds no hash")
                fields.append(None)
            else:
                fields.append(fields_of(reply))
    ctx.count("recalls")
    ctx.count(outcome)
    if receipts is not None and receipts > ctx.settings.max_receipts:
        yield from _trim_receipts(ctx, receipts)
    for r, used in zip(hits, usage, strict=True):
        if used[0] == _NOT_A_HASH:
            unreadable(ctx, r.candidate.id, "its key holds no hash")
        elif _DAMAGED_COUNTER in used:
            logger.warning(
                "usage counters of memory %s of store %s are unreadable (not a count, or "
                "%s holds no hash); read as zeros, left as they are",
                r.candidate.id, keys.name, keys.usage,
            )  # fmt: skip
            ctx.count("corrupt_records")
    return [
        HitRecord(f if used[0] not in (_GONE, _NOT_A_HASH) else None, *map(_count, used))
        for f, used in zip(fields, usage, strict=True)
    ]


def _count(value: int) -> int:
    """A usage count as replied, a mark (negative) read as none."""
    return max(value, 0)


def _per_key_effects(
    ctx: StoreContext,
    hits: list[Ranked],
    now: int,
    reinforce: bool,
    step: int,
    selection_id: str,
    receipt: str,
    ttl_ms: str,
) -> list[Command]:
    """The side effects as single-key commands (clusters). Not atomic with a concurrent
    ``forget``: usage counters of a memory forgotten meanwhile may outlive it (a few
    bytes in the usage hash); the memory itself is never re-created."""
    keys = ctx.keys
    commands = [
        command("HINCRBY", keys.stats, "recalls", "1"),
        command("HINCRBY", keys.stats, "recall_hits" if hits else "recall_empty", "1"),
    ]
    for r in hits:
        exposures, accesses = keys.usage_fields(r.candidate.id)
        commands.append(command("HINCRBY", keys.usage, exposures, "1"))
        if reinforce:
            commands.append(command("HINCRBY", keys.usage, accesses, "1"))
        else:
            commands.append(command("HGET", keys.usage, accesses))
    if reinforce:
        commands += [
            Command(("EVAL", scripts.TOUCH, "1", keys.memory(r.candidate.id), str(now), str(step)))
            for r in hits
            if _touched_at(r) <= now - step
        ]
    if hits:
        commands += [
            command("SET", keys.receipt(selection_id), receipt, "PX", ttl_ms),
            command("ZADD", keys.receipts, str(now), selection_id),
            command("ZCARD", keys.receipts),
        ]
    return commands


def _per_key_usage(
    replies: list[Any], hits: list[Ranked], reinforce: bool
) -> tuple[list[tuple[int, int]], int | None]:
    usage = []
    for i in range(len(hits)):
        exposures, accesses = replies[2 + 2 * i], replies[3 + 2 * i]
        # Clamped: a counter another writer left negative must not read as the
        # "memory gone" mark (a negative count) of the standalone script's reply.
        before = (
            max(integer(exposures) - 1, 0) if not isinstance(exposures, AgentMemoryError) else 0,
            max(integer(accesses) - (1 if reinforce else 0), 0)
            if accesses is not None and not isinstance(accesses, AgentMemoryError)
            else 0,
        )
        usage.append(before)
    last = replies[-1] if hits else None
    receipts = (
        integer(last) if last is not None and not isinstance(last, AgentMemoryError) else None
    )
    return usage, receipts


def _trim_receipts(ctx: StoreContext, count: int) -> Operation[None]:
    """Drop the oldest receipts down to ``RECEIPT_TRIM_SHARE`` of ``max_receipts``, so
    the two extra round trips happen once per tenth of ``max_receipts`` recalls."""
    keep = int(ctx.settings.max_receipts * RECEIPT_TRIM_SHARE)
    excess = count - keep
    replies = yield from execute_batch([command("ZRANGE", ctx.keys.receipts, "0", str(excess - 1))])
    if isinstance(replies[0], AgentMemoryError):
        logger.warning("trimming receipts of %s failed: %s", ctx.keys.name, replies[0])
        ctx.count("side_effect_failures")
        return
    old = [optional_text(x) or "" for x in replies[0] or []]
    commands = [command("ZREM", ctx.keys.receipts, *old)] if old else []
    commands += [command("DEL", ctx.keys.receipt(sel)) for sel in old]
    done = yield from execute_batch(commands)
    for reply in done:
        if isinstance(reply, AgentMemoryError):
            logger.warning("trimming receipts of %s failed: %s", ctx.keys.name, reply)
            ctx.count("side_effect_failures")
