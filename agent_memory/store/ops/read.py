"""``get`` / ``list`` / ``stats``: reads that never touch the vector blob."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
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
from agent_memory.core.replies import integer, lenient_text, pairs, text
from agent_memory.errors import (
    AgentMemoryError,
    ReplyParseError,
    WrongTypeError,
)
from agent_memory.schema import layout as L
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.records import parse_item, retention_from_fields
from agent_memory.schema.types import ListResult, MemoryItem
from agent_memory.search.parse import parse_index_info
from agent_memory.store.ops.namespaces import registry_keys
from agent_memory.store.validation import check_id, check_ids

logger = logging.getLogger("agent_memory.store")

_CHUNK = 2000


def is_expired(fields: Mapping[str, Any], now_ms: int) -> bool:
    expires = fields.get(L.F_EXPIRES)
    return expires is not None and integer(expires) <= now_ms


def item_or_none(
    ctx: StoreContext, memory_id: str, fields: dict[str, Any], usage: tuple[int, int] = (0, 0)
) -> MemoryItem | None:
    """Parse a memory with its usage counters, or ``None`` when it is missing, expired or
    corrupt (logged, counted)."""
    if L.F_CONTENT not in fields:
        return None
    try:
        if is_expired(fields, ctx.now_ms()):
            return None
        forgetting = ctx.settings.forgetting
        kept = (
            retention_from_fields(fields, forgetting, ctx.now_ms())
            if forgetting is not None
            else 1.0
        )
        return parse_item(memory_id, fields, usage=usage, retention=kept)
    except ReplyParseError as exc:
        unreadable(ctx, memory_id, exc)
        return None


def usage_command(ctx: StoreContext, ids: Sequence[str]) -> Command:
    """HMGET of the usage counters of ``ids`` (reply order: exposures, accesses per id)."""
    return command("HMGET", ctx.keys.usage, *(f for i in ids for f in ctx.keys.usage_fields(i)))


def usage_counts(reply: Any, count: int) -> tuple[list[tuple[int, int]], str | None]:
    """``(exposures, accesses)`` per id from a :func:`usage_command` reply, and why the
    reply was (partly) unreadable, if it was: a failed reply or a value that is not a
    count reads as zeros (the counters are observability, never a reason to fail a
    read; the caller logs and counts the problem)."""
    problem: str | None = None
    if isinstance(reply, AgentMemoryError):
        values: list[Any] = []
        problem = str(reply)
    else:
        values = list(reply or [])
    values += [None] * (2 * count - len(values))

    def value(raw: Any) -> int:
        nonlocal problem
        try:
            return max(integer(raw), 0) if raw is not None else 0
        except ReplyParseError as exc:
            problem = str(exc)
            return 0

    return [(value(values[2 * i]), value(values[2 * i + 1])) for i in range(count)], problem


def item_commands(ctx: StoreContext, ids: Sequence[str]) -> list[Command]:
    """The reads :func:`parse_items` needs for ``ids``: their records, then the usage."""
    return [
        *read_many(ctx, [ctx.keys.memory(m) for m in ids], L.ITEM_FIELDS),
        usage_command(ctx, ids),
    ]


def parse_items(
    ctx: StoreContext,
    ids: Sequence[str],
    replies: Sequence[Any],
    repair: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
) -> list[tuple[str, dict[str, Any], MemoryItem | None]]:
    """Each id's stored fields and item (``None``: missing, expired or unreadable) with
    its usage counters, from the replies of :func:`item_commands` (exactly those).
    ``repair(id, fields)``, when given, returns the fields the item is built from (and
    returned), e.g. without damaged learning state it has reported."""
    records = read_many_replies(ctx, replies[:-1], len(ids))
    counts, problem = usage_counts(replies[-1], len(ids))
    if problem is not None:
        logger.warning(
            "usage counters of store %s are unreadable (%s); read as zeros", ctx.keys.name, problem
        )
        ctx.count("corrupt_records")
    out: list[tuple[str, dict[str, Any], MemoryItem | None]] = []
    for memory_id, values, used in zip(ids, records, counts, strict=True):
        if isinstance(values, Unreadable):
            unreadable(ctx, memory_id, "its key holds no hash")
            out.append((memory_id, {}, None))
            continue
        fields = fields_of(values)
        if repair is not None:
            fields = repair(memory_id, fields)
        out.append((memory_id, fields, item_or_none(ctx, memory_id, fields, used)))
    return out


def fetch_items(
    ctx: StoreContext, ids: Sequence[str]
) -> Operation[list[tuple[str, dict[str, Any], MemoryItem | None]]]:
    """:func:`parse_items` of ``ids``, read in one round trip."""
    if not ids:
        return []
    replies = yield from execute_batch(item_commands(ctx, ids))
    return parse_items(ctx, ids, replies)


def get(ctx: StoreContext, memory_id: str) -> Operation[MemoryItem | None]:
    """One memory by id, or ``None`` when there is none (or it expired)."""
    check_id(memory_id)
    found = yield from fetch_items(ctx, [memory_id])
    return found[0][2]


def get_many(ctx: StoreContext, ids: Iterable[str]) -> Operation[list[MemoryItem | None]]:
    """Memories by id, in the order of ``ids`` (``None``: missing or expired), read in
    one round trip (duplicate ids are read once)."""
    requested = check_ids(ids)
    found = yield from fetch_items(ctx, list(dict.fromkeys(requested)))
    items = {memory_id: item for memory_id, _, item in found}
    return [items[memory_id] for memory_id in requested]


def exact_index(ctx: StoreContext, flt: MemoryFilter) -> str | None:
    """The id set whose members are exactly the memories ``flt`` matches (expired ones
    included), when there is one: the namespace registry, an agent's or a thread's
    index. ``None`` when the filter needs the memories' fields (session, tags, labels,
    sources, or both an agent and a thread)."""
    if flt.session is not None or flt.tags or flt.label_groups:
        return None
    if flt.sources is not None or flt.exclude_sources:
        return None
    if flt.agent is not None and flt.thread is not None:
        return None
    if flt.agent is not None:
        return ctx.keys.agent_index(flt.namespace, flt.agent)
    if flt.thread is not None:
        return ctx.keys.thread_index(flt.namespace, flt.thread)
    return ctx.keys.registry(flt.namespace)


def registered_ids(ctx: StoreContext, members: Any) -> list[str]:
    """The ids a registry reply lists; a member that is not valid UTF-8 names no memory
    this library could have written: skipped, logged and counted."""
    ids = []
    for member in members or []:
        try:
            ids.append(text(member))
        except ReplyParseError as exc:
            unreadable(ctx, repr(member)[:40], exc)
    return ids


def matching_ids(
    ctx: StoreContext,
    flt: MemoryFilter,
    *,
    include_expired: bool = False,
    include_suppressed: bool = True,
) -> Operation[list[tuple[str, tuple[int, int]]]]:
    """``(id, (created_at, sequence))`` of every memory of the filter's namespace that
    matches it: sort by the pair for write order.

    Walks the smallest exact id set that covers the filter — the agent's or the thread's
    index when the filter names one, else the namespace registry — and reads of each
    memory its order, the tokens the filter tests beyond that set (none for a namespace,
    an agent or a thread alone) and its retention fields when forgetting may suppress it,
    in pipelined chunks. The cost grows with that set, not with the namespace.
    """
    forgetting = None if include_suppressed else ctx.settings.forgetting
    tested = flt.token_fields()
    names = (L.F_CREATED, L.F_SEQ, *tested)
    if forgetting is not None:
        names += tuple(f for f in L.RETENTION_FIELDS if f not in names)
    now = ctx.now_ms()
    if flt.agent is not None:
        registry = ctx.keys.agent_index(flt.namespace, flt.agent)
    elif flt.thread is not None:
        registry = ctx.keys.thread_index(flt.namespace, flt.thread)
    else:
        registry = ctx.keys.registry(flt.namespace)
    low = "-inf" if include_expired else f"({ctx.now_ms()}"
    reply = yield from execute("ZRANGEBYSCORE", registry, low, "+inf")
    ids = registered_ids(ctx, reply)
    out: list[tuple[str, tuple[int, int]]] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        reads = read_many(ctx, [ctx.keys.memory(m) for m in chunk], names)
        fetched = yield from execute_batch(reads)
        for memory_id, values in zip(
            chunk, read_many_replies(ctx, fetched, len(chunk)), strict=True
        ):
            if isinstance(values, Unreadable):
                unreadable(ctx, memory_id, "its key holds no hash")
                continue
            created, seq = values[0], values[1]
            if created is None:
                continue
            try:
                if forgetting is not None and (
                    retention_from_fields(fields_of(values, names), forgetting, now)
                    < forgetting.retention_threshold
                ):
                    continue
                order = (integer(created), integer(seq) if seq is not None else 0)
            except ReplyParseError as exc:
                unreadable(ctx, memory_id, exc)
                continue
            # A corrupt token matches no filter value (it is None), nothing more.
            if not tested or flt.matches(
                {k: lenient_text(v) for k, v in zip(tested, values[2:], strict=False)}
            ):
                out.append((memory_id, order))
    return out


def list_items(
    ctx: StoreContext,
    flt: MemoryFilter,
    *,
    limit: int,
    offset: int,
    include_suppressed: bool = False,
) -> Operation[ListResult]:
    """A page of matching memories, newest first, and the total that match."""
    matched = yield from matching_ids(ctx, flt, include_suppressed=include_suppressed)
    matched.sort(key=lambda pair: (-pair[1][0], -pair[1][1], pair[0]))
    page = [memory_id for memory_id, _ in matched[offset : offset + limit]]
    fetched = yield from fetch_items(ctx, page)
    items = [item for _, _, item in fetched if item is not None]
    return ListResult(tuple(items), len(matched))


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """Counters of a store, as Monitor reads them.

    Attributes:
        items: memories currently stored (all namespaces, unexpired).
        evictions: memories evicted by ``max_items_per_scope`` (all processes).
        counters: every field of ``{name}:__mem_stats`` as integers.
        backend: the backend in use.
        foreign: records in the store's index that another library (BetterDB
            agent-memory) wrote and this one has not adopted yet (search backend only:
            the index's document count beyond ``items``); ``adopt_foreign()`` adopts them.
    """

    items: int
    evictions: int
    counters: dict[str, int]
    backend: str
    foreign: int = 0


def count_in(
    ctx: StoreContext, registries: Sequence[str], *extra: Command
) -> Operation[tuple[int, list[Any]]]:
    """Unexpired memories over ``registries``, and the replies of ``extra`` (sent in the
    same round trip)."""
    now = ctx.now_ms()
    counts = [command("ZCOUNT", key, f"({now}", "+inf") for key in registries]
    replies = yield from execute_batch([*extra, *counts])
    total = 0
    for key, reply in zip(registries, replies[len(extra) :], strict=True):
        if is_wrong_type(reply):
            logger.warning(
                "store %s: registry %s is not a sorted set (%s); its memories are not counted",
                ctx.keys.name, key, reply,
            )  # fmt: skip
            ctx.count("corrupt_records")
            continue
        if isinstance(reply, AgentMemoryError):
            raise reply
        total += integer(reply)
    return total, list(replies[: len(extra)])


def is_wrong_type(reply: Any) -> bool:
    """Whether a reply is the server's refusal of a key holding another type (a key
    another writer replaced)."""
    return isinstance(reply, WrongTypeError)


def count_items(ctx: StoreContext, *extra: Command) -> Operation[tuple[int, list[Any]]]:
    """Unexpired memories over every namespace registry, and the replies of ``extra``
    (sent in the same round trip)."""
    registries = yield from registry_keys(ctx)
    counted = yield from count_in(ctx, registries, *extra)
    return counted


def foreign_estimate(index_docs: int | None, items: int) -> int:
    """Documents of the index that are not registered memories (pure)."""
    return max(0, index_docs - items) if index_docs is not None else 0


def _counters(ctx: StoreContext, reply: Any) -> dict[str, int]:
    """The store counters of ``{name}:__mem_stats``; a field that is not an integer
    (another writer's) is logged, counted and left out."""
    counters: dict[str, int] = {}
    for name, value in pairs(reply).items():
        try:
            counters[name] = integer(value)
        except ReplyParseError as exc:
            logger.warning(
                "store %s: counter %r in %s is unreadable: %s",
                ctx.keys.name, name, ctx.keys.stats, exc,
            )  # fmt: skip
            ctx.count("corrupt_records")
    return counters


def stats(ctx: StoreContext) -> Operation[MemoryStats]:
    """Item count from every namespace registry, counters from ``{name}:__mem_stats``, and
    (search backend) the foreign records the index holds, in one round trip."""
    on_index = ctx.backend is not None and ctx.backend.name == "ft"
    extra = [command("HGETALL", ctx.keys.stats)]
    if on_index:
        extra.append(command("FT.INFO", ctx.keys.index))
    items, replies = yield from count_items(ctx, *extra)
    if isinstance(replies[0], AgentMemoryError):
        raise replies[0]
    counters = _counters(ctx, replies[0])
    foreign = 0
    if on_index:
        try:
            if isinstance(replies[1], AgentMemoryError):
                raise replies[1]
            foreign = foreign_estimate(parse_index_info(replies[1]).num_docs, items)
        except AgentMemoryError as exc:  # the estimate only: the rest of stats stands
            logger.warning(
                "store %s: FT.INFO failed, stats reports 0 foreign records: %s",
                ctx.keys.name, exc,
            )  # fmt: skip
            ctx.count("index_info_failures")
    backend = ctx.backend.name if ctx.backend is not None else "unknown"
    if ctx.telemetry is not None:
        ctx.telemetry.set_items(items)
    return MemoryStats(items, counters.get("evictions", 0), counters, backend, foreign)
