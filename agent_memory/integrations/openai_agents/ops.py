"""The operations of an Agents SDK session on a Valkey list (generators, no I/O).

A session is the list ``{name}:oai_session:{session_id}``, one JSON item per element,
oldest first (:mod:`.items`), run by :mod:`agent_memory.integrations._list_log`:
``get_items(limit)`` is an ``LRANGE`` (widened past corrupt elements), ``add_items`` one
``RPUSH``, ``pop_item`` an ``RPOP`` (a corrupt element is dropped and the next one
popped), ``clear_session`` an ``UNLINK``; each one atomic round trip. With a TTL each
command runs in a script that also restarts the lifetime (a key of another type is
refused and keeps its own).
"""

from __future__ import annotations

from typing import Any

from agent_memory.cache._tier import TierCore
from agent_memory.core.effects import Operation
from agent_memory.integrations import _list_log
from agent_memory.integrations.openai_agents.items import decode_item

#: The key segment of the sessions: ``{name}:oai_session:{session_id}``.
SEGMENT = "oai_session"


def session_key(name: str, session_id: str) -> str:
    """The list holding session ``session_id`` of cache name ``name`` (pure)."""
    return _list_log.log_key(name, SEGMENT, session_id)


def get_items(
    tier: TierCore, key: str, limit: int | None, ttl_ms: int | None
) -> Operation[list[dict[str, Any]]]:
    """The latest ``limit`` valid items (all when ``None``; none when ``<= 0``), oldest
    first."""
    items, skipped = yield from _list_log.read_latest(tier, key, limit, ttl_ms, decode_item)
    if skipped:
        tier.unreadable(key, f"{skipped} element(s) are not JSON objects; skipped")
    return items


def add_items(tier: TierCore, key: str, encoded: list[str], ttl_ms: int | None) -> Operation[None]:
    """Append the encoded items atomically (one ``RPUSH``)."""
    return _list_log.append(tier, key, encoded, ttl_ms)


def pop_item(tier: TierCore, key: str, ttl_ms: int | None) -> Operation[dict[str, Any] | None]:
    """Remove and return the newest valid item (``None`` when there is none); corrupt
    elements removed on the way are reported (logged, ``corrupt_entries``)."""
    item, dropped = yield from _list_log.pop_latest(tier, key, ttl_ms, decode_item)
    if dropped:
        tier.unreadable(key, f"{dropped} element(s) are not JSON objects; dropped by a pop")
    return item


def clear_session(tier: TierCore, key: str) -> Operation[None]:
    """Delete the session's list."""
    return _list_log.clear(tier, key)


__all__ = [
    "SEGMENT",
    "add_items",
    "clear_session",
    "get_items",
    "pop_item",
    "session_key",
]
