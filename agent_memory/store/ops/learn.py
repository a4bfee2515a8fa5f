"""``complete`` / ``feedback`` / ``prune``: learning what is useful, and forgetting.

``complete(selection_id, score)`` treats a recall's selection as one observation: the
centred score ``score - 0.5`` is spread over its ``n`` memories with weight ``1/n``.
Consuming the selection receipt and updating the aggregates is one server-side script
on a standalone server, so a second completion of the same selection (even 50 arriving
at once) finds no receipt and changes nothing. On a cluster the receipt is consumed
with ``GETDEL`` (still exactly once) and the aggregates are then updated key by key: a
crash between the two loses that observation but never counts it twice. The receipt
names each memory's creation stamp as ranked: a memory forgotten and stored again under
its id since the recall takes no credit for it.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import (
    Unreadable,
    fields_of,
    read_many,
    read_many_replies,
    unreadable,
)
from agent_memory.core.effects import Command, Operation, command, execute, execute_batch
from agent_memory.core.replies import integer, lenient_text, raise_first_error, text
from agent_memory.errors import AgentMemoryError, InvalidInputError, NotFoundError, ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.records import retention_from_fields
from agent_memory.schema.types import Scope
from agent_memory.schema.versions import bump
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.forget import (
    delete_checked,
    raise_unless_wrong_type,
    relist_stored_again,
    unchanged_delete,
    unregister_command,
)
from agent_memory.store.ops.ghosts import listing_sets, missing, sweep
from agent_memory.store.ops.namespaces import check_forgotten, forget_if_empty, registry_keys
from agent_memory.store.ops.read import is_wrong_type, registered_ids
from agent_memory.store.ops.selection import receipt_scope
from agent_memory.store.ops.settle import execute_writes
from agent_memory.store.validation import check_id, shown

logger = logging.getLogger("agent_memory.store")
_SELECTION = re.compile(r"[0-9a-f]{32}")
_CHUNK = 1000
_UNLIST_CHUNK = 200  # ids per unregistration script (each removes them from every set)


def check_score(score: object, *, low: float, high: float, field: str) -> float:
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise InvalidInputError(f"{field} must be a number in [{low}, {high}]", field=field)
    try:
        value = float(score)
    except OverflowError:  # an int beyond any float
        value = math.inf
    if not math.isfinite(value) or not low <= value <= high:
        raise InvalidInputError(
            f"{field} must be in [{low}, {high}], got {shown(score)}", field=field
        )
    return value


def check_selection(selection_id: object) -> str:
    if not isinstance(selection_id, str) or not _SELECTION.fullmatch(selection_id):
        raise InvalidInputError(f"not a selection id: {shown(selection_id)}", field="selection_id")
    return selection_id


def complete(
    ctx: StoreContext, selection_id: str, score: float, scope: Scope | None = None
) -> Operation[bool]:
    """Apply an eval outcome to a selection once; ``False`` when it was already
    completed, has expired, never existed, or (``scope`` given) its recall was given
    another scope. A receipt is consumed only once its scope was checked."""
    yield from ensure_ready(ctx)  # the dialect decides whether the writes are settled
    receipt_key = ctx.keys.receipt(selection_id)
    consume_first = ctx.settings.cluster and scope is None
    raw = (
        yield from execute("GETDEL", receipt_key) if consume_first else execute("GET", receipt_key)
    )
    if raw is None:
        return False
    ids, written, context, recorded = _parse_receipt(selection_id, raw)
    if scope is not None and recorded != receipt_scope(scope):
        return False  # another scope's selection: answered like an unknown one
    if (
        ctx.settings.cluster
        and not consume_first
        and (yield from execute("GETDEL", receipt_key)) is None
    ):
        return False  # a concurrent completion consumed it first
    centred = score - 0.5
    argv = (
        repr(centred / len(ids)), repr(1.0 / len(ids)), context, str(ctx.now_ms()),
        str(ctx.settings.max_contexts), "1" if centred > 0 else "0",
    )  # fmt: skip
    keys = [ctx.keys.memory(i) for i in ids]
    # The receipt's entry in the receipt index goes in the same round trip: consumed
    # here or by a racing completion, the receipt is gone either way.
    unlisted = command("ZREM", ctx.keys.receipts, selection_id)
    if ctx.settings.cluster:
        replies = yield from execute_batch(
            [
                *(
                    Command(("EVAL", scripts.APPLY_EVAL, "1", key, *argv, stamp))
                    for key, stamp in zip(keys, written, strict=True)
                ),
                unlisted,
            ]
        )
        raise_first_error(replies[:-1])
        applied, statuses, removed = True, replies[:-1], replies[-1]
    else:
        reply, removed = yield from execute_writes(
            ctx,
            [
                Command(
                    (
                        "EVAL",
                        scripts.COMPLETE,
                        str(1 + len(keys)),
                        receipt_key,
                        *keys,
                        *argv,
                        *written,
                    )
                ),
                unlisted,
            ],
        )
        raise_first_error([reply])
        consumed, *statuses = reply
        applied = bool(integer(consumed))
    if isinstance(removed, AgentMemoryError):  # the evaluation was applied all the same
        logger.warning(
            "store %s: removing selection %s from %s failed (%s); its receipt is consumed",
            ctx.keys.name, selection_id, ctx.keys.receipts, removed,
        )  # fmt: skip
        ctx.count("bookkeeping_failures")
    _report_damage(ctx, ids, [integer(s) for s in statuses])
    if applied:
        ctx.count("completions")
    return applied


def _parse_receipt(selection_id: str, raw: object) -> tuple[list[str], list[str], str, object]:
    """A receipt's memory ids, the ``created_at`` of each as recalled (``""``: unknown,
    as in a receipt an older release wrote: any memory under that id is credited),
    utility context and recorded scope (``None`` in a receipt an older release wrote,
    which names no scope)."""
    try:
        receipt = json.loads(text(raw))
        ids = [check_id(i) for i in receipt["ids"]]
        written = receipt.get("at") or [None] * len(ids)
        if len(written) != len(ids) or not all(s is None or isinstance(s, str) for s in written):
            raise ValueError(f"its creation stamps {written!r} do not match its ids")
        context = str(receipt.get("ctx") or "")
    except (ValueError, KeyError, TypeError, AgentMemoryError) as exc:
        raise AgentMemoryError(f"selection receipt {selection_id} is corrupt: {exc}") from exc
    return ids, [s or "" for s in written], context, receipt.get("scope")


_REPAIRED = 2  # the apply script's statuses (``scripts._APPLY_EVAL``)
_NOT_A_HASH = 3


def _report_damage(ctx: StoreContext, ids: Sequence[str], statuses: Sequence[int]) -> None:
    """Log and count (``corrupt_records``) the memories a completion found damaged: the
    evaluation still reached every other memory of the selection."""
    for memory_id, status in zip(ids, statuses, strict=False):
        if status == _REPAIRED:
            logger.warning(
                "memory %s of store %s held learning data no writer makes (eval_sum, "
                "eval_weight or utility_ctx); it was replaced, starting from this evaluation",
                memory_id, ctx.keys.name,
            )  # fmt: skip
            ctx.count("corrupt_records")
        elif status == _NOT_A_HASH:
            unreadable(ctx, memory_id, "its key holds no hash; the evaluation skipped it")


def feedback(ctx: StoreContext, memory_id: str, value: float | None) -> Operation[None]:
    """Set, replace or clear (``None``) the manual usefulness of a memory.

    Raises:
        NotFoundError: no memory with that id.
    """
    argv = ("clear", "0") if value is None else ("set", repr(value))
    yield from ensure_ready(ctx)
    (found,) = yield from execute_writes(
        ctx,
        [
            Command(
                (
                    "EVAL",
                    scripts.FEEDBACK,
                    "1",
                    ctx.keys.memory(memory_id),
                    *argv,
                    str(ctx.now_ms()),
                )
            )
        ],
    )
    raise_first_error([found])
    if not integer(found):
        raise NotFoundError(f"no memory with id {memory_id!r}")
    ctx.count("feedback")


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What :meth:`MemoryStore.prune` removed.

    Attributes:
        deleted: ids of the memories deleted because forgetting suppressed them.
        registry_entries: bookkeeping entries of expired memories cleaned up.
        ghost_entries: registered ids removed because they named no memory for longer
            than the grace (:mod:`agent_memory.store.ops.ghosts`: cluster writes cut
            short, evicted memories).
    """

    deleted: tuple[str, ...]
    registry_entries: int
    ghost_entries: int = 0


def suppressed(ctx: StoreContext, ids: Sequence[str]) -> Operation[dict[str, dict[str, Any]]]:
    """The ids among ``ids`` whose retention fell below the forgetting threshold, each
    with the retention fields it was judged on."""
    forgetting = ctx.settings.forgetting
    if forgetting is None or not ids:
        return {}
    now = ctx.now_ms()
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        keys = [ctx.keys.memory(m) for m in chunk]
        replies = yield from execute_batch(read_many(ctx, keys, L.RETENTION_FIELDS))
        records = read_many_replies(ctx, replies, len(chunk))
        for memory_id, values in zip(chunk, records, strict=True):
            if isinstance(values, Unreadable):
                unreadable(ctx, memory_id, "its key holds no hash")
                continue
            fields = fields_of(values, L.RETENTION_FIELDS)
            if L.F_CREATED not in fields:
                continue
            try:
                kept = retention_from_fields(fields, forgetting, now)
            except ReplyParseError as exc:
                unreadable(ctx, memory_id, exc)  # never pruned for a value it cannot read
                continue
            if kept < forgetting.retention_threshold:
                out[memory_id] = fields
    return out


def _unlist_expired(ctx: StoreContext, namespace_token: str, ids: list[str]) -> Operation[None]:
    """Remove memories whose expiry passed from the other sets that list them (agent and
    thread indexes, scope buckets) and their usage counters, which nothing else cleans:
    a store whose memories all carry a TTL would grow them for ever. Only the ids whose
    record is gone are removed (a memory stored again under its id stays listed; the
    server reaps a record when its TTL ends, which the store's clock marks too). The
    sets are found with ``SCAN``, only when entries expired.

    A standalone server checks each record in the script that removes it. A cluster
    keeps the sets in other slots than the records: there ``ids`` were checked gone
    before their registry entries were removed (:func:`_unregister_expired`), and the
    ones whose record exists again after the removal (stored again under an expired id
    meanwhile) are listed again (:func:`relist_stored_again`)."""
    sets = yield from listing_sets(ctx, namespace_token)
    for start in range(0, len(ids), _UNLIST_CHUNK):
        chunk = ids[start : start + _UNLIST_CHUNK]
        if ctx.settings.cluster:
            commands = [command("ZREM", key, *chunk) for key in sets]
            usage = [f for memory_id in chunk for f in ctx.keys.usage_fields(memory_id)]
            commands.append(command("HDEL", ctx.keys.usage, *usage))
        else:
            commands = [unregister_command(ctx, chunk, sets)]
        done = yield from execute_batch(commands)
        raise_unless_wrong_type(ctx, commands, done)
        yield from relist_stored_again(ctx, chunk)


def _unregister_expired(
    ctx: StoreContext, namespace_token: str, expired: Any, now: int
) -> Operation[list[Any]]:
    """Remove the registry entries that expired by ``now`` whose memory the server no
    longer holds; returns the members removed, as replied. The server decides, not this
    process's clock: a pruner whose clock runs ahead leaves a memory listed until its
    record is gone (checked in the removing script on a standalone server, one round
    trip before it on a cluster, where the records live in other slots). An entry that
    is not valid UTF-8 names no memory this library wrote: it goes once expired,
    unchecked."""
    ids = registered_ids(ctx, expired)
    unnamed = [m for m in expired or [] if lenient_text(m) is None]
    if ctx.settings.cluster and ids:
        ids = sorted((yield from missing(ctx, ids)))
    if not ids and not unnamed:
        return []
    registry = ctx.keys.registry(namespace_token)
    removed: list[Any] = []
    for start in range(0, max(len(ids), 1), _UNLIST_CHUNK):
        chunk = ids[start : start + _UNLIST_CHUNK]
        tail = unnamed if start == 0 else []  # past the memory keys: removed unchecked
        checked = [] if ctx.settings.cluster else [ctx.keys.memory(m) for m in chunk]
        reap = Command(
            (
                "EVAL", scripts.UNREGISTER_EXPIRED, str(1 + len(checked)),
                registry, *checked, str(now), *chunk, *tail,
            )
        )  # fmt: skip
        replies = yield from execute_batch([reap, bump(ctx.keys.registry_version(namespace_token))])
        raise_first_error(replies)
        removed += list(replies[0] or [])
    return removed


def _namespace_of(ctx: StoreContext, registry: str) -> str:
    return registry[len(ctx.keys.registry("")) :]


def prune(ctx: StoreContext, namespace_token: str | None) -> Operation[PruneResult]:
    """Delete suppressed memories (one namespace, or all), expired registry entries, and
    entries that have named no memory for longer than the ghost grace."""
    if namespace_token is None:
        registries = yield from registry_keys(ctx)
    else:
        registries = [ctx.keys.registry(namespace_token)]
    now = ctx.now_ms()
    deleted: list[str] = []
    cleaned = ghosts = 0
    for registry in registries:
        ns = _namespace_of(ctx, registry)
        replies: list[Any] = yield from execute_batch(
            [
                command("ZRANGEBYSCORE", registry, "-inf", str(now)),  # what expires now
                command("ZRANGE", registry, "0", "-1"),
            ]
        )
        if is_wrong_type(replies[0]):
            logger.warning(
                "store %s: registry %s is not a sorted set (%s); prune leaves it",
                ctx.keys.name, registry, replies[0],
            )  # fmt: skip
            ctx.count("corrupt_records")
            continue
        raise_first_error(replies)
        removed = yield from _unregister_expired(ctx, ns, replies[0], now)
        cleaned += len(removed)
        named = [m for m in map(lenient_text, removed) if m is not None]
        if named:
            yield from _unlist_expired(ctx, ns, named)
        reaped = set(removed)
        ids = registered_ids(ctx, [m for m in replies[1] or [] if m not in reaped])
        ghosts += yield from sweep(ctx, ns, ids, now)
        victims = yield from suppressed(ctx, ids)
        # Deleted only while their retention fields hold what was judged: a feedback or
        # a recall since then may have saved a memory. Only what was deleted here is
        # reported and counted, so two prunes at once never both claim a deletion.
        deleted += yield from delete_checked(
            ctx,
            [
                (m, unchanged_delete(ctx, m, victims[m], L.RETENTION_FIELDS))
                for m in sorted(victims)
            ],
        )
    if registries and not ctx.settings.cluster:
        tokens = [_namespace_of(ctx, registry) for registry in registries]
        replies = yield from execute_batch([forget_if_empty(ctx, t) for t in tokens])
        for reply in replies:
            check_forgotten(ctx, reply)
    ctx.count("pruned", len(deleted))
    return PruneResult(tuple(deleted), cleaned, ghosts)
