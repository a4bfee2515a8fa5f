"""What every async and sync cache-tier facade shares: client checks, runners, stats."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.cache.keys import KeyLayout
from agent_memory.cache.scripts import COUNTED_GET
from agent_memory.cache.stats import (
    CacheStats,
    StatsBuffer,
    batch_with_stats,
    flush_op,
    stats_op,
)
from agent_memory.core.clients import (
    AsyncExecutor,
    SyncExecutor,
    is_async_client,
    is_cluster_client,
)
from agent_memory.core.effects import Command, Operation, T
from agent_memory.core.replies import integer, raise_first_error, text
from agent_memory.core.runner import run_async, run_sync
from agent_memory.errors import (
    InvalidInputError,
    ReplyParseError,
    ServerUnavailableError,
    StoreClosedError,
    WrongTypeError,
)
from agent_memory.telemetry import OperationScope, Telemetry
from agent_memory.telemetry.core import describe_result

logger = logging.getLogger("agent_memory.cache")


class Tally:
    """What one running operation of a tier counted for the tier's metrics: its lookups
    (hits, misses, micro-dollars saved) and the bytes it stored. Each operation has its
    own (:data:`_TALLY`), so concurrent operations of one tier (asyncio tasks, threads
    of a sync tier) never take each other's counts, and no lock is needed: only the
    operation's own code adds to it."""

    __slots__ = ("core", "hits", "misses", "saved", "stored")

    def __init__(self, core: TierCore) -> None:
        self.core = core
        self.hits = 0
        self.misses = 0
        self.saved = 0
        self.stored = 0


# The tally of the tier operation running in this context (set by the runners of
# AsyncTier and SyncTier around one operation; a context of its own per task and thread).
_TALLY: ContextVar[Tally | None] = ContextVar("agent_memory_cache_tally", default=None)


class TierCore:
    """State shared by the operations of one tier (no I/O)."""

    def __init__(self, name: str) -> None:
        self.layout = KeyLayout(name)
        self.buffer = StatsBuffer()
        self._stored = 0
        # Counted outside an operation's tally (an operation driven by other means than
        # the tier runners): hits, misses, micro-dollars saved; bytes stored.
        self._lookups = [0, 0, 0]
        self._loose = False  # any of those is not zero
        self._lock = threading.Lock()
        # Set by tiers that track sessions: the count the active-sessions gauge shows.
        self.active_sessions: Callable[[], int] | None = None
        # On a standalone server a lookup counts its own hit or miss in the same
        # round trip (one script); on a cluster the entry and the stats hash live in
        # different slots, so the outcome rides on the tier's next batch instead.
        self.cluster = False

    def counted_get(
        self, key: str, hit: Sequence[str], miss: Sequence[str], *, priced: bool = False
    ) -> Operation[tuple[Any, Counted | None]]:
        """GET ``key`` (undecoded: a value that is not UTF-8 is the caller's to report)
        and count the outcome: ``(value, what the script counted)``.

        A key holding another type than a string (another writer's) is reported
        (:meth:`unreadable`) and read as absent, so the lookup is a miss and the store
        that follows replaces it. What was counted is ``None`` on a cluster, where
        :meth:`settle` buffers the outcome instead.
        """
        if self.cluster:
            (raw,) = yield from batch_with_stats(
                self.layout, self.buffer, [Command(("GET", key), binary=True)]
            )
            if isinstance(raw, WrongTypeError):
                self.unreadable(key, f"not a string: {raw}")
                return None, None
            raise_first_error([raw])
            return raw, None
        script = (
            "EVAL", COUNTED_GET, "2", key, self.layout.stats, str(len(hit)), "1" if priced else "0"
        )  # fmt: skip
        (reply,) = yield from batch_with_stats(
            self.layout, self.buffer, [Command((*script, *hit, *miss), binary=True)]
        )
        raise_first_error([reply])
        value, counted = counted_reply(reply)
        if counted.other_type:
            self.unreadable(key, "not a string: the key holds another type")
        return value, counted

    def settle(
        self,
        counted: Counted | None,
        hit: bool,
        fields: tuple[Sequence[str], Sequence[str]],
        cost: int = 0,
    ) -> None:
        """Make the counters say what the lookup returned: ``hit`` (and ``cost`` saved),
        with ``fields`` = (hit fields, miss fields).

        On a cluster the outcome is buffered. On a standalone server the script counted
        already: counter updates the server refused are logged and counted
        (``stats_failures``), and where the script read the entry otherwise than this
        library (another JSON decoder), the difference rides on the tier's next batch.
        """
        self.note_lookups(int(hit), int(not hit), cost if hit else 0)
        if counted is None:
            counts = dict.fromkeys(fields[0] if hit else fields[1], 1)
            self.buffer.add({**counts, "cost_saved_micros": cost} if hit else counts)
            return
        if counted.failed:
            logger.warning(
                "cache %s: counter update failed on %s (fields %s); the lookup goes on",
                self.layout.name,
                self.layout.stats,
                ", ".join(counted.failed),
            )
            self.buffer.note("stats_failures", len(counted.failed))
        self.buffer.add(
            {
                field: amount
                for field, amount in corrections(counted, hit, fields, cost).items()
                if field not in counted.failed
            }
        )

    def note_lookups(self, hits: int, misses: int, saved: int = 0) -> None:
        """Count lookups for the tier's metrics: in the tally of the operation of this
        tier running in this context (read by its runner when it ends, whatever it
        returns: a wrapped call's response, a list of vectors), else (an operation run
        by other means) in the tier's loose counts, which the next operation of the
        tier sends to the metrics."""
        tally = _TALLY.get()
        if tally is not None and tally.core is self:
            tally.hits += hits
            tally.misses += misses
            tally.saved += saved
            return
        with self._lock:
            self._loose = True
            self._lookups[0] += hits
            self._lookups[1] += misses
            self._lookups[2] += saved

    def unreadable(self, key: str, reason: str) -> None:
        """An entry no writer of this library (or of agent-cache) makes: logged and
        counted (``corrupt_entries``); the caller reads it as absent."""
        logger.warning(
            "cache %s: %s is unreadable (%s); read as absent", self.layout.name, key, reason
        )
        self.buffer.note("corrupt_entries")

    def note_stored(self, size: int) -> None:
        """Count bytes an operation wrote (in its tally, else loose: as
        :meth:`note_lookups`)."""
        tally = _TALLY.get()
        if tally is not None and tally.core is self:
            tally.stored += size
            return
        with self._lock:
            self._loose = True
            self._stored += size

    def take_loose(self) -> tuple[int, int, int, int]:
        """The loose (hits, misses, saved, stored) since the last call; without a lock
        when there are none (the usual case: every operation of a tier's runners counts
        in its own tally)."""
        if not self._loose:
            return 0, 0, 0, 0
        with self._lock:
            self._loose = False
            (hits, misses, saved), stored = self._lookups, self._stored
            self._lookups, self._stored = [0, 0, 0], 0
            return hits, misses, saved, stored

    def stats(self) -> Operation[CacheStats]:
        return stats_op(self.layout, self.buffer)

    def flush_stats(self) -> Operation[None]:
        return flush_op(self.layout, self.buffer)


@dataclass(frozen=True, slots=True)
class Counted:
    """What the counting script counted for one lookup.

    Attributes:
        hit: counted as a hit (else as a miss).
        cost: micro-dollars it added to ``cost_saved_micros``.
        failed: the counters whose update the server refused.
        other_type: the entry's key holds another type than a string (counted as a
            miss; its value is read as absent).
    """

    hit: bool
    cost: int
    failed: tuple[str, ...]
    other_type: bool = False


def counted_reply(reply: Any) -> tuple[Any, Counted]:
    """The value and the counts of a :data:`~agent_memory.cache.scripts.COUNTED_GET`
    reply (pure).

    Raises:
        ReplyParseError: not the script's reply.
    """
    if not isinstance(reply, (list, tuple)) or len(reply) < 3:
        raise ReplyParseError(f"unexpected reply of the cache lookup script: {reply!r:.100}")
    value, hit, cost, *failed = reply
    names = tuple(
        bytes(f).decode("utf-8", "replace") if isinstance(f, bytes) else str(f) for f in failed
    )
    state = integer(hit)
    return value, Counted(state == 1, integer(cost), names, other_type=state == -1)


def corrections(
    counted: Counted, hit: bool, fields: tuple[Sequence[str], Sequence[str]], cost: int
) -> dict[str, int]:
    """The counter increments that turn what the script counted into the outcome the
    lookup returned (pure; empty when they agree)."""
    out: dict[str, int] = {}
    if counted.hit != hit:
        for field in fields[0]:
            out[field] = 1 if hit else -1
        for field in fields[1]:
            out[field] = -1 if hit else 1
    saved = cost if hit else 0
    if saved != counted.cost:
        out["cost_saved_micros"] = saved - counted.cost
    return out


def read_entry(core: TierCore, key: str, raw: Any) -> dict[str, Any] | None:
    """A cached entry's JSON object (``None`` when absent); one that is not a JSON
    object with a ``response`` is reported (:meth:`TierCore.unreadable`) and read as
    absent, a miss."""
    if raw is None:
        return None
    try:
        entry = json.loads(text(raw))
    except (ValueError, RecursionError, ReplyParseError) as exc:
        core.unreadable(key, f"not JSON: {exc}")
        return None
    if not isinstance(entry, dict) or "response" not in entry:
        core.unreadable(key, "not an entry with a response")
        return None
    return entry


def _check_client(client: Any, *, want_async: bool, cls: str) -> None:
    if is_async_client(client) != want_async:
        kind, other = ("an asyncio", "Sync" + cls) if want_async else ("a blocking", cls[4:])
        raise InvalidInputError(
            f"{cls} needs {kind} client (valkey.asyncio / redis.asyncio for the async "
            f"classes, valkey / redis for the Sync ones); use {other} instead",
            field="client",
        )


def _name_of(op: Operation[Any]) -> str:
    """The operation's name: generator objects carry their function's name."""
    return str(getattr(op, "__name__", "operation"))


def _record(
    telemetry: Telemetry, tier: str, scope: OperationScope, result: Any, tally: Tally
) -> None:
    """The metrics and span attributes of one operation that ended: the span describes
    the operation's own lookups (its tally); the metrics count them, plus any loose
    counts of the tier."""
    core = tally.core
    describe_result(scope, result)
    hits, misses, saved = tally.hits, tally.misses, tally.saved
    if hits + misses == 1 and not isinstance(getattr(result, "hit", None), bool):
        scope.set("cache.hit", hits == 1)  # a wrapped call: its one lookup
    loose_hits, loose_misses, loose_saved, loose_stored = core.take_loose()
    telemetry.cache_stored(tier, tally.stored + loose_stored)
    _count_events(telemetry, core)
    if core.active_sessions is not None:
        telemetry.cache_sessions(core.active_sessions())
    telemetry.cache_request(tier, True, amount=hits + loose_hits)
    telemetry.cache_request(tier, False, amount=misses + loose_misses)
    telemetry.cache_cost_saved(saved + loose_saved)


class AsyncTier:
    """Base of the asyncio facades (one span and latency observation per operation)."""

    __slots__ = ("_closed_by", "_cluster", "_executor", "_telemetry", "_tier", "client")

    def __init__(
        self, client: Any, name: str, tier: str, registry: CollectorRegistry | None
    ) -> None:
        _check_client(client, want_async=True, cls=type(self).__name__)
        self._cluster = is_cluster_client(client)
        self.client = client
        # Replies stay undecoded whatever the client's decode_responses: each value is
        # decoded on its own, so one damaged value is one unreadable entry, not a failed
        # operation.
        self._executor = AsyncExecutor(client, raw_replies=True)
        self._tier = tier
        self._telemetry = Telemetry(name, kind="cache", registry=registry)
        self._closed_by: str | None = None  # set by close_tier: the tier is closed

    def _tier_core(self) -> TierCore:
        core: TierCore = getattr(self, "_core").tier  # noqa: B009 - every tier sets _core
        return core

    async def _run(self, op: Operation[T]) -> T:
        _refuse_if_closed(self, op)
        tally = Tally(self._tier_core())
        with self._telemetry.operation(_name_of(op), tier=self._tier) as scope:
            token = _TALLY.set(tally)
            try:
                result = await run_async(op, self._executor, self._telemetry.child_span)
            except BaseException as exc:  # what it met before failing is counted all the same
                _record(self._telemetry, self._tier, scope, None, tally)
                _raise_if_closed(self, exc)
                raise
            finally:
                _TALLY.reset(token)
            _record(self._telemetry, self._tier, scope, result, tally)
            return result


class SyncTier:
    """Base of the blocking facades (one span and latency observation per operation)."""

    __slots__ = ("_closed_by", "_cluster", "_executor", "_telemetry", "_tier", "client")

    def __init__(
        self, client: Any, name: str, tier: str, registry: CollectorRegistry | None
    ) -> None:
        _check_client(client, want_async=False, cls=type(self).__name__)
        self._cluster = is_cluster_client(client)
        self.client = client
        # Replies stay undecoded (see AsyncTier).
        self._executor = SyncExecutor(client, raw_replies=True)
        self._tier = tier
        self._telemetry = Telemetry(name, kind="cache", registry=registry)
        self._closed_by: str | None = None  # set by close_tier: the tier is closed

    def _tier_core(self) -> TierCore:
        core: TierCore = getattr(self, "_core").tier  # noqa: B009 - every tier sets _core
        return core

    def _run(self, op: Operation[T]) -> T:
        _refuse_if_closed(self, op)
        tally = Tally(self._tier_core())
        with self._telemetry.operation(_name_of(op), tier=self._tier) as scope:
            token = _TALLY.set(tally)
            try:
                result = run_sync(op, self._executor, self._telemetry.child_span)
            except BaseException as exc:  # what it met before failing is counted all the same
                _record(self._telemetry, self._tier, scope, None, tally)
                _raise_if_closed(self, exc)
                raise
            finally:
                _TALLY.reset(token)
            _record(self._telemetry, self._tier, scope, result, tally)
            return result


def close_tier(tier: AsyncTier | SyncTier, owner: str) -> None:
    """Close ``tier`` for good: every later operation raises
    :class:`~agent_memory.errors.StoreClosedError` naming ``owner`` (what closed it and
    its client, e.g. the ``AgentMemory`` it belongs to). A tier made on its own has no
    ``close()``: its client is the caller's, so it stays usable as long as that client."""
    tier._closed_by = owner


def _refuse_if_closed(tier: AsyncTier | SyncTier, op: Operation[Any]) -> None:
    if tier._closed_by is not None:
        op.close()
        raise StoreClosedError(f"the {tier._tier} cache of {tier._closed_by} is closed")


def _raise_if_closed(tier: AsyncTier | SyncTier, exc: BaseException) -> None:
    """An operation's lost connection as :class:`StoreClosedError` when the tier was
    closed while it ran (its owner closed the client under it, from another thread)."""
    if tier._closed_by is not None and isinstance(exc, ServerUnavailableError):
        raise StoreClosedError(
            f"the {tier._tier} cache of {tier._closed_by} was closed during the operation"
        ) from exc


def export_events(tier: AsyncTier | SyncTier) -> None:
    """Send the events noted on ``tier`` since its last operation to its metrics now (for
    the adapters that note what an operation returned once it has ended)."""
    _count_events(tier._telemetry, tier._tier_core())


def _count_events(telemetry: Telemetry, core: TierCore) -> None:
    for event, amount in core.buffer.take_events().items():
        telemetry.count(event, amount)
