"""How a CrewAI ``MemoryRecord`` maps onto an agent-memory memory (pure).

A storage is *bound* to one :class:`~agent_memory.Scope` (:class:`Binding`); every record
it saves becomes a memory of exactly that scope, under an id derived from the binding and
the record's own id (:func:`memory_id`: 32 hex digits of SHA-256 of ``["record",
namespace, agent_id, thread_id, record id]``), so two bindings never address one memory
and any record id CrewAI hands over (``""``, quotes, ``%`` ...) is a valid one.

A record's CrewAI scope path (``/crew/research/agent/writer/topic``) is normalised
(:func:`normalize_path`: one leading ``/``, no empty segments, no trailing ``/``; ``None``
and ``""`` are ``/``) and the memory gets one tag per ancestor path, the root ``/``
included (:func:`scope_tag`), and one per category (:func:`category_tag`). A tag is
``crewai:scope:`` / ``crewai:category:`` and 32 hex digits of SHA-256 of the binding and
the path or category, so a scope-prefix query is one exact tag filter that only the
binding's own memories can match, and a prefix covers a path and its descendants, never a
sibling that merely shares characters (``/app`` is not a prefix of ``/apple``). At most
:data:`TAG_LIMIT` tags: a path's depth plus its distinct categories may not pass 63.
Record ids, paths, categories and sources are any valid Unicode text up to
:data:`MAX_TEXT_CHARS` characters.

The record itself is kept losslessly in the memory's metadata under ``"crewai"`` (id,
scope as given, categories, metadata, source, private, ``created_at`` and
``last_accessed`` as ISO 8601 naive UTC text); content and importance are the memory's
own, ``source`` is ``"crewai"``, the embedding its vector (re-embedded by the store's
embedder when the record has none). Timestamps come back as naive UTC ``datetime``
objects, CrewAI's own convention (an aware one is converted).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from agent_memory.core.checks import check_str
from agent_memory.errors import InvalidInputError
from agent_memory.integrations._keys import digest
from agent_memory.integrations._optional import require
from agent_memory.schema.types import MemoryItem, Scope
from agent_memory.store.validation import MAX_TAGS, check_ttl

_types = require("crewai.memory.types", extra="crewai")

#: The memories' ``source`` field, and the metadata key holding the CrewAI record.
SOURCE = "crewai"
#: The format of the records handed to ``import_records``.
FORMAT = "agent-memory/1"
#: Tags of one memory, at most (the store's own limit).
TAG_LIMIT = MAX_TAGS
#: Longest CrewAI id, scope path or category accepted, in characters.
MAX_TEXT_CHARS = 1024


@dataclass(frozen=True, slots=True)
class Binding:
    """The scope a storage writes to and reads from, and the lifetime of its memories.

    Attributes:
        scope: namespace (the tenant), ``agent_id`` and ``thread_id``; never a session.
        ttl: seconds each saved record lives (``None``: until deleted).

    Raises:
        InvalidInputError: not a ``Scope``, a scope with a ``session_id``, or a bad TTL.
    """

    scope: Scope
    ttl: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise InvalidInputError("scope must be an agent_memory.Scope", field="scope")
        if self.scope.session_id is not None:
            raise InvalidInputError(
                "a CrewAI storage keeps long-term memories: bind a namespace, agent_id and "
                "thread_id, not a session_id",
                field="scope",
            )
        check_ttl(self.ttl)

    def parts(self) -> list[str | None]:
        """The binding as JSON-ready parts of every digest."""
        s = self.scope
        return [s.namespace, s.agent_id, s.thread_id]


def _digest(kind: str, binding: Binding, value: str) -> str:
    text = json.dumps([kind, *binding.parts(), value], ensure_ascii=False)
    return digest(text, 32)


def _text(value: object, field: str, *, allow_empty: bool = False) -> str:
    return check_str(value, field=field, non_empty=not allow_empty, max_chars=MAX_TEXT_CHARS)


def normalize_path(path: object, *, field: str = "scope") -> str:
    """A CrewAI scope path in its one stored form (``None`` and ``""`` are ``/``).

    Raises:
        InvalidInputError: not a ``str`` (or ``None``), too long, or not valid Unicode.
    """
    if path is None:
        return "/"
    segments = [s for s in _text(path, field, allow_empty=True).split("/") if s]
    return "/" + "/".join(segments)


def ancestors(path: str) -> list[str]:
    """``/``, then every prefix of a normalised path, ending with the path itself."""
    out = ["/"]
    segments = [s for s in path.split("/") if s]
    for depth in range(1, len(segments) + 1):
        out.append("/" + "/".join(segments[:depth]))
    return out


def within(path: str, prefix: str) -> bool:
    """Whether normalised ``path`` is ``prefix`` or one of its descendants."""
    return prefix in ("/", path) or path.startswith(prefix + "/")


def child_of(path: str, parent: str) -> str | None:
    """The immediate child of ``parent`` on the way to ``path`` (``None``: not below it)."""
    if path == parent or not within(path, parent):
        return None
    base = "" if parent == "/" else parent
    rest = path[len(base) + 1 :]
    return f"{base}/{rest.split('/', 1)[0]}"


def scope_tag(binding: Binding, path: str) -> str:
    """The tag every memory of ``binding`` at or below normalised ``path`` carries."""
    return "crewai:scope:" + _digest("scope", binding, path)


def category_tag(binding: Binding, category: str) -> str:
    """The tag every memory of ``binding`` in ``category`` carries."""
    return "crewai:category:" + _digest("category", binding, category)


def memory_id(binding: Binding, record_id: str) -> str:
    """The id of the memory holding record ``record_id`` of ``binding``."""
    return _digest("record", binding, record_id)


def check_record_id(record_id: object) -> str:
    """A CrewAI record id (any ``str``, ``""`` included).

    Raises:
        InvalidInputError: not a ``str``, too long or not valid Unicode.
    """
    return _text(record_id, "record_id", allow_empty=True)


def check_categories(categories: object, field: str = "categories") -> list[str]:
    """Distinct category names, in order (``None``: none).

    Raises:
        InvalidInputError: not a list of ``str``.
    """
    if categories is None:
        return []
    if isinstance(categories, (str, bytes)) or not isinstance(categories, Sequence):
        raise InvalidInputError(f"{field} must be a list of str", field=field)
    out: list[str] = []
    for category in categories:
        checked = _text(category, field, allow_empty=True)
        if checked not in out:
            out.append(checked)
    return out


def utc_naive(value: object, field: str) -> datetime:
    """A ``datetime`` as naive UTC (naive values are taken to be UTC already).

    Raises:
        InvalidInputError: not a ``datetime``.
    """
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{field} must be a datetime", field=field)
    if value.tzinfo is None:
        return value
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def epoch_ms(value: datetime) -> int:
    """Milliseconds since the epoch of a naive UTC ``datetime``."""
    return math.floor(value.replace(tzinfo=timezone.utc).timestamp() * 1000)


def check_embedding(embedding: object, field: str = "embedding") -> list[float] | None:
    """A record's or query's embedding as floats (``None`` or ``[]``: none).

    Raises:
        InvalidInputError: not a flat list of finite numbers.
    """
    if embedding is None:
        return None
    if isinstance(embedding, (str, bytes)) or not isinstance(embedding, Sequence):
        raise InvalidInputError(f"{field} must be a list of floats", field=field)
    out: list[float] = []
    for value in embedding:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidInputError(f"{field} must hold only numbers", field=field)
        number = float(value)
        if not math.isfinite(number):
            raise InvalidInputError(f"{field} holds a NaN or infinite value", field=field)
        out.append(number)
    return out or None


def check_record(record: object, field: str = "records") -> Any:
    """``record`` if it is a CrewAI ``MemoryRecord``.

    Raises:
        InvalidInputError: anything else.
    """
    if not isinstance(record, _types.MemoryRecord):
        raise InvalidInputError(
            f"{field} must hold crewai MemoryRecord objects, got {type(record).__name__}",
            field=field,
        )
    return record


def _check_encodable(metadata: Mapping[str, Any]) -> None:
    try:
        json.dumps(metadata, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidInputError(
            f"the record's metadata is not JSON-serialisable UTF-8: {exc}", field="metadata"
        ) from None


def import_record(binding: Binding, record: Any) -> dict[str, Any]:
    """The ``MemoryStore.import_records`` record that stores ``record`` in ``binding``
    (pure; the store validates content, importance and metadata).

    Raises:
        InvalidInputError: a bad id, scope, category, source, timestamp or embedding, or
            more tags than a memory may carry.
    """
    check_record(record)
    record_id = check_record_id(record.id)
    path = normalize_path(record.scope)
    categories = check_categories(record.categories)
    tags = [scope_tag(binding, p) for p in ancestors(path)]
    tags += [category_tag(binding, c) for c in categories]
    if len(tags) > TAG_LIMIT:
        raise InvalidInputError(
            f"scope {record.scope!r} is {len(ancestors(path)) - 1} levels deep and the record "
            f"has {len(categories)} categories; together they may not pass {TAG_LIMIT - 1}",
            field="scope",
        )
    source = None if record.source is None else _text(record.source, "source", allow_empty=True)
    created = utc_naive(record.created_at, "created_at")
    accessed = utc_naive(record.last_accessed, "last_accessed")
    metadata = {
        SOURCE: {
            "id": record_id,
            "scope": record.scope,
            "categories": list(record.categories),
            "metadata": record.metadata,
            "source": source,
            "private": bool(record.private),
            "created_at": created.isoformat(),
            "last_accessed": accessed.isoformat(),
        }
    }
    _check_encodable(metadata)
    ttl = binding.ttl
    s = binding.scope
    return {
        "format": FORMAT,
        "id": memory_id(binding, record_id),
        "content": record.content,
        "importance": record.importance,
        "tags": tags,
        "scope": {"namespace": s.namespace, "agent_id": s.agent_id, "thread_id": s.thread_id},
        "durability": "shared",
        "created_at": epoch_ms(created),
        "last_accessed_at": epoch_ms(accessed),
        "ttl_remaining_ms": None if ttl is None else math.ceil(ttl * 1000),
        "source": SOURCE,
        "metadata": metadata,
        "vector": check_embedding(record.embedding),
    }


def _stored_time(text: object) -> datetime:
    """A stored ISO 8601 timestamp as naive UTC (an aware one is converted).

    Raises:
        TypeError, ValueError: not ISO 8601 text.
    """
    if not isinstance(text, str):
        raise TypeError(f"a timestamp must be ISO 8601 text, got {type(text).__name__}")
    return utc_naive(datetime.fromisoformat(text), "created_at")


@dataclass(frozen=True, slots=True)
class Stored:
    """A memory read back as a CrewAI record, with what the filters need."""

    memory_id: str
    record: Any
    path: str


def stored_record(binding: Binding, item: MemoryItem) -> Stored | str:
    """The CrewAI record a memory of ``binding`` holds (pure), or why it holds none: a
    memory of another scope, or one whose ``"crewai"`` metadata is missing, belongs to
    another record id or is malformed."""
    if item.scope != binding.scope:
        return "a memory of another scope"
    blob = item.metadata.get(SOURCE)
    if not isinstance(blob, Mapping):
        return f"no {SOURCE!r} metadata"
    if item.id != memory_id(binding, str(blob.get("id"))):
        return f"its {SOURCE!r} metadata names another record id"
    try:
        record = _types.MemoryRecord(
            id=blob["id"],
            content=item.content,
            scope=blob["scope"],
            categories=list(blob["categories"]),
            metadata=dict(blob["metadata"] or {}),
            importance=item.importance,
            # naive UTC whatever another writer stored: CrewAI compares them with naive
            # cutoffs, and a naive and an aware datetime cannot be compared
            created_at=_stored_time(blob["created_at"]),
            last_accessed=_stored_time(blob["last_accessed"]),
            embedding=None,
            source=blob.get("source"),
            private=bool(blob.get("private", False)),
        )
        path = normalize_path(record.scope)
    except KeyError as exc:
        return f"its {SOURCE!r} metadata has no {exc}"
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        return f"its {SOURCE!r} metadata is malformed ({type(exc).__name__})"
    return Stored(item.id, record, path)


def matches(
    stored: Stored,
    *,
    prefix: str,
    categories: Sequence[str],
    older_than: datetime | None,
    metadata_filter: Mapping[str, Any],
) -> bool:
    """Whether a record passes every given filter: within ``prefix``, in any of
    ``categories`` (when any), created before ``older_than`` (when given), and with
    ``metadata.get(key) == value`` for every ``metadata_filter`` pair (when any), as
    CrewAI's own backends compare: a ``None`` value matches a missing key."""
    record = stored.record
    if not within(stored.path, prefix):
        return False
    if categories and not set(categories) & set(record.categories):
        return False
    if older_than is not None and not record.created_at < older_than:
        return False
    meta = record.metadata
    return all(meta.get(k) == v for k, v in metadata_filter.items())


__all__ = [
    "FORMAT",
    "SOURCE",
    "TAG_LIMIT",
    "Binding",
    "Stored",
    "ancestors",
    "category_tag",
    "check_categories",
    "check_embedding",
    "check_record",
    "check_record_id",
    "child_of",
    "epoch_ms",
    "import_record",
    "matches",
    "memory_id",
    "normalize_path",
    "scope_tag",
    "stored_record",
    "utc_naive",
    "within",
]
