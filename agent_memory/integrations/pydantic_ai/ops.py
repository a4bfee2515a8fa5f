"""The operations of a pydantic-ai message history on a Valkey list (generators, no I/O).

A conversation is the list ``{name}:pai_history:{conversation_id}``, one JSON message
per element, oldest first (:mod:`.codec`), run by
:mod:`agent_memory.integrations._list_log`: ``load(limit)`` is an ``LRANGE`` (widened
past corrupt elements, which it counts), ``append`` one ``RPUSH``, ``clear`` an
``UNLINK``; each one atomic round trip, with a sliding TTL when one is set.
"""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage

from agent_memory.cache._tier import TierCore
from agent_memory.core.effects import Operation
from agent_memory.integrations import _list_log
from agent_memory.integrations.pydantic_ai.codec import decode_message

#: The key segment of the histories: ``{name}:pai_history:{conversation_id}``.
SEGMENT = "pai_history"


def history_key(name: str, conversation_id: str) -> str:
    """The list holding conversation ``conversation_id`` of cache name ``name`` (pure)."""
    return _list_log.log_key(name, SEGMENT, conversation_id)


def load(
    tier: TierCore, key: str, limit: int | None, ttl_ms: int | None
) -> Operation[tuple[list[ModelMessage], int]]:
    """The latest ``limit`` valid messages (all when ``None``; none when ``0``), oldest
    first, and the number of corrupt elements skipped on the way."""
    return _list_log.read_latest(tier, key, limit, ttl_ms, decode_message)


def append(tier: TierCore, key: str, encoded: list[bytes], ttl_ms: int | None) -> Operation[None]:
    """Append the encoded messages atomically (one ``RPUSH``)."""
    return _list_log.append(tier, key, encoded, ttl_ms)


def clear(tier: TierCore, key: str) -> Operation[None]:
    """Delete the conversation's list."""
    return _list_log.clear(tier, key)


__all__ = ["SEGMENT", "append", "clear", "history_key", "load"]
