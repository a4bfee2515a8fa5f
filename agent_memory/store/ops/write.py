"""``remember`` / ``remember_many`` / ``update``: validated, embedded, pipelined writes."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import integer, raise_first_error, text
from agent_memory.errors import (
    AgentMemoryError,
    IndexMismatchError,
    InvalidInputError,
    WrongTypeError,
)
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.labels import LabelPolicy, Labels, check_labels
from agent_memory.schema.lexical import adjust_args, stats_delta
from agent_memory.schema.records import (
    NewMemory,
    label_fields,
    record_fields,
)
from agent_memory.schema.types import Durability, Scope
from agent_memory.schema.versions import bump, fresh_token
from agent_memory.store.ops.capacity import evict_over_capacity
from agent_memory.store.ops.claims import under_claims
from agent_memory.store.ops.dedupe import (
    Refresh,
    absorb,
    find_duplicates,
    merge_refresh,
    refresh_existing,
)
from agent_memory.store.ops.durability import check_replicated, wait_commands
from agent_memory.store.ops.embedding import embed_texts
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.forget import (
    Deleted,
    bookkeeping,
    clear_for_replacement,
    clear_if_unchanged,
    deleted_from,
    raise_unless_wrong_type,
)
from agent_memory.store.ops.guarded import guarded_update
from agent_memory.store.ops.labeling import labeler_failed, run_labeler
from agent_memory.store.ops.settle import execute_writes
from agent_memory.store.validation import (
    check_id,
    check_importance,
    check_metadata,
    check_optional_text,
    check_scope,
    check_tags,
    check_text,
    check_ttl,
)

_WRITE_CHUNK = 500
logger = logging.getLogger("agent_memory.store")


@dataclass(frozen=True, slots=True)
class MemoryInput:
    """One memory for :meth:`MemoryStore.remember_many` (same fields as ``remember``)."""

    content: str
    importance: float = 0.5
    tags: Sequence[str] = ()
    ttl: float | None = None
    scope: Scope | None = None
    source: str | None = None
    subject: str | None = None
    date: str | None = None
    metadata: Mapping[str, Any] | None = None
    durability: Durability = "shared"
    id: str | None = field(default=None)
    labels: Mapping[str, Sequence[str]] | None = None


@dataclass(frozen=True, slots=True)
class _Validated:
    content: str
    importance: float
    tags: tuple[str, ...]
    ttl: float | None
    scope: Scope
    durability: Durability
    source: str | None
    subject: str | None
    date: str | None
    metadata_json: str | None
    id: str
    labels: Labels


def validate_input(
    item: MemoryInput, max_content_bytes: int, policy: LabelPolicy | None = None
) -> _Validated:
    """Check every field of a memory before anything is embedded or written."""
    scope = check_scope(item.scope) or Scope()
    if item.durability not in ("shared", "session"):
        raise InvalidInputError(
            f"durability must be 'shared' or 'session', got {item.durability!r}", field="durability"
        )
    if item.durability == "session" and scope.session_id is None:
        raise InvalidInputError("durability='session' needs scope.session_id", field="durability")
    return _Validated(
        content=check_text(item.content, field="content", max_bytes=max_content_bytes),
        importance=check_importance(item.importance),
        tags=check_tags(item.tags),
        ttl=check_ttl(item.ttl),
        scope=scope,
        durability=item.durability,
        source=check_optional_text(item.source, field="source", max_bytes=256),
        subject=check_optional_text(item.subject, field="subject", max_bytes=1024),
        date=check_optional_text(item.date, field="date", max_bytes=64),
        metadata_json=check_metadata(item.metadata),
        id=check_id(item.id) if item.id is not None else uuid.uuid4().hex,
        labels=check_labels(item.labels, policy),
    )


def _write_script(
    ctx: StoreContext,
    memory: NewMemory,
    ttl: float | None,
    *,
    with_terms: bool = True,
    guard: Sequence[Any] = (),
) -> Command:
    """One memory's write on a standalone server: one script stores the record, its TTL,
    its registrations and the bookkeeping, atomically (the term statistics too, unless
    ``with_terms`` is off: a batch adds them up once, :func:`_terms_commands`). With a
    ``guard`` (field count, fields, expected values), only over a record that still
    holds them (:data:`~agent_memory.schema.scripts.ADOPT_MEMORY`)."""
    ttl_ms = max(1, math.ceil(ttl * 1000)) if ttl is not None else 0
    expiry = str(memory.expires_at) if memory.expires_at is not None else "+inf"
    indexes = ctx.keys.member_indexes(
        memory.namespace_token, memory.agent_token, memory.thread_token
    )
    ns = memory.namespace_token
    delta = stats_delta([memory.content], 1) if with_terms else {}
    return Command(
        (
            "EVAL", scripts.ADOPT_MEMORY if guard else scripts.WRITE_MEMORY,
            str(10 + len(indexes)),
            ctx.keys.memory(memory.id), ctx.keys.registry(ns),
            ctx.keys.scope_bucket(memory.bucket), ctx.keys.usage, ctx.keys.stats,
            ctx.keys.term_stats(ns), ctx.keys.registry_version(ns), ctx.keys.epoch(ns),
            ctx.keys.sequence, ctx.keys.namespaces, *indexes, *guard,
            str(ttl_ms), memory.id, expiry, str(memory.created_at),
            "1" if memory.explicit_id else "0", fresh_token(), str(len(delta)), ns,
            *(x for name, amount in delta.items() for x in (name, str(amount))),
            *record_fields(memory, ctx.lexical_form),
        )
    )  # fmt: skip


def _cluster_registrations(ctx: StoreContext, memory: NewMemory) -> list[Command]:
    """The sorted sets that list a memory (a cluster write sends them before the record:
    a write cut short by a node going down then leaves entries that name a missing
    memory, which readers skip, never a stored memory nothing lists)."""
    expiry = str(memory.expires_at) if memory.expires_at is not None else "+inf"
    sets = ctx.keys.expiry_sets(memory.namespace_token, memory.agent_token, memory.thread_token)
    bucket = ctx.keys.scope_bucket(memory.bucket)
    return [
        *(command("ZADD", key, expiry, memory.id) for key in sets),
        command("ZADD", bucket, str(memory.created_at), memory.id),
    ]


def _cluster_record(ctx: StoreContext, memory: NewMemory, ttl: float | None) -> list[Command]:
    """The memory's hash (and, for a caller-chosen id, the reset of its usage)."""
    key = ctx.keys.memory(memory.id)
    fields = record_fields(memory, ctx.lexical_form)
    if ttl is None:
        write = Command(("HSET", key, *fields))
    else:
        ttl_ms = max(1, math.ceil(ttl * 1000))
        write = Command(("EVAL", scripts.WRITE_WITH_TTL, "1", key, str(ttl_ms), *fields))
    # A caller-chosen id may replace a memory: the new one starts with no usage.
    reset = [command("HDEL", ctx.keys.usage, *ctx.keys.usage_fields(memory.id))]
    return [write, *(reset if memory.explicit_id else ())]


def _registered_and_numbered(
    ctx: StoreContext, chunk: Sequence[tuple[NewMemory, float | None]]
) -> Operation[Sequence[tuple[NewMemory, float | None]]]:
    """A cluster write's first round trip: reserve the chunk's write numbers (the write
    counter and the memories live in different slots) and register the memories."""
    registrations = [c for memory, _ in chunk for c in _cluster_registrations(ctx, memory)]
    namespaces = sorted({m.namespace_token for m, _ in chunk})
    registrations += [bump(ctx.keys.registry_version(ns)) for ns in namespaces]
    listed = command("SADD", ctx.keys.namespaces, *namespaces)
    replies = yield from execute_batch(
        [command("INCRBY", ctx.keys.sequence, str(len(chunk))), *registrations, listed]
    )
    if isinstance(replies[-1], WrongTypeError):
        logger.warning(
            "store %s: %s is not a set (%s); the memories are stored and registered, "
            "stats and prune find their namespaces by a scan",
            ctx.keys.name, ctx.keys.namespaces, replies[-1],
        )  # fmt: skip
        ctx.count("bookkeeping_failures")
        replies = replies[:-1]
    raise_first_error(replies)
    first = integer(replies[0]) - len(chunk) + 1
    return [(replace(m, sequence=first + i), ttl) for i, (m, ttl) in enumerate(chunk)]


def _report_bookkeeping(ctx: StoreContext, replies: Sequence[Any]) -> None:
    """Log and count the writes whose script could not reset a usage counter or count
    the write (reply 2: another writer replaced that key by another type); the memories
    and their registrations were written."""
    failed = sum(1 for reply in replies if not isinstance(reply, AgentMemoryError) and reply == 2)
    if failed:
        logger.warning(
            "store %s: %d write(s) could not update %s or %s (not a hash); the memories "
            "are stored and registered",
            ctx.keys.name, failed, ctx.keys.usage, ctx.keys.stats,
        )  # fmt: skip
        ctx.count("bookkeeping_failures", failed)


def _check_width(ctx: StoreContext, reply: Any, ids: Sequence[str]) -> None:
    """React to the width ``{name}:__mem_meta`` recorded when a write batch ran: gone
    (the server was wiped) or another one (the name reopened by a store of another
    width) marks the identity stale, for :func:`ensure_ready` to check (record it again,
    or refuse) before the next operation; another width also fails this write, whose
    memories landed with vectors of the old width."""
    if isinstance(reply, Exception) or ctx.dim is None:
        return  # the write's own replies tell what went wrong
    if reply is None:
        ctx.identity_stale = True
        return
    recorded = text(reply)
    if recorded == str(ctx.dim):
        return
    ctx.identity_stale = True
    raise IndexMismatchError(
        f"store {ctx.keys.name!r} now records {recorded}-dimensional vectors but this "
        f"store's embedder produces {ctx.dim} (was the server wiped and the name reopened "
        "by a store of another width?); this write landed with vectors no search of the "
        f"store will find: memories {', '.join(ids)} (forget them, and open the store with "
        f"an embedder of width {recorded}, or use another name)"
    )


def _status(reply: Any) -> Any:
    """A standalone write script's status (its reply, or the first element of the
    reply of one that replaced a memory: :data:`~agent_memory.schema.scripts.WRITE_MEMORY`)."""
    return reply[0] if isinstance(reply, list) else reply


def _replaced_bookkeeping(
    ctx: StoreContext, chunk: Sequence[tuple[NewMemory, float | None]], replies: Sequence[Any]
) -> Operation[None]:
    """Take out what the memories a standalone write replaced under caller-chosen ids
    left behind: their registrations in the sets the new memories do not belong to and
    their terms (one round trip, only when a write replaced one; not counted as
    forgets). A record another library wrote was never registered nor counted: the
    script reset its usage, nothing else is left."""
    replaced: list[Deleted] = []
    for (memory, _), reply in zip(chunk, replies, strict=True):
        d = deleted_from(memory.id, reply[1:]) if isinstance(reply, list) else None
        if d is not None and d.namespace is not None and d.session is not None:
            replaced.append(d)
    commands = bookkeeping(ctx, replaced, counter=None)
    if commands:
        done = yield from execute_batch(commands)
        raise_unless_wrong_type(ctx, commands, done)


def _tolerate_bookkeeping(
    ctx: StoreContext, commands: Sequence[Command], replies: Sequence[Any]
) -> list[Any]:
    """A cluster write's replies with the refusals of its bookkeeping (usage reset,
    counters, term statistics: keys another writer replaced by another type) logged,
    counted and cleared, as the standalone write scripts do: the memories are stored.
    A refused write of a memory's own hash stays an error."""
    out = list(replies)
    failed = 0
    for i, (cmd, reply) in enumerate(zip(commands, replies, strict=False)):
        key = str(cmd.args[3] if cmd.name.upper() == "EVAL" else cmd.args[1])
        if isinstance(reply, WrongTypeError) and not key.startswith(ctx.keys.prefix):
            out[i] = None
            failed += 1
    if failed:
        logger.warning(
            "store %s: %d bookkeeping step(s) of a write failed (a key of another type); "
            "the memories are stored and registered",
            ctx.keys.name, failed,
        )  # fmt: skip
        ctx.count("bookkeeping_failures", failed)
    return out


def _cluster_bookkeeping(ctx: StoreContext, memories: Sequence[NewMemory]) -> list[Command]:
    """What a cluster write of a batch counts apart from its records, per namespace, after
    them in the same round trip: the ``remembers`` counter and, when a caller chose an id
    (it may replace a vector a portable mirror holds), the epoch; the registrations and
    the registry version went in the first round trip (:func:`_registered_and_numbered`).
    Standalone write scripts do all of it themselves."""
    commands: list[Command] = []
    for ns in sorted({m.namespace_token for m in memories}):
        mine = [m for m in memories if m.namespace_token == ns]
        commands.append(command("HINCRBY", ctx.keys.stats, "remembers", str(len(mine))))
        if any(m.explicit_id for m in mine):
            commands.append(bump(ctx.keys.epoch(ns)))
    return commands


def _terms_commands(ctx: StoreContext, memories: Sequence[NewMemory]) -> list[Command]:
    """A batch's texts added to their namespaces' term statistics once (a hundred texts
    share most of their terms: a few hundred increments instead of a thousand; a single
    write on a standalone server keeps them in its script), sent before the writes in
    the same pipeline: a ``forget`` from another client that lands between a write and
    these commands takes the memory's terms out, and added after it they would stay
    counted for a memory that is gone. Added before, a forget in between
    finds no memory yet (and takes nothing out); only a write that then fails leaves
    its terms counted. A cluster's pipeline keeps the order per node only, so there the
    race remains. Not atomic with the writes: slightly stale statistics do not change
    rankings measurably."""
    commands: list[Command] = []
    for ns in sorted({m.namespace_token for m in memories}):
        texts = [m.content for m in memories if m.namespace_token == ns]
        adjust = adjust_args(ctx.keys.term_stats(ns), stats_delta(texts, 1))
        if adjust is not None:
            commands.append(Command(adjust))
    return commands


def remember_many(
    ctx: StoreContext,
    inputs: Sequence[MemoryInput],
    *,
    dedupe: bool = False,
    evict: bool = True,
) -> Operation[list[str]]:
    """Validate all, embed in one batch, write in pipelined chunks, then enforce caps.

    With ``dedupe``, a memory within ``ctx.settings.dedupe_distance`` of one in the same exact
    scope (stored, or earlier in the batch) refreshes it and returns its id instead.
    ``evict=False`` (not with ``dedupe``) leaves ``max_items_per_scope`` to the caller (a
    consolidation enforces it once the memories its writes replace are deleted).
    """
    validated = [
        validate_input(i, ctx.settings.max_content_bytes, ctx.settings.label_policy) for i in inputs
    ]
    if not validated:
        return []
    yield from ensure_ready(ctx)
    vectors = yield from embed_texts(ctx, [v.content for v in validated])
    now = ctx.now_ms()
    memories: list[tuple[NewMemory, float | None]] = []
    for inp, v, vector in zip(inputs, validated, vectors, strict=True):
        expires = now + math.ceil(v.ttl * 1000) if v.ttl is not None else None
        memory = NewMemory(
            id=v.id, content=v.content, vector=vector, importance=v.importance, tags=v.tags,
            scope=v.scope, durability=v.durability, created_at=now, expires_at=expires,
            source=v.source, subject=v.subject, date=v.date, metadata_json=v.metadata_json,
            labels=v.labels, explicit_id=inp.id is not None,
        )  # fmt: skip
        memories.append((memory, v.ttl))
    if not dedupe:
        # An id given twice: the last memory under it is the one written (and labelled);
        # each input still answers with its id.
        written = last_per_id(memories)
        yield from write_memories(ctx, written, evict=evict)
        yield from label_after_commit(ctx, [m for m, _ in written])
        return [m.id for m, _ in memories]
    # The search and the write happen under claims on the scopes written, so two
    # writers of one text cannot both find nothing and both store it.
    ids, fresh = yield from under_claims(
        ctx, [m.bucket for m, _ in memories], _deduplicated_write(ctx, memories)
    )
    yield from label_after_commit(ctx, [m for m, _ in last_per_id(fresh)])
    ctx.count("deduplicated", len(memories) - len(fresh))
    return ids


def _deduplicated_write(
    ctx: StoreContext, memories: Sequence[tuple[NewMemory, float | None]]
) -> Operation[tuple[list[str], list[tuple[NewMemory, float | None]]]]:
    """Refresh the memories' stored duplicates and write the others; returns the id
    each input ended as, and the memories written."""
    targets, seqs = yield from find_duplicates(
        ctx, [m for m, _ in memories], ctx.settings.dedupe_distance
    )
    stored = {t for t in targets if t is not None} - {m.id for m, _ in memories}
    refreshes: dict[str, Refresh] = {}
    for (memory, _), target in zip(memories, targets, strict=True):
        if target is not None and target in stored:
            ns = memory.namespace_token
            sets = ctx.keys.expiry_sets(ns, memory.agent_token, memory.thread_token)
            refresh = Refresh(
                target, seqs[target], memory.importance, memory.expires_at, tuple(sets),
                ctx.keys.registry_version(ns),
            )  # fmt: skip
            refreshes[target] = merge_refresh(refreshes.get(target), refresh)
    gone = yield from refresh_existing(ctx, [refreshes[t] for t in sorted(refreshes)])
    ids: list[str] = []
    fresh: list[tuple[NewMemory, float | None]] = []
    # A stored duplicate gone before its refresh (forgotten, expired by the store's
    # clock): the first of the batch's writes that found it is written in its place,
    # and the others collapse into that one, as into any earlier write of the batch.
    replaced: dict[str, str] = {}
    # by id: the place in ``fresh`` of the memory written under it, which takes in
    # the importance, lifetime and access of the later copies collapsing into it
    place: dict[str, int] = {}
    for pair, found in zip(memories, targets, strict=True):
        memory = pair[0]
        if found is None or (found in gone and found not in replaced):
            if found is not None:
                replaced[found] = memory.id
            place[memory.id] = len(fresh)
            fresh.append(pair)
            ids.append(memory.id)
            continue
        target = replaced[found] if found in gone else found
        if target in place:
            fresh[place[target]] = absorb(fresh[place[target]], pair)
        ids.append(target)
    yield from write_memories(ctx, fresh)
    return ids, fresh


def label_after_commit(ctx: StoreContext, memories: Sequence[NewMemory]) -> Operation[None]:
    """Run the store's labeler on committed memories; best-effort.

    A labeler that raises or returns labels outside the policy leaves the memory valid
    and unlabelled by it (logged and counted as ``labeler_failures``). The labels land
    only while the memory still holds the namespace, text and labels written (a write
    under its id meanwhile keeps its own).
    """
    if ctx.settings.labeler is None or not memories:
        return
    commands: list[Command] = []
    namespaces: set[str] = set()
    for memory in memories:
        extra = yield from run_labeler(ctx, memory.content, what=f"memory {memory.id}")
        if extra is None:
            continue
        try:
            merged = check_labels(
                {
                    k: [*memory.labels.get(k, ()), *extra.get(k, ())]
                    for k in {*memory.labels, *extra}
                },
                ctx.settings.label_policy,
            )
        except InvalidInputError as exc:  # together over the policy's limits: kept as they were
            labeler_failed(ctx, f"memory {memory.id}", exc)
            continue
        if merged == memory.labels:
            continue
        # only on the memory written: one written under its id since (another text,
        # namespace or labels) keeps its own (the guard's reply -1: nothing written)
        written = {
            L.F_NAMESPACE: memory.namespace_token,
            L.F_CONTENT: memory.content,
            L.F_LABELS_RAW: label_fields(memory.labels)[1],
        }
        commands.append(
            guarded_update(
                ctx.keys.memory(memory.id), memory.id, written,
                guard=tuple(written), writes=label_fields(merged),
            )
        )  # fmt: skip
        namespaces.add(memory.namespace_token)
    commands += [bump(ctx.keys.epoch(ns)) for ns in sorted(namespaces)]
    replies = yield from execute_writes(ctx, commands)
    for reply in replies:
        if isinstance(reply, AgentMemoryError):
            logger.warning("storing labeler labels on %s failed: %s", ctx.keys.name, reply)
            ctx.count("labeler_failures")


def last_per_id(
    memories: Sequence[tuple[NewMemory, float | None]],
) -> list[tuple[NewMemory, float | None]]:
    """``memories`` with only the last of those that share an id, at its place (pure):
    within one batch a later record under an id replaces an earlier one entirely, as it
    would have in a later batch (never a mix of the two, nor both counted)."""
    last = {memory.id: index for index, (memory, _) in enumerate(memories)}
    if len(last) == len(memories):
        return list(memories)
    return [pair for index, pair in enumerate(memories) if last[pair[0].id] == index]


def write_memories(
    ctx: StoreContext,
    memories: Sequence[tuple[NewMemory, float | None]],
    *,
    evict: bool = True,
    guards: Mapping[str, Sequence[Any]] | None = None,
) -> Operation[set[str]]:
    """Write ``memories`` in pipelined chunks (several under one caller-chosen id: only
    the last is written, :func:`last_per_id`), then enforce the scope caps. ``guards``
    (by id: field count, fields, expected values; standalone servers) write those
    memories only over a record that still holds what was read (an adoption), in
    place of the deletion of the memory replaced; returns the ids a guard refused."""
    guards = guards or {}
    refused: set[str] = set()
    written = last_per_id(memories)
    cap = ctx.config.max_items_per_scope if evict else None
    buckets: dict[str, tuple[str, list[str]]] = {}
    for start in range(0, len(written), _WRITE_CHUNK):
        chunk: Sequence[tuple[NewMemory, float | None]] = written[start : start + _WRITE_CHUNK]
        guarded = any(m.id in guards for m, _ in chunk)
        if guarded and ctx.settings.cluster:
            # the records a guard protects, deleted first while unchanged (no script
            # can check them and write the listings in other slots at once)
            mine = {m.id: guards[m.id] for m, _ in chunk if m.id in guards}
            lost = yield from clear_if_unchanged(ctx, mine)
            refused |= lost
            chunk = [(m, ttl) for m, ttl in chunk if m.id not in lost]
            if not chunk:
                continue
        chosen = [m.id for m, _ in chunk if m.explicit_id and m.id not in guards]
        if chosen and ctx.settings.cluster:
            # A caller-chosen id replaces whatever memory holds it, entirely: written
            # over, the old one's registrations in its scope (possibly another), its
            # other fields, its TTL and its terms in the statistics would stay. (A
            # standalone write script deletes it in the same step and answers what
            # its bookkeeping needs: :func:`_replaced_bookkeeping`.)
            yield from clear_for_replacement(ctx, chosen)
        # added up once per batch (in each script when a guard may refuse the write)
        terms_apart = ctx.settings.cluster or (len(chunk) > 1 and not guarded)
        if ctx.settings.cluster:
            chunk = yield from _registered_and_numbered(ctx, chunk)
            commands = [c for memory, ttl in chunk for c in _cluster_record(ctx, memory, ttl)]
        else:
            commands = [
                _write_script(
                    ctx, memory, ttl, with_terms=not terms_apart, guard=guards.get(memory.id, ())
                )
                for memory, ttl in chunk
            ]
        new = [memory for memory, _ in chunk]
        terms = _terms_commands(ctx, new) if terms_apart else []
        if ctx.settings.cluster:
            commands += _cluster_bookkeeping(ctx, new)
        commands = [*terms, *commands]
        waits = wait_commands(ctx)
        # the store's recorded width, read in the same batch (no round trip of its own)
        width = command("HGET", ctx.keys.meta, "dim")
        replies = yield from execute_writes(ctx, [width, *commands, *waits])
        _check_width(ctx, replies.pop(0), [m.id for m, _ in chunk])
        if ctx.settings.cluster:
            replies = _tolerate_bookkeeping(ctx, commands, replies)
        raise_first_error(replies)
        if not ctx.settings.cluster:
            scripted = replies[len(terms) : len(terms) + len(chunk)]
            yield from _replaced_bookkeeping(ctx, chunk, scripted)
            _report_bookkeeping(ctx, [_status(reply) for reply in scripted])
            refused |= {
                m.id for (m, _), reply in zip(chunk, replies[len(terms) :], strict=False)
                if m.id in guards and reply == 0
            }  # fmt: skip
        if waits:
            check_replicated(ctx, replies[-1], f"a write of {len(chunk)} memories")
        for memory, _ in chunk:
            if memory.id in refused:
                continue
            buckets[memory.bucket] = (
                memory.namespace_token,
                ctx.keys.member_indexes(
                    memory.namespace_token, memory.agent_token, memory.thread_token
                ),
            )
    if cap is not None:
        for bucket, (ns, indexes) in buckets.items():
            yield from evict_over_capacity(ctx, ns, bucket, cap, indexes)
    return refused
