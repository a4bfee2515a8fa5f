"""The argument checks of a DB chat store (pure): each returns the checked value or
raises :class:`~agent_memory.errors.InvalidInputError` before anything is sent."""

from __future__ import annotations

from llama_index.core.storage.chat_store.base_db import MessageStatus

from agent_memory.errors import InvalidInputError
from agent_memory.integrations.llama_index.db_chat_store.layout import MAX_ID

# -- arguments (pure) ----------------------------------------------------------------------


def check_status(value: object) -> MessageStatus:
    if isinstance(value, MessageStatus):
        return value
    raise InvalidInputError(f"status must be a MessageStatus, got {value!r}", field="status")


def check_status_filter(value: object) -> MessageStatus | None:
    return None if value is None else check_status(value)


def check_non_negative(value: object, field: str) -> int:
    """A count argument (``limit``, ``offset``, ``n``): an int >= 0, capped at 2**53."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return min(value, MAX_ID)
    raise InvalidInputError(f"{field} must be an int >= 0, got {value!r}", field=field)


def check_id(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidInputError(f"idx must be an int (a message id), got {value!r}", field="idx")


__all__ = ["check_id", "check_non_negative", "check_status", "check_status_filter"]
