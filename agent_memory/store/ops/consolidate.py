"""``consolidate``: summary mode (accumulation) and facts mode (supersession).

Both modes write new memories before deleting old ones, with deterministic ids, so a
run that crashes half-way is repaired by running it again: the re-run rewrites the same
ids and finishes the deletions. ``max_items_per_scope`` is enforced once the old ones
are deleted, sparing what the run wrote: a summary ranked below the rest of its scope
must not be evicted by the run that replaces its sources with it.

Summary mode deletes a source only while it holds what ``summarize`` was given: another
writer may change it while the callback runs (seconds, for a model).

Facts mode runs take no lock (the callback may run for long): two runs of one scope at
once may each write a live fact for one subject. Every run ends by keeping only the
newest live fact of each subject, after its own writes, so the later of two racing runs
sees both facts and removes the older one, and a run with nothing new to extract still
repairs what an interrupted run left.

Facts mode deletes a superseded, retracted or duplicate fact only while it holds what the
run judged it on (:data:`_FACT_UNCHANGED`): another writer may change it between the
read of the live facts and the deletion (a window that holds the embedding of the new
facts). A fact kept so is not reported as deleted, and its entry in the history archive
(written before the deletions, so that a crash never loses a deleted fact) is removed
again: the archive lists only facts a run deleted (a crash between the two leaves the
entry of a fact that stayed live).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Operation, call, command, execute_batch
from agent_memory.core.replies import integer, raise_first_error, text
from agent_memory.errors import AgentMemoryError, InvalidInputError
from agent_memory.schema import layout as L
from agent_memory.schema.encoding import encode_value, namespace_token, session_token
from agent_memory.schema.filters import MemoryFilter, scope_filter
from agent_memory.schema.types import Fact, MemoryItem, Scope
from agent_memory.store.facts import (
    check_fact,
    fact_content,
    fact_memory_id,
    newest_per_subject,
    parse_fact_date,
    subject_key,
    summary_memory_id,
)
from agent_memory.store.ops.capacity import evict_over_capacity
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.forget import delete_checked, unchanged_delete
from agent_memory.store.ops.read import fetch_items, matching_ids
from agent_memory.store.ops.write import MemoryInput, remember_many, validate_input
from agent_memory.store.validation import check_text

SUMMARY_SOURCE = "summary"
FACT_SOURCE = "fact"
_DERIVED = (SUMMARY_SOURCE, FACT_SOURCE)
_CHUNK = 1000
# What a summarised source must still hold to be deleted: what the summary was made of
# (text), what chose it (importance, tags) and which memory it is (an import may store
# another one under its id).
_UNCHANGED = (
    L.F_CONTENT, L.F_IMPORTANCE, L.F_TAGS, L.F_TAGS_RAW, L.F_CREATED,
    L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, L.F_SESSION,
)  # fmt: skip
# What a fact must still hold to be retired: what judged it superseded (subject, date,
# text, creation), what made it a live fact of the selection (source, tags) and which
# memory it is.
_FACT_UNCHANGED = (
    L.F_CONTENT, L.F_SUBJECT, L.F_DATE, L.F_SOURCE, L.F_TAGS, L.F_TAGS_RAW, L.F_CREATED,
    L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, L.F_SESSION,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Selection:
    """Which memories a consolidation looks at (at least one criterion is set)."""

    scope: Scope | None
    tags: tuple[str, ...]
    older_than_seconds: float | None
    max_importance: float | None

    def digest(self) -> str:
        raw = json.dumps(
            [repr(self.scope), self.tags, self.older_than_seconds, self.max_importance]
        ).encode("utf-8")
        return hashlib.blake2b(raw, digest_size=16).hexdigest()

    @property
    def target_scope(self) -> Scope:
        return self.scope or Scope()


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    """What a consolidation run did.

    Attributes:
        mode: ``"summary"`` or ``"facts"``.
        created: ids of the memories written (summaries or live facts).
        deleted: ids deleted (summarised sources, superseded or retracted facts).
        facts: the live facts written by this run.
        unmatched_tombstones: tombstones that matched no live fact.
        skipped: candidates not handed to the callback because an earlier run of the
            same selection already processed them (facts mode).
        callback_calls: how many times ``summarize`` / ``extract_facts`` was called.
    """

    mode: str
    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    facts: tuple[Fact, ...] = ()
    unmatched_tombstones: tuple[Fact, ...] = ()
    skipped: int = 0
    callback_calls: int = 0


def select_items(
    ctx: StoreContext,
    selection: Selection,
    *,
    sources: tuple[str, ...] | None,
    exclude: tuple[str, ...],
) -> Operation[list[MemoryItem]]:
    """Live memories of the selection, oldest first."""
    read = yield from _select(ctx, selection, sources=sources, exclude=exclude)
    return [item for item, _ in read]


def _select(
    ctx: StoreContext,
    selection: Selection,
    *,
    sources: tuple[str, ...] | None,
    exclude: tuple[str, ...],
) -> Operation[list[tuple[MemoryItem, Mapping[str, Any]]]]:
    """:func:`select_items`, each with the stored fields it was read from."""
    scope = selection.target_scope
    base = scope_filter(scope, selection.tags, session=scope.session_id)
    flt = MemoryFilter(
        namespace=base.namespace, session=base.session, agent=base.agent, thread=base.thread,
        tags=base.tags, sources=sources, exclude_sources=exclude,
    )  # fmt: skip
    matched = yield from matching_ids(ctx, flt)
    now = ctx.now_ms()
    items: list[tuple[MemoryItem, Mapping[str, Any]]] = []
    ids = [memory_id for memory_id, _ in matched]
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        fetched = yield from fetch_items(ctx, chunk)
        for _, fields, item in fetched:
            if item is None:
                continue
            if selection.older_than_seconds is not None and (
                item.created_at > now - selection.older_than_seconds * 1000
            ):
                continue
            if selection.max_importance is not None and item.importance > selection.max_importance:
                continue
            items.append((item, fields))
    items.sort(key=lambda pair: (pair[0].created_at, pair[0].sequence, pair[0].id))
    return items


SUMMARY_LISTED_SOURCES = 400
"""The most source ids a summary's metadata lists (ids of up to 128 characters keep it
well within ``MAX_METADATA_BYTES``); ``source_count`` counts them all."""


def summary_metadata(group: Sequence[MemoryItem]) -> dict[str, Any]:
    """A summary's metadata: how many sources it replaces, the creation times of the
    oldest and newest, and the ids of the oldest :data:`SUMMARY_LISTED_SOURCES`
    (``sources_truncated`` when there were more). The summary's id is derived from every
    source id (:func:`summary_memory_id`)."""
    ids = [i.id for i in group]
    metadata: dict[str, Any] = {
        "sources": ids[:SUMMARY_LISTED_SOURCES],
        "source_count": len(ids),
        "from": group[0].created_at,
        "to": group[-1].created_at,
    }
    if len(ids) > SUMMARY_LISTED_SOURCES:
        metadata["sources_truncated"] = True
    return metadata


def check_digest(digest: object, max_bytes: int) -> None:
    """A summary as ``summarize`` returned it: non-empty text within the store's
    ``max_content_bytes`` (and no control characters), or an error naming ``summarize``
    (nothing is written)."""
    if not isinstance(digest, str) or not digest.strip():
        raise InvalidInputError("summarize must return non-empty text", field="summarize")
    size = len(digest.strip().encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidInputError(
            f"summarize returned {size} bytes of text, over the store's max_content_bytes "
            f"({max_bytes}); nothing was written",
            field="summarize",
        )
    check_text(digest.strip(), field="summarize", max_bytes=max_bytes)


def consolidate_summary(
    ctx: StoreContext,
    selection: Selection,
    summarize: Callable[[list[MemoryItem]], Any],
    *,
    importance: float | None,
    delete_sources: bool,
) -> Operation[ConsolidationResult]:
    """One summary per exact scope among the candidates (earlier summaries and facts
    are never re-summarised)."""
    yield from ensure_ready(ctx)
    read = yield from _select(ctx, selection, sources=None, exclude=_DERIVED)
    groups: dict[tuple[Scope, str], list[MemoryItem]] = {}
    for item, _ in read:
        groups.setdefault((item.scope, item.durability), []).append(item)
    # Every summary but its text is built and validated before any callback runs: a
    # summary the store would refuse (its sources' tags over the limit) costs no call.
    planned: list[tuple[MemoryInput, list[MemoryItem]]] = []
    for (scope, durability), group in groups.items():
        source_ids = [i.id for i in group]
        tags = sorted({t for i in group for t in i.tags})
        planned.append((MemoryInput(
            content="-",  # the summary's text, once summarize returns it
            importance=importance if importance is not None else max(i.importance for i in group),
            tags=tags, scope=scope, source=SUMMARY_SOURCE,
            durability="session" if durability == "session" else "shared",
            metadata=summary_metadata(group),
            id=summary_memory_id(source_ids),
        ), group))  # fmt: skip
    for summary, _ in planned:
        validate_input(summary, ctx.settings.max_content_bytes, ctx.settings.label_policy)
    summaries: list[MemoryInput] = []
    for summary, group in planned:
        digest = yield from call(summarize, list(group), what="summarize")
        check_digest(digest, ctx.settings.max_content_bytes)
        summaries.append(replace(summary, content=digest.strip()))
    # Every summary is asked for and checked before anything is written, so a bad one
    # leaves the store as it was; the summaries are written before their sources go.
    created = (yield from remember_many(ctx, summaries, evict=False)) if summaries else []
    deleted: list[str] = []
    if delete_sources and read:
        deleted = yield from delete_checked(
            ctx,
            [
                (item.id, unchanged_delete(ctx, item.id, fields, _UNCHANGED))
                for item, fields in read
            ],
        )
    yield from _evict_sparing(ctx, groups, spared=created)
    yield from _count_run(ctx, "summary", 0)
    return ConsolidationResult(
        "summary", tuple(created), tuple(deleted), skipped=0, callback_calls=len(summaries)
    )


def _evict_sparing(
    ctx: StoreContext, scopes: Iterable[tuple[Scope, str]], *, spared: Collection[str]
) -> Operation[None]:
    """``max_items_per_scope`` in each ``(scope, durability)`` a run wrote to, never
    evicting ``spared`` (what the run wrote)."""
    cap = ctx.config.max_items_per_scope
    if cap is None:
        return
    for scope, durability in dict.fromkeys(scopes):
        ns = namespace_token(scope.namespace)
        agent = encode_value(scope.agent_id) if scope.agent_id else ""
        thread = encode_value(scope.thread_id) if scope.thread_id else ""
        session = session_token(scope.session_id if durability == "session" else None)
        bucket = L.bucket_digest(ns, agent, thread, session)  # as NewMemory.bucket
        indexes = ctx.keys.member_indexes(ns, agent or None, thread or None)
        yield from evict_over_capacity(ctx, ns, bucket, cap, indexes, spare=spared)


def _state_key(ctx: StoreContext, selection: Selection) -> str:
    return f"{ctx.keys.name}:__mem_facts:{selection.digest()}"


def history_key(ctx: StoreContext, scope: Scope, subject: str) -> str:
    """Where superseded facts of a subject are kept (``keep_fact_history=True``)."""
    flt = scope_filter(scope, (), session=scope.session_id)
    raw = "\x1f".join(
        (flt.namespace, flt.agent or "", flt.thread or "", flt.session or "", subject_key(subject))
    ).encode("utf-8")
    return f"{ctx.keys.name}:__mem_fact_history:{hashlib.blake2b(raw, digest_size=16).hexdigest()}"


def _unprocessed(
    ctx: StoreContext, state: str, items: list[MemoryItem]
) -> Operation[list[MemoryItem]]:
    if not items:
        return []
    replies = yield from execute_batch([command("SISMEMBER", state, i.id) for i in items])
    fresh = []
    for item, reply in zip(items, replies, strict=True):
        if isinstance(reply, AgentMemoryError):
            raise reply
        if not integer(reply):
            fresh.append(item)
    return fresh


def _when(item: MemoryItem) -> datetime:
    try:
        parsed = parse_fact_date(item.date)
    except InvalidInputError:
        parsed = None
    return parsed or datetime.fromtimestamp(item.created_at / 1000, tz=timezone.utc)


def _live_facts(
    ctx: StoreContext, selection: Selection
) -> Operation[list[tuple[MemoryItem, Mapping[str, Any]]]]:
    """The facts a selection reconciles with, oldest to newest, each with the stored
    fields it was read from: ``source="fact"`` memories in its scope carrying its tags.
    Its age and importance criteria choose the sources to extract from, not the facts:
    the facts a run writes (importance 0.8, just created) are the ones the next run
    supersedes."""
    fact_set = replace(selection, older_than_seconds=None, max_importance=None)
    read = yield from _select(ctx, fact_set, sources=(FACT_SOURCE,), exclude=())
    # A total order, so racing runs that see the same facts keep the same one.
    return sorted(read, key=lambda pair: (_when(pair[0]), pair[0].created_at,
                                          pair[0].sequence, pair[0].id))  # fmt: skip


def consolidate_facts(
    ctx: StoreContext,
    selection: Selection,
    extract_facts: Callable[[list[MemoryItem]], Any],
    *,
    importance: float,
    keep_history: bool,
) -> Operation[ConsolidationResult]:
    """Extract facts from source memories not seen before and reconcile them by subject."""
    yield from ensure_ready(ctx)
    state = _state_key(ctx, selection)
    sources = yield from select_items(ctx, selection, sources=None, exclude=_DERIVED)
    fresh = yield from _unprocessed(ctx, state, sources)
    skipped = len(sources) - len(fresh)
    run_time = datetime.fromtimestamp(ctx.now_ms() / 1000, tz=timezone.utc)
    scope = selection.target_scope
    created: list[str] = []
    written: list[Fact] = []
    unmatched: list[Fact] = []
    deleted: list[str] = []
    if fresh:
        created, written, unmatched, deleted = yield from _reconcile(
            ctx, selection, extract_facts, fresh, run_time,
            importance=importance, keep_history=keep_history,
        )  # fmt: skip
        replies = yield from execute_batch([command("SADD", state, *(i.id for i in fresh))])
        raise_first_error(replies)
    deleted += yield from _drop_duplicates(ctx, selection, run_time, keep_history=keep_history)
    if created:
        durability = "session" if scope.session_id else "shared"
        yield from _evict_sparing(ctx, [(scope, durability)], spared=created)
    # Every run counts, with or without new sources (it still repairs duplicates), as
    # every summary-mode run does.
    yield from _count_run(ctx, "facts", len(unmatched))
    return ConsolidationResult(
        "facts", tuple(created), tuple(deleted), tuple(written), tuple(unmatched),
        skipped=skipped, callback_calls=1 if fresh else 0,
    )  # fmt: skip


def _reconcile(
    ctx: StoreContext,
    selection: Selection,
    extract_facts: Callable[[list[MemoryItem]], Any],
    fresh: list[MemoryItem],
    run_time: datetime,
    *,
    importance: float,
    keep_history: bool,
) -> Operation[tuple[list[str], list[Fact], list[Fact], list[str]]]:
    """Extract facts from ``fresh`` and supersede or retract the live ones; returns the
    ids written, the facts written, the unmatched tombstones and the ids deleted."""
    extracted = yield from call(extract_facts, list(fresh), what="extract_facts")
    if not isinstance(extracted, Sequence) or isinstance(extracted, (str, bytes)):
        raise InvalidInputError("extract_facts must return a list of Fact", field="extract_facts")
    facts = [check_fact(f, position) for position, f in enumerate(extracted)]
    # Newest last: with several live facts of a subject the newest is the current one
    # (the others go in :func:`_drop_duplicates`).
    current = {
        subject_key(pair[0].subject or ""): pair
        for pair in (yield from _live_facts(ctx, selection))
    }
    scope = selection.target_scope
    writes: list[MemoryInput] = []
    written: list[Fact] = []
    superseded: list[tuple[MemoryItem, Mapping[str, Any]]] = []
    unmatched: list[Fact] = []
    for key, dated in newest_per_subject(facts, run_time).items():
        fact, when, held = dated.fact, dated.when, current.get(key)
        old = held[0] if held is not None else None
        if old is not None and _when(old) > when:
            continue  # what we hold is newer than this statement
        if fact.tombstone:
            if held is None:
                unmatched.append(fact)
            else:
                superseded.append(held)
            continue
        fid = fact_memory_id(selection.digest(), key, fact.statement, when)
        if old is not None and old.id == fid:
            continue  # unchanged
        write = MemoryInput(
            content=fact_content(fact, when, dated=True),
            importance=importance,
            scope=scope,
            tags=selection.tags,
            source=FACT_SOURCE,
            subject=fact.subject.strip(),
            date=when.isoformat().replace("+00:00", "Z"),
            durability="session" if scope.session_id else "shared",
            id=fid,
        )
        try:  # a fact the store refuses (too long) is the callback's, named by position
            validate_input(write, ctx.settings.max_content_bytes, ctx.settings.label_policy)
        except InvalidInputError as exc:
            raise InvalidInputError(
                f"fact {dated.order} is refused: {exc}", field="extract_facts"
            ) from exc
        writes.append(write)
        written.append(fact)
        if held is not None:
            superseded.append(held)
    created = (yield from remember_many(ctx, writes, evict=False)) if writes else []
    deleted = yield from _retire(ctx, scope, superseded, run_time, keep_history=keep_history)
    return created, written, unmatched, deleted


def _drop_duplicates(
    ctx: StoreContext, selection: Selection, run_time: datetime, *, keep_history: bool
) -> Operation[list[str]]:
    """Keep only the newest live fact of each subject (racing runs, or a run interrupted
    between its writes and its deletions, leave several)."""
    newest: dict[str, tuple[MemoryItem, Mapping[str, Any]]] = {}
    stale: list[tuple[MemoryItem, Mapping[str, Any]]] = []
    for pair in (yield from _live_facts(ctx, selection)):
        key = subject_key(pair[0].subject or "")
        if key in newest:
            stale.append(newest[key])
        newest[key] = pair
    deleted = yield from _retire(
        ctx, selection.target_scope, stale, run_time, keep_history=keep_history
    )
    return deleted


def _retire(
    ctx: StoreContext,
    scope: Scope,
    read: list[tuple[MemoryItem, Mapping[str, Any]]],
    run_time: datetime,
    *,
    keep_history: bool,
) -> Operation[list[str]]:
    """Delete facts no longer live, each only while it holds what it was judged on
    (:data:`_FACT_UNCHANGED`, as ``read``); returns the ids deleted here. With
    ``keep_history`` they are archived first (a crash in between archives them again,
    never loses them) and the entries of those not deleted here (changed since they
    were read, or gone already) are removed again."""
    if not read:
        return []
    items = [item for item, _ in read]
    records = _archive(ctx, scope, items, run_time) if keep_history else {}
    if records:
        replies = yield from execute_batch([command("RPUSH", k, r) for k, r in records.values()])
        raise_first_error(replies)
    deleted = yield from delete_checked(
        ctx, [(i.id, unchanged_delete(ctx, i.id, fields, _FACT_UNCHANGED)) for i, fields in read]
    )
    done = set(deleted)
    # The newest entry equal to the one this run pushed: a racing run's may be older.
    unclaim = [command("LREM", k, "-1", r) for m, (k, r) in records.items() if m not in done]
    if unclaim:
        replies = yield from execute_batch(unclaim)
        raise_first_error(replies)
    return deleted


def _archive(
    ctx: StoreContext, scope: Scope, items: list[MemoryItem], run_time: datetime
) -> dict[str, tuple[str, str]]:
    """The history entry of each fact: its list key and its record."""
    records: dict[str, tuple[str, str]] = {}
    for item in items:
        record = {
            "id": item.id, "subject": item.subject, "statement": item.content,
            "date": item.date, "superseded_at": run_time.isoformat(),
        }  # fmt: skip
        records[item.id] = (history_key(ctx, scope, item.subject or ""), json.dumps(record))
    return records


def fact_history(ctx: StoreContext, subject: str, scope: Scope) -> Operation[list[dict[str, Any]]]:
    """Superseded facts of a subject, oldest first."""
    replies = yield from execute_batch(
        [command("LRANGE", history_key(ctx, scope, subject), "0", "-1")]
    )
    if isinstance(replies[0], AgentMemoryError):
        raise replies[0]
    return [json.loads(text(r)) for r in replies[0] or []]


def _count_run(ctx: StoreContext, mode: str, unmatched: int) -> Operation[None]:
    commands = [command("HINCRBY", ctx.keys.stats, "consolidations", "1")]
    if unmatched:
        commands.append(command("HINCRBY", ctx.keys.stats, "unmatched_tombstones", str(unmatched)))
    replies = yield from execute_batch(commands)
    raise_first_error(replies)
    ctx.count(f"consolidations:{mode}")
    ctx.count("unmatched_tombstones", unmatched)
