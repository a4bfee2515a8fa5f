"""Where a DB chat store keeps a chat (pure): the sorted set of each key, the member
``<id>:<ChatMessage JSON>`` and score sign of each message, and the rule that keeps the
cache names of two stores from sharing keys (see the package docstring)."""

from __future__ import annotations

from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store.base_db import MessageStatus

from agent_memory.cache.keys import check_name
from agent_memory.core.names import check_name_apart
from agent_memory.errors import InvalidInputError
from agent_memory.integrations._list_log import log_key
from agent_memory.integrations.llama_index.codec import decode_message

#: The key segment of the DB chat stores: ``{name}:li_db:{key}``.
SEGMENT = "li_db"

#: Ids are exact scores only below 2**53; a count or id past it means the same as it (no
#: chat holds that many messages).
MAX_ID = 2**53

#: The sign of a status's scores.
SIGN = {MessageStatus.ACTIVE: 1, MessageStatus.ARCHIVED: -1}


# -- layout (pure) -------------------------------------------------------------------------


def chat_key(name: str, key: str) -> str:
    """The sorted set holding chat ``key`` of cache name ``name`` (pure)."""
    return log_key(name, SEGMENT, key)


def decode_entry(raw: object) -> ChatMessage | None:
    """The message a member ``<id>:<JSON>`` holds, or ``None`` when it is corrupt (pure)."""
    if isinstance(raw, (bytearray, memoryview)):
        raw = bytes(raw)
    if isinstance(raw, bytes):
        head, sep, body = raw.partition(b":")
        well_formed = bool(sep) and head.isdigit()
        return decode_message(body) if well_formed else None
    if isinstance(raw, str):
        text_head, text_sep, text_body = raw.partition(":")
        well_formed = bool(text_sep) and text_head.isascii() and text_head.isdigit()
        return decode_message(text_body) if well_formed else None
    return None


def check_store_name(name: object) -> str:
    """A cache name in which ``:li_db`` cannot occur, so that no two (name, key) pairs
    share a sorted set and a name's ``SCAN`` prefix matches only its own chats, and
    whose keys are no other component's
    (:func:`~agent_memory.core.names.check_name_apart`; a chat key may be 64 hex digits).

    Raises:
        InvalidInputError: a bad cache name, one containing ``:li_db``, or one
            :func:`~agent_memory.core.names.check_name_apart` refuses.
    """
    checked = check_name(name)
    if f":{SEGMENT}" in checked:
        raise InvalidInputError(
            f"name must not contain ':{SEGMENT}' (its chats' keys would be another "
            f"name's), got {checked!r}",
            field="name",
        )
    return check_name_apart(checked, hex_keys=True)


__all__ = ["MAX_ID", "SEGMENT", "SIGN", "chat_key", "check_store_name", "decode_entry"]
