"""``max_items_per_scope``: exact eviction of the lowest-ranked memories of a scope."""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import integer, number, optional_text, text
from agent_memory.errors import AgentMemoryError
from agent_memory.store import layout as L
from agent_memory.store.context import StoreContext
from agent_memory.store.lexical import adjust_args, delete_args, stats_delta
from agent_memory.store.scoring import eviction_order


def _raise_errors(replies: Sequence[object]) -> None:
    for reply in replies:
        if isinstance(reply, AgentMemoryError):
            raise reply


def evict_over_capacity(
    ctx: StoreContext,
    namespace_token: str,
    bucket: str,
    cap: int,
    indexes: Sequence[str] = (),
) -> Operation[int]:
    """Evict from one scope bucket until at most ``cap`` live memories remain.

    Reads every member of the bucket (no ceiling on its size), drops members whose
    memory expired or was deleted, ranks the rest by importance + recency with the
    store's weights and deletes the lowest. Returns how many were evicted.
    """
    bucket_key = ctx.keys.scope_bucket(bucket)
    reply = yield from execute_batch([command("ZRANGE", bucket_key, "0", "-1")])
    _raise_errors(reply)
    ids = [text(x) for x in reply[0] or []]
    if len(ids) <= cap:
        return 0
    fetched = yield from execute_batch(
        [
            Command(("HMGET", ctx.keys.memory(m), L.F_IMPORTANCE, L.F_CREATED, L.F_ACCESSED))
            for m in ids
        ]
    )
    _raise_errors(fetched)
    live, importance, touched, gone = [], [], [], []
    for memory_id, values in zip(ids, fetched, strict=True):
        if not values or values[0] is None:
            gone.append(memory_id)
            continue
        live.append(memory_id)
        importance.append(number(values[0]))
        created = integer(values[1]) if values[1] is not None else 0
        accessed = integer(values[2]) if values[2] is not None else created
        touched.append(max(created, accessed))
    excess = len(live) - cap
    victims = (
        eviction_order(
            live,
            importance,
            touched,
            now_ms=ctx.now_ms(),
            weights=ctx.config.weights,
            half_life_seconds=ctx.config.half_life_seconds,
        )[:excess]
        if excess > 0
        else []
    )
    cleanup = [*gone, *victims]
    if not cleanup:
        return 0
    bookkeeping = [
        command("ZREM", bucket_key, *cleanup),
        command("ZREM", ctx.keys.registry(namespace_token), *cleanup),
        *(command("ZREM", index, *cleanup) for index in indexes),
        command("INCR", ctx.keys.registry_version(namespace_token)),
    ]
    deletes = [Command(delete_args(ctx.keys.memory(v))) for v in victims]
    # After the deletes: a recall's side effects never re-create a deleted memory's
    # usage counters (their script checks the memory first).
    usage = command("HDEL", ctx.keys.usage, *(f for m in cleanup for f in ctx.keys.usage_fields(m)))
    replies = yield from execute_batch([*bookkeeping, *deletes, usage])
    _raise_errors(replies)
    # Concurrent writers may pick the same victims: count only the deletions that
    # happened here (the delete script returns the content only to the caller that
    # deleted), so ``evictions`` and the term statistics stay exact across processes.
    deleted = replies[len(bookkeeping) : len(bookkeeping) + len(deletes)]
    contents = [optional_text(r) or "" for r in deleted if r is not None]
    evicted = len(contents)
    if evicted:
        followups = [command("HINCRBY", ctx.keys.stats, "evictions", str(evicted))]
        adjust = adjust_args(ctx.keys.term_stats(namespace_token), stats_delta(contents, -1))
        if adjust is not None:
            followups.append(Command(adjust))
        counted = yield from execute_batch(followups)
        _raise_errors(counted)
    ctx.count("evictions", evicted)
    return evicted
