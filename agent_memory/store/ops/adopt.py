"""Adopt memories that another library wrote under the store's prefix.

The BetterDB libraries (``@betterdb/agent-memory`` and its Python port
``betterdb-agent-memory``) write hashes at ``{name}:mem:{id}`` with the fields both
libraries share, but none of ours: no ``session`` tag (which every recall filters on), no
registry entry (which ``list`` and ``stats`` walk), no lexical terms. Such a record is
*foreign*; adopting it rewrites it as one of ours under the same id, keeping its text,
vector, importance, timestamps, access count, tags, remaining TTL and scope:

====================  =======================================================
their field           our memory
====================  =======================================================
``namespace``         ``scope.namespace`` (absent: the default namespace)
``agentId``           ``scope.agent_id``
``threadId``          ``scope.thread_id``
(none)                ``durability="shared"``, no session
``tags`` (``a,b``)    ``tags`` (``("a", "b")``)
====================  =======================================================

The fields they read keep their meaning, so their library goes on finding the memory. An
unscoped record, or one of their namespace ``_d`` (our default namespace, as their library
sees it), joins the default namespace (their library then shows ``namespace`` as ``_d``).

A record that cannot be adopted is left untouched, logged and counted as
``foreign_skipped`` (once per process; the periodic check then counts it as known and
does not scan for it again): a vector of another size, of zero length or with NaN, a timestamp,
count or importance that is not a finite number, text over the store's limit, a bad id,
or a namespace, agent, thread or tag that is not plain ASCII letters and digits
(at most 64 of them). We index
such values as tokens (the valkey-search 1.0 dialect cannot escape them); rewriting them
would hide the memory from the queries of the library that wrote it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.backends.ft_index import drop_foreign_index, is_missing
from agent_memory.core.effects import (
    Command,
    Operation,
    command,
    execute_batch,
    scan_keys,
)
from agent_memory.core.replies import integer, optional_text, raw_bytes, text
from agent_memory.errors import (
    AgentMemoryError,
    IndexMismatchError,
    InvalidInputError,
    ReplyParseError,
)
from agent_memory.schema import layout as L
from agent_memory.schema.encoding import DEFAULT_NAMESPACE_TOKEN, MAX_PLAIN, encode_value
from agent_memory.schema.records import blob_vector
from agent_memory.search.parse import parse_index_info
from agent_memory.store.ops.ensure import ensure_index
from agent_memory.store.ops.forget import expected_value
from agent_memory.store.ops.namespaces import registry_keys
from agent_memory.store.ops.read import count_in, foreign_estimate
from agent_memory.store.ops.transfer import FORMAT, import_records, parse_record
from agent_memory.store.validation import check_id, shown, unit_vector

logger = logging.getLogger("agent_memory.store")

_CHUNK = 500
FOREIGN_FIELDS = (
    L.F_CONTENT, L.F_IMPORTANCE, L.F_CREATED, L.F_ACCESSED, L.F_ACCESS_COUNT, L.F_TAGS,
    L.F_THREAD, L.F_AGENT, L.F_NAMESPACE, L.F_SOURCE, L.F_SUBJECT, L.F_DATE,
)  # fmt: skip
GUARDED = (*FOREIGN_FIELDS, L.F_VECTOR, L.F_SESSION)  # what a rewrite checks is unchanged


@dataclass(frozen=True, slots=True)
class AdoptionReport:
    """What :meth:`~agent_memory.MemoryStore.adopt_foreign` did.

    Attributes:
        adopted: foreign memories now stored as ours (same ids).
        skipped: foreign records left as they were (the log says why): those that
            cannot be adopted, and those changed (or adopted by another process)
            between the read and the rewrite, which the next adoption takes.
        index_replaced: a foreign index was dropped (never its records) and ours created.
    """

    adopted: int = 0
    skipped: int = 0
    index_replaced: bool = False


def foreign_ids(ctx: StoreContext) -> Operation[list[str]]:
    """Ids of the hashes under the store's prefix that carry no ``session`` field."""
    prefix = ctx.keys.prefix
    keys = yield from scan_keys(prefix + "*")
    ids = sorted({text(k)[len(prefix) :] for k in keys})
    found: list[str] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        replies = yield from execute_batch(
            [command("HEXISTS", ctx.keys.memory(i), L.F_SESSION) for i in chunk]
        )
        # A key of another type answers an error: it is not a memory of anyone's.
        found += [i for i, r in zip(chunk, replies, strict=True) if r == 0 or r is False]
    return found


def foreign_record(
    memory_id: str, values: Sequence[Any], blob: Any, pttl: int, dim: int
) -> dict[str, Any]:
    """The import record (``agent-memory/1``) of one foreign hash (pure).

    Raises:
        InvalidInputError: the record cannot become a memory of this store.
    """
    check_id(memory_id)
    fields = dict(zip(FOREIGN_FIELDS, (optional_text(v) for v in values), strict=True))
    if fields[L.F_CONTENT] is None:
        raise InvalidInputError("the record has no content", field="content")
    if blob is None:
        raise InvalidInputError("the record has no vector", field="vector")
    try:
        vector = blob_vector(raw_bytes(blob), dim)
    except ReplyParseError as exc:
        raise InvalidInputError(str(exc), field="vector") from exc
    # Checked here, not only by import_records: there a zero or NaN vector would fail
    # the whole chunk, every sound record with it.
    unit_vector(vector, dim)
    created = _number(fields, L.F_CREATED)
    if fields[L.F_NAMESPACE] == DEFAULT_NAMESPACE_TOKEN:
        # Our default namespace as their library sees it (and writes to it): its field
        # stays ``_d``, the value our writes give it.
        fields[L.F_NAMESPACE] = None
    tags = [t for t in (fields[L.F_TAGS] or "").split(L.TAG_SEPARATOR) if t]
    for name, value in ((L.F_NAMESPACE, fields[L.F_NAMESPACE]), (L.F_AGENT, fields[L.F_AGENT]),
                        (L.F_THREAD, fields[L.F_THREAD]), *((L.F_TAGS, t) for t in tags)):  # fmt: skip
        if value is not None and encode_value(value) != value:
            plain = value.isascii() and value.isalnum()
            why = f"is over {MAX_PLAIN} characters" if plain else "is not plain letters and digits"
            raise InvalidInputError(
                f"its {name} {shown(value)} {why}: indexed as a token, it would no longer "
                "match the queries of the library that wrote it",
                field=name,
            )
    return {
        "format": FORMAT, "id": memory_id, "content": fields[L.F_CONTENT],
        "importance": _number(fields, L.F_IMPORTANCE, 0.5), "tags": tags,
        "scope": {"namespace": fields[L.F_NAMESPACE], "agent_id": fields[L.F_AGENT],
                  "thread_id": fields[L.F_THREAD]},
        "durability": "shared", "created_at": created,
        "last_accessed_at": _number(fields, L.F_ACCESSED, created),
        "access_count": _number(fields, L.F_ACCESS_COUNT, 0),
        "ttl_remaining_ms": pttl if pttl > 0 else None,
        "source": fields[L.F_SOURCE], "subject": fields[L.F_SUBJECT], "date": fields[L.F_DATE],
        "vector": [float(x) for x in vector],
    }  # fmt: skip


def _number(fields: Mapping[str, str | None], name: str, default: Any = None) -> Any:
    raw = fields[name]
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise InvalidInputError(f"the record's {name} is not a number", field=name) from exc
    # float() accepts "nan", "inf" and "1e400" (infinite), which no timestamp or count
    # can be: int() of them would raise past the caller's skip of a bad record.
    if not math.isfinite(value):
        raise InvalidInputError(f"the record's {name} {raw!r} is not a finite number", field=name)
    return int(value) if name != L.F_IMPORTANCE else value


def adopt_ids(ctx: StoreContext, ids: Sequence[str]) -> Operation[AdoptionReport]:
    """Adopt the foreign records ``ids`` (every foreign record of the store), a chunk
    per round of reads and writes; those left as they were become the store's known
    skipped records (``ctx.foreign_skipped``)."""
    assert ctx.dim is not None
    adopted: list[str] = []
    skipped: list[str] = []
    changed = 0
    now = ctx.now_ms()
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        commands: list[Command] = []
        for memory_id in chunk:
            key = ctx.keys.memory(memory_id)
            commands += [
                command("HMGET", key, *FOREIGN_FIELDS),
                Command(("HGET", key, L.F_VECTOR), binary=True),
                command("PTTL", key),
            ]
        replies = yield from execute_batch(commands)
        records: list[dict[str, Any]] = []
        guards: dict[str, list[Any]] = {}
        for i, memory_id in enumerate(chunk):
            values, blob, pttl = replies[3 * i : 3 * i + 3]
            try:
                for reply in (values, blob, pttl):
                    if isinstance(reply, AgentMemoryError):
                        raise InvalidInputError(f"unreadable: {reply}", field="record")
                if integer(pttl) == -2:
                    continue  # deleted since it was found
                record = foreign_record(memory_id, values, blob, integer(pttl), ctx.dim)
                parse_record(record, now, ctx.settings.max_content_bytes)
            except InvalidInputError as exc:
                _left(ctx, memory_id, exc)
                skipped.append(memory_id)
                continue
            records.append(record)
            # Rewritten only while it holds what was read, and is still foreign.
            guards[memory_id] = [
                str(len(GUARDED)), *GUARDED,
                *(expected_value(v) for v in (*values, blob)), expected_value(None),
            ]  # fmt: skip
        written = yield from import_records(ctx, records, reembed=False, guards=guards)
        adopted += written
        for memory_id in sorted(set(guards) - set(written)):
            logger.info(
                "foreign record %s of %s changed while it was adopted (or was adopted by "
                "another process): left for the next adoption", memory_id, ctx.keys.name,
            )  # fmt: skip
            ctx.count("foreign_changed")
            changed += 1
    ctx.count("foreign_adopted", len(adopted))
    # What this pass left is what the next checks expect the index to hold beyond the
    # registries (one skipped before and deleted since is forgotten).
    ctx.foreign_skipped = set(skipped)
    return AdoptionReport(len(adopted), len(skipped) + changed)


def _left(ctx: StoreContext, memory_id: str, why: InvalidInputError) -> None:
    """Log and count (``foreign_skipped``) a foreign record left as it is, once per
    process: every later scan finds it again (a debug line then)."""
    if memory_id in ctx.foreign_skipped:
        logger.debug(
            "foreign record %s of %s still left as it is: %s", memory_id, ctx.keys.name, why
        )
        return
    logger.warning("foreign record %s of %s left as it is: %s", memory_id, ctx.keys.name, why)
    ctx.count("foreign_skipped")


def adopt_foreign(ctx: StoreContext) -> Operation[AdoptionReport]:
    """Find every foreign record of the store and adopt it."""
    ids = yield from foreign_ids(ctx)
    if not ids:
        ctx.foreign_skipped = set()
        return AdoptionReport()
    report = yield from adopt_ids(ctx, ids)
    return report


def _index_holds_more(ctx: StoreContext, registries: list[str]) -> Operation[bool]:
    """Whether the index holds more documents than ``registries`` list memories and
    the last scan left as they were (foreign records it could not adopt: counted as
    known, or every check would scan the keyspace for them again); one round trip. No
    index (another process dropped it, to re-create it or not): none to adopt now; the
    next search re-creates it."""
    items, replies = yield from count_in(ctx, registries, command("FT.INFO", ctx.keys.index))
    if is_missing(replies[0]):
        return False
    if isinstance(replies[0], AgentMemoryError):
        raise replies[0]
    known = items + len(ctx.foreign_skipped)
    return foreign_estimate(parse_index_info(replies[0]).num_docs, known) > 0


def adopt_if_present(ctx: StoreContext, registries: list[str] | None = None) -> Operation[int]:
    """Adopt foreign records when the index holds more documents than the store has
    memories (one round trip when it does not, after reading the namespace set unless
    the registries are given; a scan of the keyspace when it does); the number
    adopted."""
    if registries is None:
        registries = yield from registry_keys(ctx)
    if not (yield from _index_holds_more(ctx, registries)):
        return 0
    # Short: foreign records, or a namespace a process of an older version created (its
    # writes do not list their namespace): a scan finds the latter and lists it.
    registries = yield from registry_keys(ctx, rescan=True)
    if not (yield from _index_holds_more(ctx, registries)):
        return 0
    report = yield from adopt_foreign(ctx)
    if report.adopted or report.skipped:
        logger.info(
            "%s: adopted %d foreign memories, left %d as they were",
            ctx.keys.name, report.adopted, report.skipped,
        )  # fmt: skip
    return report.adopted


@dataclass
class AdoptionWatch:
    """What the periodic foreign check remembers between runs: the store's namespace
    registries, so that a check counts them without reading the namespace set again."""

    registries: list[str] | None = None


def adopt_if_changed(ctx: StoreContext, watch: AdoptionWatch) -> Operation[int]:
    """The periodic check (``adopt_interval``): ``FT.INFO`` and the sizes of the known
    registries in one round trip; only when the index holds more documents than they
    list (a foreign write, or a namespace created since the last check) is the
    namespace set read again and, if still short, the keyspace scanned and the foreign
    records adopted."""
    if watch.registries is not None and not (yield from _index_holds_more(ctx, watch.registries)):
        return 0
    watch.registries = yield from registry_keys(ctx)
    adopted = yield from adopt_if_present(ctx, watch.registries)
    return adopted


def take_over(ctx: StoreContext, *, replace_index: bool) -> Operation[AdoptionReport]:
    """Operation behind ``adopt_foreign()``: ensure the store (replacing a foreign index
    only when asked, never its records), then adopt every foreign record."""
    replaced = False
    adopted_on_start = 0
    if ctx.backend is None or ctx.dim is None:
        try:
            status = yield from ensure_index(ctx)
        except IndexMismatchError:
            if not replace_index:
                raise
            replaced = yield from drop_foreign_index(ctx)
            if not replaced:
                raise
            logger.warning("%s: dropped the foreign index %s", ctx.keys.name, ctx.keys.index)
            status = yield from ensure_index(ctx)
        adopted_on_start = status.adopted
    report = yield from adopt_foreign(ctx)
    return AdoptionReport(report.adopted + adopted_on_start, report.skipped, replaced)
