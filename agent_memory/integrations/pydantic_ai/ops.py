"""The operations of a pydantic-ai message history on a Valkey list (generators, no I/O).

A conversation is one list, ``{name}:pai_history:{conversation_id}``, one JSON message
per element, oldest first. Every operation is one single-key command, so each is atomic
on the server and a conversation lives in one cluster slot:

* ``load(limit)``: ``LRANGE key -limit -1`` (``0 -1`` for all). When corrupt elements sit
  among the newest ones the window doubles until ``limit`` valid messages are found or
  the list is exhausted (extra round trips only then).
* ``append``: one ``RPUSH`` of every message (concurrent writers interleave whole runs,
  never lose one).
* ``clear``: ``UNLINK``.

With a TTL, a ``PEXPIRE`` rides in the same round trip as ``load`` and ``append`` (a
sliding lifetime, as on the session tier). Each call also counts itself as
``session:reads`` or ``session:writes`` in ``{name}:__stats`` in that round trip.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessage

from agent_memory.cache._tier import TierCore
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import raise_first_error
from agent_memory.integrations.pydantic_ai.codec import decode_messages

#: The key segment of the histories: ``{name}:pai_history:{conversation_id}``.
SEGMENT = "pai_history"

READS = "session:reads"
WRITES = "session:writes"


def history_key(name: str, conversation_id: str) -> str:
    """The list holding conversation ``conversation_id`` of cache name ``name`` (pure)."""
    return f"{name}:{SEGMENT}:{conversation_id}"


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


def load(
    tier: TierCore, key: str, limit: int | None, ttl_ms: int | None
) -> Operation[tuple[list[ModelMessage], int]]:
    """The latest ``limit`` valid messages (all when ``None``; none when ``0``), oldest
    first, and the number of corrupt elements skipped on the way."""
    if limit is None:
        raw = yield from _access(tier, key, Command(("LRANGE", key, 0, -1)), ttl_ms, READS)
        return decode_messages(raw)
    if limit <= 0:
        return [], 0
    window: int = limit
    counter: str | None = READS
    while True:
        command = Command(("LRANGE", key, -window, -1))
        raw = yield from _access(tier, key, command, ttl_ms, counter)
        counter = None  # one read per call, however many windows it takes
        messages, skipped = decode_messages(raw)
        if len(messages) >= limit or len(raw) < window:
            return messages[-limit:], skipped
        window *= 2


def append(tier: TierCore, key: str, encoded: list[bytes], ttl_ms: int | None) -> Operation[None]:
    """Append the encoded messages atomically (one ``RPUSH``)."""
    yield from _access(tier, key, Command(("RPUSH", key, *encoded)), ttl_ms, WRITES)
    tier.note_stored(sum(len(text) for text in encoded))


def clear(tier: TierCore, key: str) -> Operation[None]:
    """Delete the conversation's list."""
    yield from _access(tier, key, Command(("UNLINK", key)), None, WRITES)


__all__ = ["SEGMENT", "append", "clear", "history_key", "load"]
