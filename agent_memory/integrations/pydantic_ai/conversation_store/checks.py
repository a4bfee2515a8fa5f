"""The input checks of a conversation store (pure): each returns the checked value or
raises :class:`~agent_memory.errors.InvalidInputError` before anything is sent."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord

from agent_memory.cache.keys import check_text
from agent_memory.core.checks import check_str
from agent_memory.errors import InvalidInputError
from agent_memory.integrations.pydantic_ai.codec import encode_messages

# -- input checks ------------------------------------------------------------------------


def check_entry_id(value: object, field: str) -> str:
    """An entry id: non-empty text without a newline (tips are stored newline-joined)."""
    checked = check_text(value, field=field)
    if "\n" in checked:
        raise InvalidInputError(f"{field} must not contain a newline", field=field)
    return checked


def check_scope(value: object) -> str | None:
    return None if value is None else check_str(value, field="scope", max_chars=1024)


def check_limit(value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise InvalidInputError(
        f"limit must be a non-negative int or None, got {value!r}", field="limit"
    )


def check_revision(value: object, field: str) -> str:
    return check_text(value, field=field)


def check_record(record: object) -> ConversationRecord:
    if not isinstance(record, ConversationRecord):
        raise InvalidInputError(
            f"record must be a ConversationRecord, got {type(record).__name__}", field="record"
        )
    check_text(record.conversation_id, field="record.conversation_id")
    if record.head_id is not None:
        check_entry_id(record.head_id, "record.head_id")
    if not isinstance(record.branches, list):
        raise InvalidInputError("record.branches must be a list", field="record.branches")
    for tip in record.branches:
        check_entry_id(tip, "record.branches")
    check_revision(record.revision, "record.revision")
    check_scope(record.scope)
    if not isinstance(record.updated_at, datetime):
        raise InvalidInputError("record.updated_at must be a datetime", field="record.updated_at")
    return record


def encoded_entries(entries: object) -> list[tuple[ConversationEntry, bytes]]:
    """The new entries of a write, each with its encoded message.

    pydantic-ai gives them "in order, each after the one it points at"; this holds them
    to it, because a history is walked from its head along the parents: an entry that
    is its own parent, or points at a later new entry (so at a loop among them), would
    make every later walk of that history endless. Two entries with one id would make
    the second overwrite the first's message.

    Raises:
        InvalidInputError: not a sequence of message entries, a bad id, an id twice, or
            a parent that is the entry itself or a later new entry.
    """
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise InvalidInputError("new_entries must be a sequence of ConversationEntry")
    new_ids = {entry.id for entry in entries if isinstance(entry, ConversationEntry)}
    earlier: set[str] = set()
    for entry in entries:
        if not isinstance(entry, ConversationEntry) or entry.kind != "message":
            raise InvalidInputError(
                f"new_entries holds a {type(entry).__name__}, not a message ConversationEntry",
                field="new_entries",
            )
        check_entry_id(entry.id, "new_entries.id")
        if entry.id in earlier:
            raise InvalidInputError(
                f"new_entries holds entry {entry.id!r} twice", field="new_entries.id"
            )
        if entry.parent_id is not None:
            check_entry_id(entry.parent_id, "new_entries.parent_id")
            if entry.parent_id in new_ids and entry.parent_id not in earlier:
                raise InvalidInputError(
                    f"entry {entry.id!r} points at {entry.parent_id!r}, which is not an "
                    "earlier new entry (each must come after the one it points at: "
                    "otherwise its history would loop)",
                    field="new_entries.parent_id",
                )
        earlier.add(entry.id)
    checked: Sequence[ConversationEntry] = entries
    messages = encode_messages([entry.message for entry in checked])
    return list(zip(checked, messages, strict=True))


__all__ = [
    "check_entry_id",
    "check_limit",
    "check_record",
    "check_revision",
    "check_scope",
    "encoded_entries",
]
