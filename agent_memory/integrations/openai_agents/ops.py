"""The operations of an Agents SDK session on a Valkey list (generators, no I/O).

A session is one list, ``{name}:oai_session:{session_id}``, one JSON item per element,
oldest first. Every operation is one single-key command, so each is atomic on the server
and a session lives in one cluster slot:

* ``get_items(limit)``: ``LRANGE key -limit -1`` (``0 -1`` for all). When corrupt
  elements sit among the newest ones the window doubles until ``limit`` valid items are
  found or the list is exhausted (extra round trips only then).
* ``add_items``: one ``RPUSH`` of every item (concurrent writers interleave whole
  batches, never lose one).
* ``pop_item``: ``RPOP``; a corrupt element is dropped and the next one popped.
* ``clear_session``: ``UNLINK``.

With a TTL, a ``PEXPIRE`` rides in the same round trip as every command (a sliding
lifetime, as on the session tier). Each call also counts itself as ``session:reads`` or
``session:writes`` in ``{name}:__stats`` in that round trip.
"""

from __future__ import annotations

from typing import Any

from agent_memory.cache._tier import TierCore
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import raise_first_error
from agent_memory.integrations.openai_agents.items import decode_item, decode_items

#: The key segment of the sessions: ``{name}:oai_session:{session_id}``.
SEGMENT = "oai_session"

READS = "session:reads"
WRITES = "session:writes"


def session_key(name: str, session_id: str) -> str:
    """The list holding session ``session_id`` of cache name ``name`` (pure)."""
    return f"{name}:{SEGMENT}:{session_id}"


def _access(
    tier: TierCore, key: str, command: Command, ttl_ms: int | None, counter: str | None
) -> Operation[Any]:
    commands = [command]
    if ttl_ms is not None:
        commands.append(Command(("PEXPIRE", key, ttl_ms)))
    counts = {counter: 1} if counter else None
    got = yield from batch_with_stats(tier.layout, tier.buffer, commands, counts)
    raise_first_error(got)
    return got[0]


def get_items(
    tier: TierCore, key: str, limit: int | None, ttl_ms: int | None
) -> Operation[list[dict[str, Any]]]:
    """The latest ``limit`` valid items (all when ``None``; none when ``<= 0``), oldest
    first."""
    if limit is None:
        raw = yield from _access(tier, key, Command(("LRANGE", key, 0, -1)), ttl_ms, READS)
        return decode_items(raw)
    if limit <= 0:
        return []
    window: int = limit
    counter: str | None = READS
    while True:
        command = Command(("LRANGE", key, -window, -1))
        raw = yield from _access(tier, key, command, ttl_ms, counter)
        counter = None  # one read per call, however many windows it takes
        items = decode_items(raw)
        if len(items) >= limit or len(raw) < window:
            return items[-limit:]
        window *= 2


def add_items(tier: TierCore, key: str, encoded: list[str], ttl_ms: int | None) -> Operation[None]:
    """Append the encoded items atomically (one ``RPUSH``)."""
    yield from _access(tier, key, Command(("RPUSH", key, *encoded)), ttl_ms, WRITES)
    tier.note_stored(sum(len(text.encode("utf-8")) for text in encoded))


def pop_item(tier: TierCore, key: str, ttl_ms: int | None) -> Operation[dict[str, Any] | None]:
    """Remove and return the newest valid item (``None`` when there is none)."""
    counter: str | None = WRITES
    while True:
        raw = yield from _access(tier, key, Command(("RPOP", key)), ttl_ms, counter)
        counter = None
        if raw is None:
            return None
        item = decode_item(raw)
        if item is not None:
            return item


def clear_session(tier: TierCore, key: str) -> Operation[None]:
    """Delete the session's list."""
    yield from _access(tier, key, Command(("UNLINK", key)), None, WRITES)


__all__ = [
    "SEGMENT",
    "add_items",
    "clear_session",
    "get_items",
    "pop_item",
    "session_key",
]
