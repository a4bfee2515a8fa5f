"""``export`` / ``import_records``: lossless JSON-lines records of memories.

A record is a JSON object::

    {"format": "agent-memory/1", "id", "content", "importance", "tags", "scope",
     "durability", "created_at", "last_accessed_at", "access_count",
     "ttl_remaining_ms" (null: no expiry), "source", "subject", "date", "metadata",
     "dim", "vector" (list of float32 values; absent when exported without vectors)}

Floats of a float32 vector survive a JSON round trip exactly, so exporting with vectors
and importing without ``reembed`` restores identical recall results.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import damaged, unreadable
from agent_memory.core.effects import Command, Operation, execute_batch
from agent_memory.core.replies import raw_bytes, text
from agent_memory.errors import AgentMemoryError, InvalidInputError, ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.records import NewMemory, blob_vector
from agent_memory.schema.types import Scope
from agent_memory.schema.utility import parse_contexts
from agent_memory.store.ops.embedding import embed_texts
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.read import item_commands, matching_ids, parse_items
from agent_memory.store.ops.write import MemoryInput, validate_input, write_memories
from agent_memory.store.validation import unit_vector

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
    fetched = parse_items(ctx, ids, replies[: len(reads)])
    vectors = replies[len(reads) :]
    now = ctx.now_ms()
    records = []
    for index, (_, fields, item) in enumerate(fetched):
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
            "learning": _learning(ctx, item.id, fields),
        }  # fmt: skip
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
    writer makes (a value that is not UTF-8 or not a finite number, per-context entries
    that are not ``[sum, weight, updated_ms]``) is left out, logged and counted: the
    record stays importable and the rest of its state travels."""
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
            if damage is not None:
                _damaged_learning(ctx, memory_id, name, damage)
                value = json.dumps({k: list(v) for k, v in contexts.items()}, separators=(",", ":"))
        elif not _finite(value):
            _damaged_learning(ctx, memory_id, name, f"{value!r} is not a finite number")
            continue
        out[name] = value
    return out


def _finite(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def _damaged_learning(ctx: StoreContext, memory_id: str, name: str, why: str) -> None:
    damaged(ctx, memory_id, f"its {name}", why, outcome="exported without it")


def _restored_fields(record: Mapping[str, Any]) -> tuple[str, ...]:
    learning = record.get("learning") or {}
    if not isinstance(learning, Mapping):
        raise InvalidInputError("record learning state must be an object", field="learning")
    out: list[str] = []
    for name in _LEARNING_FIELDS:
        value = learning.get(name)
        if value is None:
            continue
        if name == L.F_CONTEXTS:
            _, damage = parse_contexts(str(value))
            if damage is not None:
                raise InvalidInputError(f"record {name} is damaged: {damage}", field="learning")
        elif not _finite(str(value)):  # a NaN or an infinity would make the memory unreadable
            raise InvalidInputError(f"record {name} is not a finite number", field="learning")
        out += [name, str(value)]
    exposures = _int(record, "exposures", 0)
    if exposures > 0:
        out += [L.F_EXPOSURES, str(exposures)]
    return tuple(out)


def _int(record: Mapping[str, Any], key: str, default: int) -> int:
    value = record.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"record field {key!r} must be a number", field=key)
    return int(value)


def parse_record(
    record: object, now: int, max_bytes: int
) -> tuple[MemoryInput, dict[str, Any]] | None:
    """A record's memory input and restored state (``None``: it expired in transit).

    Raises:
        InvalidInputError: a malformed record.
    """
    if not isinstance(record, Mapping):
        raise InvalidInputError("each record must be a JSON object", field="records")
    if record.get("format", FORMAT) != FORMAT:
        raise InvalidInputError(f"unknown record format {record.get('format')!r}", field="format")
    remaining = record.get("ttl_remaining_ms")
    if remaining is not None and _int(record, "ttl_remaining_ms", 0) <= 0:
        return None  # expired while in transit
    scope_raw = record.get("scope") or {}
    if not isinstance(scope_raw, Mapping):
        raise InvalidInputError("record scope must be an object", field="scope")
    memory_input = MemoryInput(
        content=record.get("content"),  # type: ignore[arg-type]
        importance=record.get("importance", 0.5),
        tags=record.get("tags") or (),
        ttl=_int(record, "ttl_remaining_ms", 0) / 1000 if remaining is not None else None,
        scope=Scope(**{k: scope_raw.get(k) for k in ("namespace", "agent_id", "thread_id", "session_id")}),
        source=record.get("source"), subject=record.get("subject"), date=record.get("date"),
        metadata=record.get("metadata") or None, durability=record.get("durability", "shared"),
        id=record.get("id"), labels=record.get("labels") or None,
    )  # fmt: skip
    validate_input(memory_input, max_bytes)
    extra = {
        "created_at": _int(record, "created_at", now),
        "last_accessed_at": _int(record, "last_accessed_at", _int(record, "created_at", now)),
        "access_count": max(0, _int(record, "access_count", 0)),
        "vector": record.get("vector"),
        "restored": _restored_fields(record),
    }
    return memory_input, extra


def import_records(
    ctx: StoreContext, records: Sequence[object], *, reembed: bool
) -> Operation[list[str]]:
    """Restore records (ids, timestamps, TTL remaining, scope...); every record is
    validated before anything is written.

    Raises:
        InvalidInputError: a malformed record, or a vector of the wrong dimension.
    """
    now = ctx.now_ms()
    parsed = [
        p
        for p in (parse_record(r, now, ctx.settings.max_content_bytes) for r in records)
        if p is not None
    ]
    if not parsed:
        return []
    yield from ensure_ready(ctx)
    vectors: list[NDArray[np.float32] | None] = []
    need_embedding = [
        i for i, (_, extra) in enumerate(parsed) if reembed or extra["vector"] is None
    ]
    for _, extra in parsed:
        if not reembed and extra["vector"] is not None:
            vectors.append(unit_vector(extra["vector"], ctx.dim, field="vector"))
        else:
            vectors.append(None)
    embedded = yield from embed_texts(ctx, [parsed[i][0].content for i in need_embedding])
    for i, fresh in zip(need_embedding, embedded, strict=True):
        vectors[i] = fresh
    memories: list[tuple[NewMemory, float | None]] = []
    for (memory_input, extra), vector in zip(parsed, vectors, strict=True):
        v = validate_input(memory_input, ctx.settings.max_content_bytes)
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
    yield from write_memories(ctx, memories)
    return [m.id for m, _ in memories]
