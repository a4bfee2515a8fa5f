"""``max_items_per_scope``: exact eviction of the lowest-ranked memories of a scope."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import unreadable
from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import integer, number, raise_first_error, text
from agent_memory.errors import ReplyParseError, WrongTypeError
from agent_memory.schema import layout as L
from agent_memory.schema.scoring import eviction_order
from agent_memory.store.ops.forget import (
    delete_checked,
    raise_unless_wrong_type,
    unchanged_delete,
    unregister_command,
)

_RANKED_BY = (L.F_IMPORTANCE, L.F_CREATED, L.F_ACCESSED)
_ATTEMPTS = 3


def evict_over_capacity(
    ctx: StoreContext,
    namespace_token: str,
    bucket: str,
    cap: int,
    indexes: Sequence[str] = (),
    *,
    spare: Collection[str] = (),
) -> Operation[int]:
    """Evict from one scope bucket until at most ``cap`` live memories remain.

    Reads every member of the bucket (no ceiling on its size), drops members whose
    memory expired or was deleted, ranks the rest by importance + recency with the
    store's weights and deletes the lowest (ties: the oldest write first); a member
    expired by the store's clock is not counted (the server reaps it). A member
    whose record cannot be read is logged and counted (``corrupt_records``), and neither
    ranked nor evicted. Members in
    ``spare`` count against the cap but are never evicted (what a consolidation just
    wrote). A victim whose rank changed between the read and its deletion (a recall, an
    update) is kept, and the bucket is read again (up to :data:`_ATTEMPTS` times).
    Returns how many were evicted.
    """
    evicted = 0
    for _ in range(_ATTEMPTS):
        done, settled = yield from _evict_once(ctx, namespace_token, bucket, cap, indexes, spare)
        evicted += done
        if settled:
            break
    return evicted


def _evict_once(
    ctx: StoreContext,
    namespace_token: str,
    bucket: str,
    cap: int,
    indexes: Sequence[str],
    spare: Collection[str],
) -> Operation[tuple[int, bool]]:
    """One eviction pass: how many it evicted, and whether every victim it chose went."""
    bucket_key = ctx.keys.scope_bucket(bucket)
    reply = yield from execute_batch([command("ZRANGE", bucket_key, "0", "-1")])
    raise_first_error(reply)
    ids = [text(x) for x in reply[0] or []]
    if len(ids) <= cap:
        return 0, True
    fetched = yield from execute_batch(
        [Command(("HMGET", ctx.keys.memory(m), *_RANKED_BY, L.F_SEQ, L.F_EXPIRES)) for m in ids]
    )
    raise_first_error([r for r in fetched if not isinstance(r, WrongTypeError)])
    read: dict[str, dict[str, Any]] = {}
    live, importance, touched, created_at, sequence, gone = [], [], [], [], [], []
    spared_live = 0
    now = ctx.now_ms()
    for memory_id, values in zip(ids, fetched, strict=True):
        if isinstance(values, WrongTypeError):
            unreadable(ctx, memory_id, "its key holds no hash (not evicted)")
            continue
        if not values or values[0] is None:
            gone.append(memory_id)
            continue
        try:
            rank = number(values[0])
            created = integer(values[1]) if values[1] is not None else 0
            accessed = integer(values[2]) if values[2] is not None else created
            written = integer(values[3]) if values[3] is not None else 0
            expires = integer(values[4]) if values[4] is not None else None
        except ReplyParseError as exc:
            # Unranked, it is neither evicted (that would delete data for damage) nor
            # counted against the cap; the write that triggered this stays a success.
            unreadable(ctx, memory_id, f"{exc} (not evicted)")
            continue
        if expires is not None and expires <= now:
            # expired by the store's clock, not yet reaped: no longer a memory of the
            # scope, so it neither counts against the cap nor outranks a live one
            continue
        if memory_id in spare:
            spared_live += 1
            continue
        read[memory_id] = dict(zip(_RANKED_BY, values[: len(_RANKED_BY)], strict=True))
        live.append(memory_id)
        importance.append(rank)
        touched.append(max(created, accessed))
        created_at.append(created)
        sequence.append(written)
    excess = len(live) + spared_live - cap
    victims = (
        eviction_order(
            live,
            importance,
            touched,
            now_ms=now,
            weights=ctx.config.weights,
            half_life_seconds=ctx.config.half_life_seconds,
            created_ms=created_at,
            sequence=sequence,
        )[:excess]
        if excess > 0
        else []
    )
    if not gone and not victims:
        return 0, True
    # Concurrent writers may pick the same victims: only the deletions that happened here
    # are unregistered, counted and removed from the term statistics, so ``evictions``
    # and the statistics stay exact across processes. A victim is deleted only while it
    # holds the rank it was chosen by (an update of its importance, a recall since
    # then, may have lifted it).
    deleted = yield from delete_checked(
        ctx,
        [(m, unchanged_delete(ctx, m, read[m], _RANKED_BY)) for m in victims],
        counter="evictions",
    )
    if gone and not ctx.settings.cluster:  # expired or deleted elsewhere: their entries only
        sets = [bucket_key, ctx.keys.registry(namespace_token), *indexes]
        commands = [unregister_command(ctx, gone, sets)]
        done = yield from execute_batch(commands)
        raise_unless_wrong_type(ctx, commands, done)
    # On a cluster a member whose memory is missing may be a write in flight (it is
    # registered a round trip before its record): prune removes such entries once they
    # are old enough to be dead.
    ctx.count("evictions", len(deleted))
    return len(deleted), len(deleted) == len(victims)
