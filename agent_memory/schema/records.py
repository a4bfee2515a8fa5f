"""Turn a memory into hash fields and hash fields back into a :class:`MemoryItem` (pure)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.core.replies import integer, number, optional_text, text
from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema.encoding import (
    SHARED_SESSION_TOKEN,
    encode_value,
    namespace_token,
    session_token,
)
from agent_memory.schema.labels import Labels, label_tokens
from agent_memory.schema.lexical import (
    TEXT_FORM,
    VECTOR_FORM,
    document_terms,
    lex_blob,
    lex_text,
    term_tokens,
)
from agent_memory.schema.types import Durability, MemoryItem, Scope
from agent_memory.schema.utility import (
    Contexts,
    Forgetting,
    UtilityState,
    impossible,
    retention,
    utility,
)


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A validated memory about to be written."""

    id: str
    content: str
    vector: NDArray[np.float32]
    importance: float
    tags: tuple[str, ...]
    scope: Scope
    durability: Durability
    created_at: int
    expires_at: int | None
    source: str | None = None
    subject: str | None = None
    date: str | None = None
    metadata_json: str | None = None
    last_accessed_at: int | None = None  # None: the creation time
    access_count: int = 0
    labels: Labels = field(default_factory=dict)
    extra_fields: tuple[str, ...] = ()  # restored learning state (import)
    explicit_id: bool = False  # the caller chose the id: it may overwrite a memory
    sequence: int | None = None  # assigned by the server-side write (standalone) or ahead

    @property
    def namespace_token(self) -> str:
        return namespace_token(self.scope.namespace)

    @property
    def session_token(self) -> str:
        return session_token(self.scope.session_id if self.durability == "session" else None)

    @property
    def agent_token(self) -> str | None:
        return encode_value(self.scope.agent_id) if self.scope.agent_id is not None else None

    @property
    def thread_token(self) -> str | None:
        return encode_value(self.scope.thread_id) if self.scope.thread_id is not None else None

    @property
    def bucket(self) -> str:
        """The exact-scope bucket this memory counts against for capacity."""
        return L.bucket_digest(
            self.namespace_token,
            encode_value(self.scope.agent_id) if self.scope.agent_id else "",
            encode_value(self.scope.thread_id) if self.scope.thread_id else "",
            self.session_token,
        )


def vector_blob(vector: NDArray[np.float32]) -> bytes:
    """FLOAT32 little-endian bytes, the layout of the index's VECTOR field."""
    return np.asarray(vector, dtype="<f4").tobytes()


def blob_vector(blob: bytes, dim: int | None = None) -> NDArray[np.float32]:
    """Inverse of :func:`vector_blob`."""
    if len(blob) % 4 or (dim is not None and len(blob) != 4 * dim):
        raise ReplyParseError(f"stored vector has {len(blob)} bytes, expected {4 * (dim or 0)}")
    return np.frombuffer(blob, dtype="<f4")


def scope_json(scope: Scope) -> str:
    raw = {
        "namespace": scope.namespace,
        "agent_id": scope.agent_id,
        "thread_id": scope.thread_id,
        "session_id": scope.session_id,
    }
    return json.dumps({k: v for k, v in raw.items() if v is not None}, ensure_ascii=False)


def lexical_fields(content: str, form: str) -> list[str | bytes]:
    """HSET arguments carrying the terms of ``content`` in the store's lexical ``form``."""
    if form == TEXT_FORM:
        return [L.F_LEX_TEXT, lex_text(content)]
    if form == VECTOR_FORM:
        return [L.F_LEX, lex_blob(content), L.F_LEX_TERMS, term_tokens(document_terms(content))]
    raise ValueError(f"unknown lexical form {form!r}")


def session_vector_fields(session: str, vector: NDArray[np.float32]) -> list[str | bytes]:
    """HSET arguments of the FLAT copy of the embedding a session-scoped memory carries
    (``session`` is the memory's session token; none for shared memories)."""
    if session == SHARED_SESSION_TOKEN:
        return []
    return [L.F_SESSION_VECTOR, vector_blob(vector)]


def record_fields(memory: NewMemory, lexical_form: str = VECTOR_FORM) -> list[str | bytes]:
    """Flat ``field, value, ...`` list for HSET."""
    scope = memory.scope
    created = str(memory.created_at)
    fields: list[str | bytes] = [
        L.F_ID, memory.id,
        L.F_CONTENT, memory.content,
        L.F_VECTOR, vector_blob(memory.vector),
        *session_vector_fields(memory.session_token, memory.vector),
        *lexical_fields(memory.content, lexical_form),
        L.F_IMPORTANCE, repr(memory.importance),
        L.F_CREATED, created,
        L.F_ACCESSED, str(memory.last_accessed_at if memory.last_accessed_at is not None else created),
        L.F_ACCESS_COUNT, str(memory.access_count),
        L.F_NAMESPACE, memory.namespace_token,
        L.F_SESSION, memory.session_token,
        L.F_SCOPE_RAW, scope_json(scope),
        L.F_TAGS_RAW, json.dumps(list(memory.tags), ensure_ascii=False),
    ]  # fmt: skip
    if memory.tags:
        fields += [L.F_TAGS, L.TAG_SEPARATOR.join(encode_value(t) for t in memory.tags)]
    if scope.agent_id is not None:
        fields += [L.F_AGENT, encode_value(scope.agent_id)]
    if scope.thread_id is not None:
        fields += [L.F_THREAD, encode_value(scope.thread_id)]
    for name, value in (
        (L.F_SOURCE, memory.source),
        (L.F_SUBJECT, memory.subject),
        (L.F_DATE, memory.date),
        (L.F_METADATA, memory.metadata_json),
    ):
        if value is not None:
            fields += [name, value]
    if memory.expires_at is not None:
        fields += [L.F_EXPIRES, str(memory.expires_at)]
    fields += label_fields(memory.labels)
    fields += [L.F_REINFORCED, created]
    if memory.sequence is not None:
        fields += [L.F_SEQ, str(memory.sequence)]
    fields += list(memory.extra_fields)
    return fields


def label_fields(labels: Labels) -> list[str | bytes]:
    """HSET arguments storing labels (raw JSON plus indexed tokens)."""
    raw = json.dumps({k: list(v) for k, v in sorted(labels.items())}, ensure_ascii=False)
    tokens = label_tokens(labels)
    if not tokens:
        return [L.F_LABELS_RAW, raw]
    return [L.F_LABELS_RAW, raw, L.F_LABELS, L.TAG_SEPARATOR.join(tokens)]


def utility_state(fields: Mapping[str, Any], contexts: Contexts | None = None) -> UtilityState:
    """The learned-usefulness aggregates stored with a memory; its per-context ones are
    given by the caller that ranks in a context (:func:`parse_contexts`, whose damage
    report belongs to the caller), as nothing else reads them.

    Raises:
        ReplyParseError: an aggregate that is not a number, or one no writer makes
            (:func:`~agent_memory.schema.utility.impossible`).
    """
    manual = fields.get(L.F_MANUAL)
    reinforced = fields.get(L.F_REINFORCED)
    state = UtilityState(
        eval_sum=number(fields.get(L.F_EVAL_SUM, 0)),
        eval_weight=number(fields.get(L.F_EVAL_WEIGHT, 0)),
        manual=number(manual) if manual is not None else None,
        contexts=contexts,
        last_reinforced_at=integer(reinforced) if reinforced is not None else None,
    )
    damage = impossible(state)
    if damage is not None:  # as a NaN aggregate is: the readers skip the memory and count it
        raise ReplyParseError(f"its learning state is damaged: {damage}")
    return state


_EMPTY_JSON = frozenset({b"{}", "{}", b"[]", "[]"})


def _json(value: Any, default: Any) -> Any:
    if value is None:
        return default
    if isinstance(value, (bytes, str)) and value in _EMPTY_JSON:
        return {} if value[0] in (123, "{") else []  # most records: no labels, no metadata
    try:
        return json.loads(text(value))
    except ValueError as exc:
        raise ReplyParseError(f"stored JSON field is corrupt: {exc}") from exc
    except RecursionError as exc:  # another writer's JSON nested deeper than Python parses
        raise ReplyParseError("stored JSON field is nested too deeply to read") from exc


@lru_cache(maxsize=4096)
def _scope_of(raw: str) -> Scope:
    """The scope stored as JSON (memoised: many memories share a scope; Scope is
    immutable).

    Raises:
        ReplyParseError: not JSON. InvalidInputError: not a valid scope.
    """
    data = _json(raw, None)
    if not isinstance(data, dict):
        raise InvalidInputError("the stored scope is not an object", field="scope")
    known = Scope.__dataclass_fields__
    return Scope(**{k: v for k, v in data.items() if k in known})


@lru_cache(maxsize=4096)
def _tags_of(raw: str) -> tuple[str, ...] | None:
    """The tags stored as JSON (memoised); ``None`` when the field holds no list."""
    data = _json(raw, None)
    return tuple(str(t) for t in data) if isinstance(data, list) else None


def stored_importance(memory_id: str, fields: Mapping[str, Any]) -> float:
    """A memory's importance (0.5 when absent).

    Raises:
        ReplyParseError: not a number in [0, 1] (every writer keeps it there, so the
            record is damaged; NaN included).
    """
    importance = number(fields.get(L.F_IMPORTANCE, 0.5))
    if not 0.0 <= importance <= 1.0:
        raise ReplyParseError(f"memory {memory_id} has an importance outside [0, 1]")
    return importance


def parse_item(
    memory_id: str,
    fields: Mapping[str, Any],
    *,
    usage: tuple[int, int] = (0, 0),
    retention: float = 1.0,
) -> MemoryItem:
    """Build a :class:`MemoryItem` from hash fields (ours, or the TypeScript library's).

    ``usage`` is ``(exposures, accesses)`` from the store's usage hash, added to the
    counters in the record; ``retention`` is the item's retention under the store's
    forgetting policy (built in one go: copying a frozen item costs as much as parsing it).

    Raises:
        ReplyParseError: required fields are missing or corrupt.
    """
    if L.F_CONTENT not in fields:
        raise ReplyParseError(f"memory {memory_id} has no content field")
    raw_scope = fields.get(L.F_SCOPE_RAW)
    try:
        if raw_scope is not None:
            scope = _scope_of(text(raw_scope))
        else:  # written by another library: plain values
            scope = Scope(
                namespace=optional_text(fields.get(L.F_NAMESPACE)),
                agent_id=optional_text(fields.get(L.F_AGENT)),
                thread_id=optional_text(fields.get(L.F_THREAD)),
            )
    except InvalidInputError as exc:
        raise ReplyParseError(f"memory {memory_id} has a corrupt scope: {exc}") from exc
    raw_tags = fields.get(L.F_TAGS_RAW)
    parsed_tags = _tags_of(text(raw_tags)) if raw_tags is not None else None
    if parsed_tags is not None:
        tags = parsed_tags
    else:
        joined = optional_text(fields.get(L.F_TAGS)) or ""
        tags = tuple(t for t in joined.split(L.TAG_SEPARATOR) if t)
    session = optional_text(fields.get(L.F_SESSION))
    durability: Durability = (
        "session" if session is not None and session != session_token(None) else "shared"
    )
    metadata = _json(fields.get(L.F_METADATA), {})
    importance = stored_importance(memory_id, fields)
    created = integer(fields.get(L.F_CREATED, 0))
    expires = fields.get(L.F_EXPIRES)
    raw_labels = _json(fields.get(L.F_LABELS_RAW), {})
    labels = (
        {
            str(k): tuple(str(v) for v in values)
            for k, values in raw_labels.items()
            if isinstance(values, list)
        }
        if isinstance(raw_labels, dict)
        else {}
    )
    state = utility_state(fields)
    return MemoryItem(
        id=memory_id,
        content=text(fields[L.F_CONTENT]),
        importance=importance,
        tags=tags,
        scope=scope,
        created_at=created,
        last_accessed_at=integer(fields.get(L.F_ACCESSED, created)),
        access_count=integer(fields.get(L.F_ACCESS_COUNT, 0)) + usage[1],
        durability=durability,
        source=optional_text(fields.get(L.F_SOURCE)),
        subject=optional_text(fields.get(L.F_SUBJECT)),
        date=optional_text(fields.get(L.F_DATE)),
        expires_at=integer(expires) if expires is not None else None,
        metadata=metadata if isinstance(metadata, dict) else {},
        labels=labels,
        exposures=integer(fields.get(L.F_EXPOSURES, 0)) + usage[0],
        utility=utility(state),
        feedback=state.manual,
        retention=retention,
        sequence=integer(fields.get(L.F_SEQ, 0)),
    )


def retention_from_fields(
    fields: Mapping[str, Any], forgetting: Forgetting | None, now_ms: int
) -> float:
    """Retention of a stored memory under ``forgetting`` (1 without forgetting)."""
    if forgetting is None:
        return 1.0
    return retention(
        utility_state(fields),
        importance=number(fields.get(L.F_IMPORTANCE, 0.5)),
        created_at=integer(fields.get(L.F_CREATED, 0)),
        now_ms=now_ms,
        forgetting=forgetting,
    )
