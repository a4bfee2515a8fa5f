"""``forget`` / ``forget_by_scope``: delete memories and their bookkeeping.

Each memory is deleted by a script that returns what its bookkeeping needs (content and
location), so only the caller that deleted it unregisters it, counts it and removes its
text from the term statistics. A batch costs two round trips: the deletions, then the
bookkeeping of what was deleted (registries, agent/thread indexes, scope buckets, usage
counters, the ``forgets`` counter and the term statistics).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation, call, command, execute_batch
from agent_memory.core.replies import lenient_text, optional_text, raise_first_error
from agent_memory.errors import AgentMemoryError, InvalidInputError, WrongTypeError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.lexical import adjust_args, stats_delta
from agent_memory.schema.types import MemoryItem
from agent_memory.schema.versions import bump
from agent_memory.store.ops.durability import check_replicated, wait_commands
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.read import exact_index, fetch_items, is_wrong_type, matching_ids
from agent_memory.store.ops.settle import execute_writes, settle_each_primary
from agent_memory.store.validation import check_id, check_ids

logger = logging.getLogger("agent_memory.store")

_CHUNK = 1000
# What a judgement of a memory (:func:`forget_judged`) can rest on: every field of a
# MemoryItem but those reads change (usage, reinforcement, utility, expiry).
JUDGED_FIELDS = (
    L.F_CONTENT, L.F_IMPORTANCE, L.F_CREATED, L.F_TAGS, L.F_TAGS_RAW, L.F_SOURCE, L.F_SUBJECT,
    L.F_DATE, L.F_METADATA, L.F_LABELS_RAW, L.F_NAMESPACE, L.F_AGENT, L.F_THREAD,
    L.F_SESSION, L.F_SCOPE_RAW,
)  # fmt: skip
# What a deleted memory's bookkeeping needs, in the order DELETE_MEMORY returns them.
_DELETED_FIELDS = (L.F_CONTENT, L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, L.F_SESSION)
# What lists a memory (:func:`relist_stored_again`), in the order it reads them.
_LISTED_BY = (L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, L.F_SESSION, L.F_EXPIRES, L.F_CREATED)


@dataclass(frozen=True, slots=True)
class Deleted:
    """A memory this caller deleted, with what its bookkeeping needs."""

    id: str
    content: str
    namespace: str | None
    agent: str | None
    thread: str | None
    session: str | None


def delete_command(ctx: StoreContext, memory_id: str) -> Command:
    """The deletion of one memory (reply: see :func:`deleted_from`)."""
    return Command(("EVAL", scripts.DELETE_MEMORY, "1", ctx.keys.memory(memory_id)))


def deleted_from(memory_id: str, reply: Any) -> Deleted | None:
    """What a :func:`delete_command` deleted (``None``: the memory was already gone)."""
    if isinstance(reply, AgentMemoryError):
        raise reply
    if reply is None:
        return None
    # A corrupt field counts as absent, so an unreadable memory can always be deleted
    # (the terms of corrupt content stay in the statistics).
    values = [lenient_text(v) for v in list(reply)[:5]]
    values += [None] * (5 - len(values))
    return Deleted(memory_id, values[0] or "", *values[1:])


def bookkeeping(
    ctx: StoreContext, deleted: Sequence[Deleted], *, counter: str | None = "forgets"
) -> list[Command]:
    """Unregister deleted memories everywhere, count them (``counter``: the store
    counter to add them to, ``None`` for none) and remove their texts from the term
    statistics (one batch). A deleted record this library did not write (no
    ``session`` field: a foreign one, see :mod:`~agent_memory.store.ops.adopt`) was
    never registered nor counted in the statistics: only its usage counters go.

    On a standalone server the memories listed in the same sets are unregistered by
    one script that spares, in each set, an id stored again since its deletion (an
    import, a caller-chosen id) by a memory that belongs there: that write registered it
    itself, atomically, and its registrations must stay, while the old memory's in
    another scope must go. A cluster keeps the registrations in other slots than the
    memory, so there they are removed as they are, and :func:`relist_stored_again`
    lists again, a round trip later, those whose record exists by then.
    """
    if not deleted:
        return []
    by_key: dict[str, list[str]] = {}
    texts: dict[str, list[str]] = {}
    by_owner: dict[tuple[str, str, str, str], list[str]] = {}
    unlisted: list[str] = []  # not written by this library: in none of its sets
    for d in deleted:
        if d.namespace is None or d.session is None:
            # Every write of ours stores a session token; a record without one another
            # library wrote (or one not adopted yet): never registered, its text never
            # added to the term statistics, so nothing of it is taken out of them.
            unlisted.append(d.id)
            continue
        owner = (d.namespace, d.agent or "", d.thread or "", d.session)
        texts.setdefault(d.namespace, []).append(d.content)
        if ctx.settings.cluster:
            unlisted.append(d.id)
            for key, _ in owned_sets(ctx, owner):
                by_key.setdefault(key, []).append(d.id)
        else:
            by_owner.setdefault(owner, []).append(d.id)
    commands: list[Command] = []
    for owner, ids in by_owner.items():
        sets = owned_sets(ctx, owner)
        keys, kinds = [key for key, _ in sets], [kind for _, kind in sets]
        commands.append(unregister_command(ctx, ids, keys, kinds, owner=owner))
    commands += [command("ZREM", key, *ids) for key, ids in by_key.items()]
    commands += [bump(ctx.keys.registry_version(ns)) for ns in sorted(texts)]
    usage = [f for memory_id in unlisted for f in ctx.keys.usage_fields(memory_id)]
    if usage:
        commands.append(command("HDEL", ctx.keys.usage, *usage))
    if counter is not None:
        commands.append(command("HINCRBY", ctx.keys.stats, counter, str(len(deleted))))
    for ns in sorted(texts):
        adjust = adjust_args(ctx.keys.term_stats(ns), stats_delta(texts[ns], -1))
        if adjust is not None:
            commands.append(Command(adjust))
    return commands


def owned_sets(ctx: StoreContext, owner: tuple[str, str, str, str]) -> list[tuple[str, str]]:
    """Every set that lists a memory of ``owner`` (namespace, agent, thread and session
    tokens, '' for none), each with what keeps an id in it (:data:`~agent_memory.schema.
    scripts.UNREGISTER`): the registry, the agent and thread indexes, the scope bucket."""
    ns, agent, thread, session = owner
    sets = [(ctx.keys.registry(ns), "n")]
    if agent:
        sets.append((ctx.keys.agent_index(ns, agent), "a"))
    if thread:
        sets.append((ctx.keys.thread_index(ns, thread), "t"))
    bucket = L.bucket_digest(ns, agent, thread, session)
    return [*sets, (ctx.keys.scope_bucket(bucket), "b")]


def unregister_command(
    ctx: StoreContext,
    ids: Sequence[str],
    sets: Sequence[str],
    kinds: Sequence[str] | None = None,
    *,
    owner: tuple[str, str, str, str] = ("", "", "", ""),
) -> Command:
    """The removal of deleted memories of ``owner`` from ``sets`` (all of them listed
    in the same sets) and of their usage counters, except from the sets a memory stored
    again meanwhile under the same id belongs to (``kinds``: what keeps an id in each
    set, see :data:`~agent_memory.schema.scripts.UNREGISTER`; by default any record
    under the id keeps it everywhere)."""
    kinds = kinds if kinds is not None else ["*"] * len(sets)
    return Command(
        (
            "EVAL", scripts.UNREGISTER, str(1 + len(sets) + len(ids)),
            ctx.keys.usage, *sets, *(ctx.keys.memory(m) for m in ids),
            str(len(sets)), L.USAGE_EXPOSURES, L.USAGE_ACCESSES, *owner, *kinds, *ids,
        )
    )  # fmt: skip


def relist_stored_again(ctx: StoreContext, ids: Sequence[str]) -> Operation[int]:
    """On a cluster, list again those of ``ids`` (just unlisted) whose record exists
    (one pipelined round trip reading them, one more writing the listings of those
    found); returns how many. Nothing on a standalone server, whose unlisting checks
    each record in the same script.

    The listings live in other slots than the record, so a deletion's bookkeeping
    removes them unchecked a round trip after the record; a memory another client
    stored again under the id in between (an import, a caller-chosen id) registered
    itself before its record and would stay stored but unlisted (``list``, ``stats``,
    ``forget_by_scope`` go by the listings). Re-listed from what its record holds: the
    namespace registry and agent / thread indexes scored by its expiry, its scope
    bucket by its creation. Left open without cross-slot atomicity: a write whose
    registrations land before the unlisting and whose record lands after this read.
    A record this library did not write (no ``session``) was never listed: it stays so.
    """
    if not ctx.settings.cluster or not ids:
        return 0
    relisted = 0
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        replies = yield from execute_batch(
            [command("HMGET", ctx.keys.memory(m), *_LISTED_BY) for m in chunk]
        )
        commands: list[Command] = []
        namespaces: set[str] = set()
        for memory_id, reply in zip(chunk, replies, strict=True):
            if is_wrong_type(reply):
                continue  # not a hash: no memory of ours to list
            if isinstance(reply, AgentMemoryError):
                raise reply
            ns, agent, thread, session, expires, created = (lenient_text(v) for v in reply)
            if ns is None or session is None:
                continue  # gone (or never ours)
            expiry = expires if expires is not None and _is_integer(expires) else "+inf"
            sets = ctx.keys.expiry_sets(ns, agent, thread)
            commands += [command("ZADD", key, expiry, memory_id) for key in sets]
            bucket = ctx.keys.scope_bucket(L.bucket_digest(ns, agent or "", thread or "", session))
            since = created if created is not None and _is_integer(created) else "0"
            commands.append(command("ZADD", bucket, since, memory_id))
            namespaces.add(ns)
            relisted += 1
        if commands:
            commands += [bump(ctx.keys.registry_version(ns)) for ns in sorted(namespaces)]
            done = yield from execute_batch(commands)
            raise_unless_wrong_type(ctx, commands, done)
    return relisted


def _is_integer(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


def delete_memories(ctx: StoreContext, ids: Sequence[str]) -> Operation[list[Deleted]]:
    """Delete these memories (one round trip, a script per memory that reads and deletes
    it atomically); returns the ones this caller deleted, with what their bookkeeping
    needs (not those already gone or deleted by a racing caller)."""
    replies = yield from execute_writes(ctx, [delete_command(ctx, m) for m in ids])
    return [d for m, r in zip(ids, replies, strict=True) if (d := deleted_from(m, r))]


def unchanged_delete(
    ctx: StoreContext, memory_id: str, fields: Mapping[str, Any], names: Sequence[str]
) -> Command:
    """The deletion of a memory only while its fields ``names`` still hold what
    ``fields`` read (raw replies, ``None`` for absent): a decision made on them (a
    summary, a retention, a rank) holds for what is deleted."""
    expected = [expected_value(fields.get(name)) for name in names]
    return Command(
        (
            "EVAL", scripts.DELETE_IF_UNCHANGED, "1", ctx.keys.memory(memory_id),
            str(len(names)), *names, *expected,
        )
    )  # fmt: skip


def expected_value(value: Any) -> bytes:
    """What a guarded script compares a field with: ``=`` and the value read (raw
    reply), or empty for a field that was absent."""
    if value is None:
        return b""
    return b"=" + (value if isinstance(value, bytes) else str(value).encode("utf-8"))


def delete_checked(
    ctx: StoreContext,
    deletions: Sequence[tuple[str, Command]],
    *,
    counter: str | None = "forgets",
) -> Operation[list[str]]:
    """Run deletion scripts (:func:`delete_command` or :func:`unchanged_delete`) with
    the bookkeeping of what they deleted (``counter``: see :func:`bookkeeping`); returns
    the ids deleted here (not those gone already, deleted by a racing caller, or changed
    since they were read)."""
    out: list[str] = []
    for start in range(0, len(deletions), _CHUNK):
        chunk = deletions[start : start + _CHUNK]
        replies = yield from execute_writes(ctx, [cmd for _, cmd in chunk])
        deleted: list[Deleted] = []
        for (memory_id, _), reply in zip(chunk, replies, strict=True):
            if isinstance(reply, int) and reply == 0:
                continue  # changed since it was read: kept
            if (d := deleted_from(memory_id, reply)) is not None:
                deleted.append(d)
        commands = bookkeeping(ctx, deleted, counter=counter)
        if commands:
            waits = wait_commands(ctx)
            done = yield from execute_batch([*commands, *waits])
            raise_unless_wrong_type(ctx, commands, done)
            if waits:
                check_replicated(ctx, done[-1], f"a deletion of {len(deleted)} memories")
            yield from relist_stored_again(ctx, [d.id for d in deleted])
        out.extend(d.id for d in deleted)
    return out


def delete_ids(
    ctx: StoreContext,
    ids: Sequence[str],
    *,
    listed_in: str | None = None,
    counter: str | None = "forgets",
) -> Operation[int]:
    """Delete memories by id with all their bookkeeping; returns how many were deleted
    here. ``listed_in``: a set the ids were read from, cleared of all of them (also of
    those already gone, expired say); ``counter``: see :func:`bookkeeping` (``None``
    for the memories that writes under caller-chosen ids replace)."""
    total = 0
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        deleted = yield from delete_memories(ctx, chunk)
        commands = bookkeeping(ctx, deleted, counter=counter)
        if listed_in is not None and ctx.settings.cluster:
            commands.append(command("ZREM", listed_in, *chunk))  # another slot: no check
        elif listed_in is not None:
            # Only the ids whose memory is gone: one stored again meanwhile (an import
            # under its id) registered itself there and must stay listed.
            commands.append(unregister_command(ctx, chunk, [listed_in]))
        waits = wait_commands(ctx) if commands else []
        done = yield from execute_batch([*commands, *waits])
        raise_unless_wrong_type(ctx, commands, done)
        if waits:
            check_replicated(ctx, done[-1], f"a deletion of {len(deleted)} memories")
        yield from relist_stored_again(
            ctx, chunk if listed_in is not None else [d.id for d in deleted]
        )
        total += len(deleted)
    return total


def clear_for_replacement(ctx: StoreContext, ids: Sequence[str]) -> Operation[None]:
    """Delete the memories that writes under these caller-chosen ids will replace, with
    their bookkeeping (not counted as forgets).

    A cluster writes its records by plain commands, which valkey-search 1.0.x holds
    back on a key a script changed until a search reaches that key's node (and a script
    write there is not searchable until then): there the memories are read and deleted
    by plain commands too, pipelined in order, so the replacing write is answered (the
    fields read just before the ``DEL`` that deleted a memory give its bookkeeping).
    """
    if not ctx.settings.cluster:
        yield from delete_ids(ctx, ids, counter=None)
        return
    yield from settle_each_primary(ctx)  # a script may have changed them (update, recall)
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        keys = [ctx.keys.memory(m) for m in chunk]
        replies = yield from execute_batch(
            [
                c
                for key in keys
                for c in (command("HMGET", key, *_DELETED_FIELDS), command("DEL", key))
            ]
        )
        raise_first_error(replies[1::2])
        deleted: list[Deleted] = []
        for memory_id, fields, count in zip(chunk, replies[0::2], replies[1::2], strict=True):
            # a key that held no hash reads as an error: deleted, nothing to unregister
            readable = [] if isinstance(fields, AgentMemoryError) else fields
            if count and (d := deleted_from(memory_id, readable)) is not None:
                deleted.append(d)
        commands = bookkeeping(ctx, deleted, counter=None)
        if commands:
            done = yield from execute_batch(commands)
            raise_unless_wrong_type(ctx, commands, done)


def clear_if_unchanged(
    ctx: StoreContext, guards: Mapping[str, Sequence[Any]]
) -> Operation[set[str]]:
    """On a cluster, delete the records that guarded writes (adoptions) replace, each
    only while it still holds what was read (``guards``: by id, the field count, fields
    and expected values of :data:`~agent_memory.schema.scripts.DELETE_IF_UNCHANGED`);
    returns the ids refused (changed since the read, adopted by another process, or
    gone), which must not be written. One round trip (and, where valkey-search 1.0
    holds back plain writes after a script's, the searches that settle each primary
    before the plain writes that follow).

    A standalone server checks the record in the write's own script; a cluster's write
    is several commands (registrations, then the record), so this check comes first: a
    change landing between it and the record's write is still overwritten. A guard
    requires the record to be foreign (no ``session``): never registered nor counted in
    the term statistics, its usage counters reset by the write, so its deletion leaves
    no bookkeeping.
    """
    ids = list(guards)
    if not ids:
        return set()
    replies = yield from execute_writes(
        ctx,
        [
            Command(("EVAL", scripts.DELETE_IF_UNCHANGED, "1", ctx.keys.memory(m), *guards[m]))
            for m in ids
        ],
    )
    raise_first_error(replies)
    refused = {m for m, r in zip(ids, replies, strict=True) if r is None or r == 0}
    if len(refused) < len(ids):
        yield from settle_each_primary(ctx)  # the plain writes of the rewrite come next
    return refused


def is_unregister(cmd: Command) -> bool:
    """Whether ``cmd`` is an :func:`unregister_command`."""
    return cmd.name.upper() == "EVAL" and cmd.args[1] == scripts.UNREGISTER


def raise_unless_wrong_type(
    ctx: StoreContext, commands: Sequence[Command], replies: Sequence[Any]
) -> None:
    """Raise the first error of a deletion's bookkeeping, except a key another writer
    replaced by another type (the usage counters, a registry, the store counters): the
    memories are deleted and the rest of their bookkeeping done; that one is logged and
    counted."""
    for cmd, answer in zip(commands, replies, strict=False):
        reply = answer
        if is_unregister(cmd) and reply == 2:
            reply = WrongTypeError(f"a set or {ctx.keys.usage} is not of its type")
        if is_wrong_type(reply):
            logger.warning(
                "store %s: %s failed during a deletion (%s); the memories are deleted",
                ctx.keys.name, cmd.name, reply,
            )  # fmt: skip
            ctx.count("bookkeeping_failures")
            continue
        if isinstance(reply, AgentMemoryError):
            raise reply
    raise_first_error(replies[len(commands) :])


def forget(ctx: StoreContext, memory_id: str) -> Operation[bool]:
    """Delete one memory; ``False`` when it did not exist."""
    check_id(memory_id)
    yield from ensure_ready(ctx)  # the dialect decides whether the deletion is settled
    deleted = yield from delete_ids(ctx, [memory_id])
    return deleted > 0


def forget_many(ctx: StoreContext, ids: Iterable[str]) -> Operation[int]:
    """Delete memories by id (two round trips per 1000); returns how many existed."""
    checked = list(dict.fromkeys(check_ids(ids)))
    yield from ensure_ready(ctx)
    deleted = yield from delete_ids(ctx, checked)
    return deleted


def forget_judged(
    ctx: StoreContext, ids: Iterable[str], choose: Callable[[list[MemoryItem]], Any]
) -> Operation[int]:
    """Delete those of the memories ``ids`` that ``choose`` picks, judged on what is
    read here: each chunk of 1000 is read (missing and expired ones are left out),
    ``choose`` gets the items and returns the ids to delete among them, and each is
    deleted only while its :data:`JUDGED_FIELDS` still hold what was read (another
    client's change in between keeps it). Returns how many were deleted here.

    For a caller that filters memories in Python before deleting them (an adapter's
    delete by metadata): a filter passed on an earlier read is passed again, on the
    memory as it is deleted.

    Raises:
        InvalidInputError: malformed ``ids``, a ``choose`` that is not callable or that
            returns anything but ids of the items it was given; nothing more is deleted.
    """
    checked = list(dict.fromkeys(check_ids(ids)))
    if not callable(choose):
        raise InvalidInputError("choose must be callable", field="choose")
    yield from ensure_ready(ctx)
    total = 0
    for start in range(0, len(checked), _CHUNK):
        fetched = yield from fetch_items(ctx, checked[start : start + _CHUNK])
        read = {m: (fields, item) for m, fields, item in fetched if item is not None}
        if not read:
            continue
        picked = yield from call(choose, [item for _, item in read.values()], what="choose")
        if isinstance(picked, (str, bytes)) or not isinstance(picked, Iterable):
            raise InvalidInputError("choose must return the ids to delete", field="choose")
        chosen = list(dict.fromkeys(picked))
        if any(not isinstance(m, str) or m not in read for m in chosen):
            raise InvalidInputError(
                "choose must return ids of the memories it was given", field="choose"
            )
        deleted = yield from delete_checked(
            ctx, [(m, unchanged_delete(ctx, m, read[m][0], JUDGED_FIELDS)) for m in chosen]
        )
        total += len(deleted)
    return total


def forget_matching(ctx: StoreContext, flt: MemoryFilter) -> Operation[int]:
    """Delete every memory of the filter's namespace that matches it.

    When one id set holds exactly the filter's memories (a namespace, an agent or a
    thread), its members are deleted without reading any field first."""
    yield from ensure_ready(ctx)
    exact = exact_index(ctx, flt)
    if exact is None:
        matched = yield from matching_ids(ctx, flt, include_expired=True)
        deleted = yield from delete_ids(ctx, [memory_id for memory_id, _ in matched])
        return deleted
    listing = yield from execute_batch([command("ZRANGE", exact, "0", "-1")])
    if isinstance(listing[0], AgentMemoryError):
        raise listing[0]
    ids = [optional_text(x) or "" for x in listing[0] or []]
    deleted = yield from delete_ids(ctx, ids, listed_in=exact)
    return deleted
