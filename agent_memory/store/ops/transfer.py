"""``export`` / ``import_records``: lossless JSON-lines records of memories.

A record is a JSON object::

    {"format": "agent-memory/1", "id", "content", "importance", "tags", "scope",
     "durability", "created_at", "last_accessed_at", "access_count",
     "ttl_remaining_ms" (null: no expiry), "source", "subject", "date", "metadata",
     "dim", "embedder" (the store's embedder id; absent when the store records none),
     "vector" (list of float32 values; absent when exported without vectors)}

Floats of a float32 vector survive a JSON round trip exactly, so exporting with vectors
and importing without ``reembed`` restores identical recall results. Vectors are taken
as they are only from the same embedder: a record naming another embedder than the one
the store records is refused (a record naming none, from an older export, is taken).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import damaged, unreadable
from agent_memory.core.checks import MAX_TTL_SECONDS
from agent_memory.core.effects import Command, Operation, execute_batch
from agent_memory.core.replies import raw_bytes, text
from agent_memory.errors import AgentMemoryError, InvalidInputError, ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.labels import LabelPolicy
from agent_memory.schema.records import NewMemory, blob_vector
from agent_memory.schema.types import Scope
from agent_memory.schema.utility import MANUAL_HIGH, MANUAL_LOW, Contexts, parse_contexts
from agent_memory.store.ops.embedding import embed_texts
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.read import item_commands, matching_ids, parse_items
from agent_memory.store.ops.write import MemoryInput, validate_input, write_memories
from agent_memory.store.validation import (
    MAX_COUNT,
    MAX_TIMESTAMP_MS,
    check_whole,
    shown,
    unit_vector,
)

FORMAT = "agent-memory/1"


def export_ids(ctx: StoreContext, flt: MemoryFilter) -> Operation[list[str]]:
    """Ids of the memories to export, oldest first."""
    matched = yield from matching_ids(ctx, flt)
    matched.sort(key=lambda pair: (pair[1], pair[0]))
    return [memory_id for memory_id, _ in matched]


def export_records(
    ctx: StoreContext, ids: Sequence[str], *, include_vectors: bool
) -> Operation[list[dict[str, Any]]]:
    """Records of ``ids`` (those still alive), in order."""
    if not ids:
        return []
    reads = item_commands(ctx, ids)
    commands = list(reads)
    if include_vectors:
        commands += [Command(("HGET", ctx.keys.memory(m), L.F_VECTOR), binary=True) for m in ids]
    replies = yield from execute_batch(commands)
    learned: dict[str, dict[str, str]] = {}

    def without_damage(memory_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        # Learning state no writer makes is exported without it (reported once, here),
        # and must not make the whole record unreadable (and so left out of the export).
        learned[memory_id] = _learning(ctx, memory_id, fields)
        kept = {k: v for k, v in fields.items() if k not in _LEARNING_FIELDS}
        return {**kept, **learned[memory_id]}

    fetched = parse_items(ctx, ids, replies[: len(reads)], repair=without_damage)
    vectors = replies[len(reads) :]
    now = ctx.now_ms()
    records = []
    for index, (_, _, item) in enumerate(fetched):
        if item is None:
            continue
        record: dict[str, Any] = {
            "format": FORMAT, "id": item.id, "content": item.content,
            "importance": item.importance, "tags": list(item.tags),
            "scope": {k: getattr(item.scope, k) for k in ("namespace", "agent_id", "thread_id", "session_id")},
            "durability": item.durability, "created_at": item.created_at,
            "last_accessed_at": item.last_accessed_at, "access_count": item.access_count,
            "ttl_remaining_ms": item.expires_at - now if item.expires_at is not None else None,
            "source": item.source, "subject": item.subject, "date": item.date,
            "metadata": dict(item.metadata), "dim": ctx.dim,
            "labels": {k: list(v) for k, v in item.labels.items()},
            "exposures": item.exposures,
            "learning": learned[item.id],
        }  # fmt: skip
        if ctx.embedder_id is not None:
            record["embedder"] = ctx.embedder_id
        if include_vectors:
            blob = vectors[index]
            if isinstance(blob, AgentMemoryError):
                raise blob
            if blob is not None:
                try:
                    record["vector"] = [float(x) for x in blob_vector(raw_bytes(blob), ctx.dim)]
                except ReplyParseError as exc:  # a damaged vector: skipped like any record
                    unreadable(ctx, item.id, exc)
                    continue
        records.append(record)
    return records


_LEARNING_FIELDS = (L.F_EVAL_SUM, L.F_EVAL_WEIGHT, L.F_MANUAL, L.F_CONTEXTS, L.F_REINFORCED)


def _learning(ctx: StoreContext, memory_id: str, fields: Mapping[str, Any]) -> dict[str, str]:
    """A memory's learning state as :func:`import_records` takes it back. Damage no
    writer makes (a value that is not UTF-8, not a number or out of the range the store
    writes, per-context entries that are not ``[sum, weight, updated_ms]`` with a weight
    >= 0) is left out, logged and counted: the record stays importable and the rest of
    its state travels."""
    out: dict[str, str] = {}
    for name in _LEARNING_FIELDS:
        if name not in fields:
            continue
        try:
            value = text(fields[name])
        except ReplyParseError as exc:
            _damaged_learning(ctx, memory_id, name, str(exc))
            continue
        if name == L.F_CONTEXTS:
            contexts, damage = parse_contexts(value)
            kept = _restorable(contexts)
            if damage is None and len(kept) < len(contexts):
                damage = f"{len(contexts) - len(kept)} of its entries are out of range"
            if damage is not None:
                _damaged_learning(ctx, memory_id, name, damage)
                value = json.dumps({k: list(v) for k, v in kept.items()}, separators=(",", ":"))
        else:
            try:
                value = _learning_value(name, value)
            except InvalidInputError as exc:
                _damaged_learning(ctx, memory_id, name, str(exc))
                continue
        out[name] = value
    problem = _eval_problem(out)
    if problem is not None:  # its weight was left out, or a foreign writer's sum
        _damaged_learning(ctx, memory_id, L.F_EVAL_SUM, problem)
        del out[L.F_EVAL_SUM]
    return out


def _damaged_learning(ctx: StoreContext, memory_id: str, name: str, why: str) -> None:
    damaged(ctx, memory_id, f"its {name}", why, outcome="exported without it")


def _present(record: Mapping[str, Any], key: str, default: Any) -> Any:
    """``record[key]``, or ``default`` when it is absent or null (only then: a falsy
    value of another type is left for the caller's type check)."""
    value = record.get(key)
    return default if value is None else value


def _restored_fields(record: Mapping[str, Any]) -> tuple[str, ...]:
    learning = _present(record, "learning", {})
    if not isinstance(learning, Mapping):
        raise InvalidInputError("record learning state must be an object", field="learning")
    restored = {
        name: _learning_value(name, value)
        for name in _LEARNING_FIELDS
        if (value := learning.get(name)) is not None
    }
    problem = _eval_problem(restored)
    if problem is not None:
        raise InvalidInputError(problem, field=f"learning.{L.F_EVAL_SUM}")
    out = [x for name, value in restored.items() for x in (name, value)]
    exposures = _whole(record, "exposures", 0, high=MAX_COUNT)
    if exposures > 0:
        out += [L.F_EXPOSURES, str(exposures)]
    return tuple(out)


# How the scripts (Lua ``tonumber``) and the server (``HINCRBYFLOAT``) read a number:
# Python's float() also takes " 1", "1_000" and "infinity", which they would not.
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _learning_value(name: str, value: object) -> str:
    """One learning field's text to store, refused unless the store itself could have
    written it: any other value changes how the memory ranks and decays, and a negative
    weight cannot even be read back."""
    field = f"learning.{name}"
    if isinstance(value, str):
        try:  # a lone surrogate would fail only once the write encodes it
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(
                f"{name} is not valid Unicode (a lone surrogate)", field=field
            ) from exc
    if name == L.F_CONTEXTS:
        if not isinstance(value, str):
            raise InvalidInputError(f"{name} must be JSON text", field=field)
        _check_contexts(value, field)
        return value
    number = _learning_number(value)
    if number is None or not math.isfinite(number):
        raise InvalidInputError(f"{name} is not a finite number", field=field)
    if name == L.F_EVAL_WEIGHT and number < 0:
        raise InvalidInputError(f"{name} must be >= 0, got {shown(value)}", field=field)
    if name == L.F_MANUAL and not MANUAL_LOW <= number <= MANUAL_HIGH:
        raise InvalidInputError(
            f"{name} must be in [{MANUAL_LOW:g}, {MANUAL_HIGH:g}] (as feedback() "
            f"takes it), got {shown(value)}",
            field=field,
        )
    if name == L.F_REINFORCED:
        if not (number.is_integer() and 0 <= number <= MAX_TIMESTAMP_MS):
            raise InvalidInputError(
                f"{name} must be a time in whole ms in [0, {MAX_TIMESTAMP_MS}], got {shown(value)}",
                field=field,
            )
        return str(int(number))
    return value if isinstance(value, str) else str(value)


def _eval_problem(learning: Mapping[str, str]) -> str | None:
    """What is wrong with the eval aggregates together (``None``: nothing). Each
    evaluation adds ``(score - 0.5) * w`` to the sum and ``w`` to the weight, so the sum
    stays within half the weight (up to rounding); beyond it, a sum of 1e308 over a
    weight of 1e-308 would read as the best memory there is."""
    total = float(learning.get(L.F_EVAL_SUM, 0))
    weight = float(learning.get(L.F_EVAL_WEIGHT, 0))
    if abs(total) <= weight / 2 + _ROUNDING * max(1.0, weight):
        return None
    return f"{L.F_EVAL_SUM} {total!r} is beyond half its {L.F_EVAL_WEIGHT} {weight!r}"


_ROUNDING = 1e-9


def _learning_number(value: object) -> float | None:
    """``value`` (text or a JSON number) as a float; ``None``: not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an int beyond any float
            return math.inf
    if isinstance(value, str) and _NUMBER.fullmatch(value):
        return float(value)
    return None


def _check_contexts(value: str, field: str) -> None:
    contexts, damage = parse_contexts(value)
    if damage is None and len(_restorable(contexts)) < len(contexts):
        damage = f"an entry has a negative weight or a time outside [0, {MAX_TIMESTAMP_MS}]"
    if damage is not None:
        raise InvalidInputError(f"{L.F_CONTEXTS} is damaged: {damage}", field=field)


def _restorable(contexts: Contexts) -> dict[str, tuple[float, float, int]]:
    """The per-context entries the learning script could have written."""
    return {
        digest: entry
        for digest, entry in contexts.items()
        if entry[1] >= 0 and 0 <= entry[2] <= MAX_TIMESTAMP_MS
    }


def _whole(
    record: Mapping[str, Any], key: str, default: int, *, high: int, low: int | None = 0
) -> int:
    value = record.get(key)
    return default if value is None else check_whole(value, field=key, low=low, high=high)


def parse_record(
    record: object, now: int, max_bytes: int, policy: LabelPolicy | None = None
) -> tuple[MemoryInput, dict[str, Any]] | None:
    """A record's memory input and restored state (``None``: it expired in transit),
    held to what the store's own writes accept: ``remember``'s checks (with the label
    ``policy``), ``feedback``'s range, times a ``datetime`` holds and counts the scripts
    add to exactly. Only an absent or null field takes its default: a falsy value of
    another type (``""``, ``[]``, ``0``, ``false``) is refused like any wrong type.

    Raises:
        InvalidInputError: a malformed record (``field`` names the record's key).
    """
    if not isinstance(record, Mapping):
        raise InvalidInputError("each record must be a JSON object", field="records")
    if record.get("format", FORMAT) != FORMAT:
        raise InvalidInputError(f"unknown record format {record.get('format')!r}", field="format")
    remaining = record.get("ttl_remaining_ms")
    if remaining is not None:
        remaining = check_whole(
            remaining, field="ttl_remaining_ms", low=None, high=MAX_TTL_SECONDS * 1000
        )
        if remaining <= 0:
            return None  # expired while in transit
    # Absent or null is the default; any other value, falsy ones ("", [], 0, false)
    # included, is checked for its type (never read as the default).
    scope_raw = _present(record, "scope", {})
    if not isinstance(scope_raw, Mapping):
        raise InvalidInputError("record scope must be an object", field="scope")
    metadata = record.get("metadata")
    if isinstance(metadata, Mapping) and not metadata:
        metadata = None  # an empty object is no metadata, as export writes it
    memory_input = MemoryInput(
        content=record.get("content"),  # type: ignore[arg-type]
        importance=record.get("importance", 0.5),
        tags=_present(record, "tags", ()),
        ttl=remaining / 1000 if remaining is not None else None,
        scope=Scope(**{k: scope_raw.get(k) for k in ("namespace", "agent_id", "thread_id", "session_id")}),
        source=record.get("source"), subject=record.get("subject"), date=record.get("date"),
        metadata=metadata, durability=record.get("durability", "shared"),
        id=record.get("id"), labels=record.get("labels"),
    )  # fmt: skip
    validated = validate_input(memory_input, max_bytes, policy)
    created = _whole(record, "created_at", now, high=MAX_TIMESTAMP_MS)
    extra = {
        "created_at": created,
        "last_accessed_at": _whole(record, "last_accessed_at", created, high=MAX_TIMESTAMP_MS),
        "access_count": _whole(record, "access_count", 0, high=MAX_COUNT),
        "vector": record.get("vector"),
        "embedder": _embedder(record),
        "restored": _restored_fields(record),
        "validated": validated,
    }
    return memory_input, extra


def _embedder(record: Mapping[str, Any]) -> str | None:
    """The id of the embedder that made the record's vector (``None``: not recorded)."""
    value = record.get("embedder")
    if value is not None and not (isinstance(value, str) and value):
        raise InvalidInputError(
            f"embedder must be a non-empty string (an embedder id), got {shown(value)}",
            field="embedder",
        )
    return value


def check_embedder(store_embedder: str | None, record_embedder: str | None) -> None:
    """Refuse a vector another embedder made than the store's (both known; pure): two
    models of the same width live in different vector spaces."""
    if store_embedder is None or record_embedder is None or store_embedder == record_embedder:
        return
    raise InvalidInputError(
        f"its vector was made by embedder {record_embedder!r}, this store's is "
        f"{store_embedder!r}: import with reembed=True to compute new vectors",
        field="embedder",
    )


def _named(records: Sequence[object], index: int, exc: InvalidInputError) -> InvalidInputError:
    """``exc`` naming the record it is about (a batch may hold thousands)."""
    record = records[index]
    which = f"record {index + 1} of {len(records)}"
    memory_id = record.get("id") if isinstance(record, Mapping) else None
    if isinstance(memory_id, str):
        which += f" (id {shown(memory_id)})"
    return InvalidInputError(f"{which}: {exc}", field=exc.field)


def import_records(
    ctx: StoreContext,
    records: Sequence[object],
    *,
    reembed: bool,
    guards: Mapping[str, Sequence[Any]] | None = None,
) -> Operation[list[str]]:
    """Restore records (ids, timestamps, TTL remaining, scope...); every record is
    validated before anything is written. ``guards``: see :func:`write_memories`
    (the ids they refused are not returned).

    Raises:
        InvalidInputError: a malformed record, a vector of the wrong dimension, or
            (without ``reembed``) a vector of another embedder than the store's (the
            message names the record, ``field`` its key).
    """
    now = ctx.now_ms()
    parsed: list[tuple[int, MemoryInput, dict[str, Any]]] = []
    for index, record in enumerate(records):
        try:
            found = parse_record(
                record, now, ctx.settings.max_content_bytes, ctx.settings.label_policy
            )
        except InvalidInputError as exc:
            raise _named(records, index, exc) from exc
        if found is not None:
            parsed.append((index, *found))
    if not parsed:
        return []
    yield from ensure_ready(ctx)
    vectors: list[NDArray[np.float32] | None] = []
    need_embedding = [
        i for i, (_, _, extra) in enumerate(parsed) if reembed or extra["vector"] is None
    ]
    for index, _, extra in parsed:
        if not reembed and extra["vector"] is not None:
            try:
                check_embedder(ctx.embedder_id, extra["embedder"])
                vectors.append(unit_vector(extra["vector"], ctx.dim, field="vector"))
            except InvalidInputError as exc:
                raise _named(records, index, exc) from exc
        else:
            vectors.append(None)
    embedded = yield from embed_texts(ctx, [parsed[i][1].content for i in need_embedding])
    for i, fresh in zip(need_embedding, embedded, strict=True):
        vectors[i] = fresh
    memories: list[tuple[NewMemory, float | None]] = []
    for (_, _, extra), vector in zip(parsed, vectors, strict=True):
        v = extra["validated"]
        assert vector is not None
        expires = now + math.ceil(v.ttl * 1000) if v.ttl is not None else None
        memory = NewMemory(
            id=v.id, content=v.content, vector=vector, importance=v.importance, tags=v.tags,
            scope=v.scope, durability=v.durability, created_at=extra["created_at"],
            expires_at=expires, source=v.source, subject=v.subject, date=v.date,
            metadata_json=v.metadata_json, last_accessed_at=extra["last_accessed_at"],
            access_count=extra["access_count"], labels=v.labels, extra_fields=extra["restored"],
            explicit_id=True,
        )  # fmt: skip
        memories.append((memory, v.ttl))
    refused = yield from write_memories(ctx, memories, guards=guards)
    return [m.id for m, _ in memories if m.id not in refused]
