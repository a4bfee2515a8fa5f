"""``forget`` / ``forget_by_scope``: delete memories and their bookkeeping."""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import optional_text
from agent_memory.errors import AgentMemoryError
from agent_memory.store import layout as L
from agent_memory.store.context import StoreContext
from agent_memory.store.filters import MemoryFilter
from agent_memory.store.lexical import adjust_args, delete_args, stats_delta
from agent_memory.store.ops.read import matching_ids
from agent_memory.store.validation import check_id

_LOCATION_FIELDS = (L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, L.F_SESSION)
_CHUNK = 500


def _bucket_of(values: Sequence[object]) -> tuple[str, str] | None:
    ns, agent, thread, session = (optional_text(v) for v in values)
    if ns is None:
        return None
    return ns, L.bucket_digest(ns, agent or "", thread or "", session or "")


def delete_ids(ctx: StoreContext, ids: Sequence[str]) -> Operation[int]:
    """Delete memories by id with their registry and bucket entries; returns how many.

    Each memory is deleted by a script that returns its content, so the namespace's
    term statistics lose exactly the texts deleted here; that adjustment rides with the
    ``forgets`` counter in the final round trip.
    """
    deleted = 0
    removed: dict[str, list[str]] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        located = yield from execute_batch(
            [Command(("HMGET", ctx.keys.memory(m), *_LOCATION_FIELDS)) for m in chunk]
        )
        commands: list[Command] = []
        owners: list[str | None] = []
        namespaces: set[str] = set()
        for memory_id, values in zip(chunk, located, strict=True):
            if isinstance(values, AgentMemoryError):
                raise values
            commands.append(Command(delete_args(ctx.keys.memory(memory_id))))
            where = _bucket_of(values or [None] * 4)
            owners.append(where[0] if where is not None else None)
            if where is not None:
                ns, bucket = where
                _, agent, thread, _ = (optional_text(v) for v in values or [None] * 4)
                commands.append(command("ZREM", ctx.keys.registry(ns), memory_id))
                commands += [
                    command("ZREM", index, memory_id)
                    for index in ctx.keys.member_indexes(ns, agent, thread)
                ]
                commands.append(command("ZREM", ctx.keys.scope_bucket(bucket), memory_id))
                namespaces.add(ns)
        commands += [command("INCR", ctx.keys.registry_version(ns)) for ns in sorted(namespaces)]
        # After the deletes, so a concurrent recall cannot re-create the counters.
        commands.append(
            command("HDEL", ctx.keys.usage, *(f for m in chunk for f in ctx.keys.usage_fields(m)))
        )
        replies = yield from execute_batch(commands)
        owner = iter(owners)
        for cmd, reply in zip(commands, replies, strict=True):
            if isinstance(reply, AgentMemoryError):
                raise reply
            if cmd.name == "EVAL":
                ns_of = next(owner)
                if reply is not None:
                    deleted += 1
                    if ns_of is not None:
                        removed.setdefault(ns_of, []).append(optional_text(reply) or "")
    finals: list[Command] = []
    if deleted:
        finals.append(command("HINCRBY", ctx.keys.stats, "forgets", str(deleted)))
    for ns in sorted(removed):
        adjust = adjust_args(ctx.keys.term_stats(ns), stats_delta(removed[ns], -1))
        if adjust is not None:
            finals.append(Command(adjust))
    replies = yield from execute_batch(finals)
    for reply in replies:
        if isinstance(reply, AgentMemoryError):
            raise reply
    return deleted


def forget(ctx: StoreContext, memory_id: str) -> Operation[bool]:
    """Delete one memory; ``False`` when it did not exist."""
    check_id(memory_id)
    deleted = yield from delete_ids(ctx, [memory_id])
    return deleted > 0


def forget_matching(ctx: StoreContext, flt: MemoryFilter) -> Operation[int]:
    """Delete every memory of the filter's namespace that matches it."""
    matched = yield from matching_ids(ctx, flt, include_expired=True)
    deleted = yield from delete_ids(ctx, [memory_id for memory_id, _ in matched])
    return deleted
