"""How ADK events and memory entries map onto agent-memory memories (pure).

Scope rule: an ``(app_name, user_id)`` pair is ``Scope(namespace=app_name,
agent_id=user_id)``; the session an event came from is its ``thread_id``. Every write
and every read of the memory service sets both ``namespace`` and ``agent_id``, and the
namespace is a hard tenant boundary while ``agent_id`` is an exact filter, so one
``(app, user)`` never reads, finds or deletes another's memories.

Ids are derived, so storing the same thing twice overwrites one memory: an event's
memory id is 32 hex digits of SHA-256 of ``["event", app, user, session, event id]``,
an explicit :class:`MemoryEntry`'s of ``["memory", app, user, entry id]`` (a random id
when the entry has none).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from agent_memory.errors import InvalidInputError
from agent_memory.integrations._keys import digest_of_parts
from agent_memory.integrations._texts import clean_text, fit_text
from agent_memory.schema.types import MemoryItem, Scope
from agent_memory.store.ops.write import MemoryInput

SOURCE = "adk"
_OPTIONS = ("ttl", "importance", "tags")


def scope_of(app_name: str, user_id: str, session_id: str | None = None) -> Scope:
    """The scope of one ``(app, user)`` (and session, for writes).

    Raises:
        InvalidInputError: an empty or non-``str`` app name or user id (or a value
            over the scope limits).
    """
    for field, value in (("app_name", app_name), ("user_id", user_id)):
        if not isinstance(value, str) or not value:
            raise InvalidInputError(f"{field} must be a non-empty str", field=field)
    return Scope(namespace=app_name, agent_id=user_id, thread_id=session_id)


def derived_id(*parts: str) -> str:
    """32 hex digits of SHA-256 of the JSON of ``parts``."""
    return digest_of_parts(parts)


def forgotten_key(store_name: str, app_name: str, user_id: str) -> str:
    """The set of the event memories of ``(app, user)`` that were deleted (one hash slot
    per pair, a digest of it in the hash tag)."""
    return f"{store_name}:adk_forgotten:{{{derived_id('user', app_name, user_id)}}}"


def content_text(content: types.Content | None) -> str:
    """The text parts of a content joined by spaces (``""`` when it has none)."""
    if content is None or not content.parts:
        return ""
    return " ".join(part.text for part in content.parts if part.text).strip()


def options(custom_metadata: Mapping[str, object] | None) -> dict[str, Any]:
    """The write options taken from ADK's ``custom_metadata``: ``ttl`` (seconds),
    ``importance`` (0..1) and ``tags`` (list of str); other keys are ignored, as ADK
    lets each service define its own.

    Raises:
        InvalidInputError: ``custom_metadata`` is not a mapping.
    """
    if custom_metadata is None:
        return {}
    if not isinstance(custom_metadata, Mapping):
        raise InvalidInputError("custom_metadata must be a mapping", field="custom_metadata")
    return {k: custom_metadata[k] for k in _OPTIONS if k in custom_metadata}


def event_input(
    app_name: str,
    user_id: str,
    session_id: str,
    event: Event,
    opts: Mapping[str, Any],
    *,
    max_bytes: int,
) -> tuple[MemoryInput | None, bool, bool]:
    """The memory stored for one event (``None`` when the event has no text; without a
    session, ``""``, the memory has no thread), whether its text was cut to
    ``max_bytes`` UTF-8 bytes (the store's limit), and whether characters the store
    refuses (ASCII controls but tab and line breaks, lone surrogates) were replaced by a
    space / U+FFFD: one long or odd event (a large tool result, ANSI colours in a
    command's output) keeps its text rather than fail the whole session's add."""
    text, cleaned = clean_text(content_text(event.content))
    text, cut = fit_text(text, max_bytes)
    if not text.strip():
        return None, False, False
    role = event.content.role if event.content else None
    metadata = {"author": event.author, "timestamp": event.timestamp, "event_id": event.id}
    if role:
        metadata["role"] = role
    return (
        MemoryInput(
            content=text,
            scope=scope_of(app_name, user_id, session_id or None),
            source=SOURCE,
            metadata=metadata,
            id=derived_id("event", app_name, user_id, session_id, event.id),
            **opts,
        ),
        cut,
        cleaned,
    )


def entry_input(
    app_name: str, user_id: str, entry: MemoryEntry, opts: Mapping[str, Any]
) -> MemoryInput:
    """The memory stored for an explicit :class:`MemoryEntry`.

    Raises:
        InvalidInputError: the entry is not a MemoryEntry or has no text.
    """
    if not isinstance(entry, MemoryEntry):
        raise InvalidInputError("memories must be ADK MemoryEntry objects", field="memories")
    text = content_text(entry.content)
    if not text:
        raise InvalidInputError("a memory entry has no text part", field="memories")
    metadata: dict[str, Any] = {"custom_metadata": dict(entry.custom_metadata)}
    if entry.author is not None:
        metadata["author"] = entry.author
    if entry.timestamp is not None:
        metadata["timestamp_text"] = entry.timestamp
    if entry.content.role:
        metadata["role"] = entry.content.role
    return MemoryInput(
        content=text,
        scope=scope_of(app_name, user_id),
        source=SOURCE,
        metadata=metadata,
        id=derived_id("memory", app_name, user_id, entry.id) if entry.id else uuid.uuid4().hex,
        **opts,
    )


def format_timestamp(timestamp: float) -> str:
    """ISO 8601 local time, the form ADK's own memory services give.

    Raises:
        ValueError, OverflowError, OSError: a time ``datetime`` cannot hold.
    """
    return datetime.fromtimestamp(timestamp).isoformat()


def _when(item: MemoryItem) -> tuple[str, str | None]:
    """The entry's timestamp text and, when the metadata's numeric ``timestamp`` is no
    time ``datetime`` can hold, why (then ``timestamp_text`` or the memory's creation
    time stands in)."""
    meta = item.metadata
    timestamp = meta.get("timestamp")
    problem = None
    if isinstance(timestamp, (int, float)):
        try:
            return format_timestamp(float(timestamp)), None
        except (ValueError, OverflowError, OSError) as exc:
            problem = (
                f"metadata 'timestamp' {timestamp!r:.40} is not a time in seconds since the "
                f"epoch ({type(exc).__name__}: {exc}); another time is given instead"
            )
    text = meta.get("timestamp_text")
    if isinstance(text, str):
        return text, problem
    return format_timestamp(item.created_at / 1000), problem


def entry_of(item: MemoryItem) -> tuple[MemoryEntry, str | None]:
    """The :class:`MemoryEntry` a search returns for a stored memory: its text as one
    text part (with the event's role), author, timestamp and id; and what part of the
    memory's metadata was unusable (``None`` when nothing was), for the caller to report.

    A ``timestamp`` that is no time ``datetime`` can hold (epoch milliseconds written by
    another writer, say) gives way to the memory's creation time."""
    meta = item.metadata
    role = meta.get("role")
    when, problem = _when(item)
    custom = meta.get("custom_metadata")
    author = meta.get("author")
    entry = MemoryEntry(
        id=item.id,
        content=types.Content(
            role=role if isinstance(role, str) else None, parts=[types.Part(text=item.content)]
        ),
        author=author if isinstance(author, str) else None,
        timestamp=when,
        custom_metadata=dict(custom) if isinstance(custom, Mapping) else {},
    )
    return entry, problem


__all__ = [
    "content_text",
    "derived_id",
    "entry_input",
    "entry_of",
    "event_input",
    "format_timestamp",
    "options",
    "scope_of",
]
