"""Counters of the cache tiers in the hash ``{name}:__stats`` (BetterDB field names).

Fields: ``llm:hits``, ``llm:misses``, ``tool:hits``, ``tool:misses``,
``tool:{tool}:hits``, ``tool:{tool}:misses`` (the tool name verbatim),
``session:reads``, ``session:writes``, ``embedding:hits`` (= embedding calls saved),
``embedding:misses`` and ``cost_saved_micros`` (USD x 1e6).

Counters travel in the same round trip as the operation they count. Counts known before
the reply (session reads and writes) ride on the operation's own batch. A lookup's hit
or miss (and an LLM entry's cost, priced when it was stored) is counted by the lookup's
own server-side script on a standalone server. On a cluster the entry and the stats hash
live in different slots, so the outcome is buffered in the tier and rides on that tier's
next batch (``stats()`` and ``flush_stats()`` send what is buffered): another reader of
the hash may see a tier's most recent lookup one operation late there.

Errors of a counter command (for example ``WRONGTYPE`` when the key holds something
else) are logged and do not fail the operation they ride on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.cache.keys import KeyLayout
from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation, execute_batch
from agent_memory.core.numbers import INT64_MAX, INT64_MIN, server_int
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import AgentMemoryError

logger = logging.getLogger(__name__)


class StatsBuffer:
    """Counter increments waiting for the next batch of a tier (thread-safe), and the
    tier's own events (unreadable entries, failed counter updates) waiting for its
    metrics (:meth:`note`, :meth:`take_events`)."""

    __slots__ = ("_counts", "_events", "_lock")

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._events: dict[str, int] = {}
        self._lock = threading.Lock()

    def note(self, event: str, amount: int = 1) -> None:
        """Count an event for the tier's metrics (read by the facade after each call)."""
        with self._lock:
            self._events[event] = self._events.get(event, 0) + amount

    def take_events(self) -> dict[str, int]:
        with self._lock:
            events, self._events = self._events, {}
        return events

    def add(self, counts: Mapping[str, int]) -> None:
        with self._lock:
            for field, amount in counts.items():
                if amount:
                    self._counts[field] = self._counts.get(field, 0) + amount

    def take(self) -> dict[str, int]:
        with self._lock:
            counts, self._counts = self._counts, {}
        return counts

    def pending(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


def counter_commands(stats_key: str, counts: Mapping[str, int]) -> list[Command]:
    """One ``HINCRBY`` per non-zero counter."""
    return [
        Command(("HINCRBY", stats_key, field, amount)) for field, amount in counts.items() if amount
    ]


def batch_with_stats(
    layout: KeyLayout,
    buffer: StatsBuffer,
    commands: Sequence[Command],
    counts: Mapping[str, int] | None = None,
    *,
    counters_first: bool = False,
) -> Operation[list[Any]]:
    """Sub-operation: run ``commands`` plus the buffered and given counters in one batch.

    Returns the replies of ``commands`` only (error instances included, the caller
    decides). ``counters_first`` sends the counters before ``commands`` (so a read of the
    stats hash sees them). When the round trip itself fails, the buffered counters are put back and
    the error propagates; the same when the operation is abandoned mid-way (its batch
    may then have been applied: a rare double count rather than a certain loss).
    """
    taken = buffer.take()
    merged = dict(taken)
    for field, amount in (counts or {}).items():
        merged[field] = merged.get(field, 0) + amount
    extra = counter_commands(layout.stats, merged)
    ordered = [*extra, *commands] if counters_first else [*commands, *extra]
    try:
        got = yield from execute_batch(ordered)
    except (AgentMemoryError, GeneratorExit):  # failed, or abandoned (a cancelled task)
        buffer.add(taken)
        raise
    own, counted = (
        (got[len(extra) :], got[: len(extra)])
        if counters_first
        else (got[: len(commands)], got[len(commands) :])
    )
    for reply in counted:
        if isinstance(reply, AgentMemoryError):
            logger.warning("cache counter update failed on %s: %s", layout.stats, reply)
            buffer.note("stats_failures")
    return own


@dataclass(frozen=True, slots=True)
class ToolStats:
    """Lookups of one tool.

    Attributes:
        tool: the tool name.
        hits: cache hits.
        misses: cache misses.
    """

    tool: str
    hits: int
    misses: int

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    @property
    def hit_rate(self) -> float:
        """Hits / lookups (0.0 when there were none)."""
        return self.hits / self.lookups if self.lookups else 0.0


@dataclass(frozen=True, slots=True)
class CacheStats:
    """A snapshot of ``{name}:__stats``.

    Attributes:
        llm_hits, llm_misses: LLM cache lookups.
        tool_hits, tool_misses: tool cache lookups (all tools).
        tools: per-tool counters, sorted by tool name.
        session_reads, session_writes: session store operations.
        embedding_hits, embedding_misses: embedding lookups; hits are embedding calls
            saved.
        cost_saved_micros: USD saved by LLM hits, in micro-dollars.
    """

    llm_hits: int = 0
    llm_misses: int = 0
    tool_hits: int = 0
    tool_misses: int = 0
    tools: tuple[ToolStats, ...] = ()
    session_reads: int = 0
    session_writes: int = 0
    embedding_hits: int = 0
    embedding_misses: int = 0
    cost_saved_micros: int = 0

    @property
    def llm_hit_rate(self) -> float:
        total = self.llm_hits + self.llm_misses
        return self.llm_hits / total if total else 0.0

    @property
    def tool_hit_rate(self) -> float:
        total = self.tool_hits + self.tool_misses
        return self.tool_hits / total if total else 0.0

    @property
    def embedding_calls_saved(self) -> int:
        return self.embedding_hits

    @property
    def cost_saved(self) -> float:
        """USD saved by LLM hits."""
        return self.cost_saved_micros / 1_000_000

    def tool(self, name: str) -> ToolStats:
        """Counters of one tool (zeros when it was never looked up)."""
        for entry in self.tools:
            if entry.tool == name:
                return entry
        return ToolStats(name, 0, 0)


_SIMPLE_FIELDS = {
    "llm:hits": "llm_hits",
    "llm:misses": "llm_misses",
    "tool:hits": "tool_hits",
    "tool:misses": "tool_misses",
    "session:reads": "session_reads",
    "session:writes": "session_writes",
    "embedding:hits": "embedding_hits",
    "embedding:misses": "embedding_misses",
    "cost_saved_micros": "cost_saved_micros",
}


def _count(raw: Any) -> int | None:
    """A stats field's value as a count, ``None`` unless it is what HINCRBY takes: the
    text of a 64-bit integer (no sign ``+``, spaces, underscores, leading zeros,
    fraction or exponent, which Python's ``int`` would read as another number; wider
    numbers would overflow the rates and cost derived from them)."""
    if isinstance(raw, int) and not isinstance(raw, bool):  # an in-process client's
        return raw if INT64_MIN <= raw <= INT64_MAX else None
    try:
        value = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        return None
    return server_int(value) if isinstance(value, str) else None


def parse_stats(reply: Any, *, unreadable: Callable[[str, Any], None] | None = None) -> CacheStats:
    """Parse an ``HGETALL {name}:__stats`` reply (unknown fields are ignored; a field
    that is not the text of a 64-bit integer, as HINCRBY writes it, is left out and
    reported to ``unreadable(field, value)``)."""
    values: dict[str, int] = {}
    per_tool: dict[str, list[int]] = {}
    for raw_field, raw in replies.raw_pairs(reply):
        field = replies.lenient_text(raw_field)
        if field is None:  # a field name that is not UTF-8: another writer's
            if unreadable is not None:
                unreadable(repr(raw_field), raw)
            continue
        amount = _count(raw)
        if amount is None:
            if unreadable is not None:
                unreadable(field, raw)
            continue
        if field in _SIMPLE_FIELDS:
            values[_SIMPLE_FIELDS[field]] = amount
            continue
        if not field.startswith("tool:"):
            continue
        for index, suffix in enumerate((":hits", ":misses")):
            if field.endswith(suffix) and len(field) > len("tool:") + len(suffix):
                tool = field[len("tool:") : -len(suffix)]
                per_tool.setdefault(tool, [0, 0])[index] = amount
    tools = tuple(ToolStats(t, hm[0], hm[1]) for t, hm in sorted(per_tool.items()))
    return CacheStats(tools=tools, **values)


def stats_op(layout: KeyLayout, buffer: StatsBuffer) -> Operation[CacheStats]:
    """Operation: flush buffered counters and read the stats hash in one round trip."""
    (reply,) = yield from batch_with_stats(
        layout, buffer, [Command(("HGETALL", layout.stats))], counters_first=True
    )
    raise_first_error([reply])
    return parse_stats(reply, unreadable=unreadable_field(layout, buffer))


def unreadable_field(layout: KeyLayout, buffer: StatsBuffer) -> Callable[[str, Any], None]:
    """The ``unreadable`` report of :func:`parse_stats` for a tier: logged, and counted
    in ``corrupt_entries``."""

    def report(field: str, value: Any) -> None:
        logger.warning(
            "cache stats %s: field %s is not a count (%r); left out", layout.stats, field, value
        )
        buffer.note("corrupt_entries")

    return report


def flush_op(layout: KeyLayout, buffer: StatsBuffer) -> Operation[None]:
    """Operation: send the buffered counters now (no round trip when nothing is buffered)."""
    counts = buffer.take()
    if not counts:
        return
    buffer.add(counts)
    yield from batch_with_stats(layout, buffer, [])
