"""The side effects of a recall, in one pipelined round trip: the hits' full records,
exposure and reinforcement, counters, and the selection receipt ``complete()`` consumes."""

from __future__ import annotations

import json
import logging
from typing import Any

from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import integer, optional_text
from agent_memory.errors import AgentMemoryError
from agent_memory.store import layout as L
from agent_memory.store import scripts
from agent_memory.store.context import StoreContext
from agent_memory.store.ops.read import fields_of
from agent_memory.store.scoring import Ranked

logger = logging.getLogger("agent_memory.store")


def side_effects(
    ctx: StoreContext,
    hits: list[Ranked],
    now: int,
    reinforce: bool,
    selection_id: str,
    context: str | None,
) -> Operation[list[dict[str, Any] | None]]:
    """The hits' full records, then exposures, reinforcement, counters and the selection
    receipt, in one round trip. Returns each hit's fields (read before reinforcement)."""
    stats = ctx.keys.stats
    fetches = [Command(("HMGET", ctx.keys.memory(r.candidate.id), *L.ITEM_FIELDS)) for r in hits]
    commands: list[Command] = [
        *fetches,
        command("HINCRBY", stats, "recalls", "1"),
        command("HINCRBY", stats, "recall_hits" if hits else "recall_empty", "1"),
    ]
    flag = "1" if reinforce else "0"
    commands += [
        Command(("EVAL", scripts.REINFORCE, "1", ctx.keys.memory(r.candidate.id), str(now), flag))
        for r in hits
    ]
    if hits:
        receipt = json.dumps({"ids": [r.candidate.id for r in hits], "ctx": context or ""})
        ttl_ms = str(max(1, int(ctx.receipt_ttl * 1000)))
        commands += [
            command("SET", ctx.keys.receipt(selection_id), receipt, "PX", ttl_ms),
            command("ZADD", ctx.keys.receipts, str(now), selection_id),
            command("ZCARD", ctx.keys.receipts),
        ]
    replies = yield from execute_batch(commands)
    records: list[dict[str, Any] | None] = []
    for reply in replies[: len(fetches)]:
        if isinstance(reply, AgentMemoryError):
            raise reply
        records.append(fields_of(reply))
    for reply in replies[len(fetches) :]:
        if isinstance(reply, AgentMemoryError):
            # The recall itself succeeded; a failed side effect must not lose it.
            logger.warning("recall side effect failed on %s: %s", ctx.keys.name, reply)
            ctx.count("side_effect_failures")
    ctx.count("recalls")
    ctx.count("recall_hits" if hits else "recall_empty")
    card = replies[-1] if hits else None
    if (
        card is not None
        and not isinstance(card, AgentMemoryError)
        and integer(card) > ctx.max_receipts
    ):
        yield from _trim_receipts(ctx, integer(card))
    return records


def _trim_receipts(ctx: StoreContext, count: int) -> Operation[None]:
    """Keep the newest ``max_receipts`` receipts (oldest are dropped first)."""
    excess = count - ctx.max_receipts
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
