"""De-duplication on write: a memory within a small cosine distance of one already in
the same exact scope refreshes that one instead of being stored twice."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from agent_memory.backends.base import KnnMatch, KnnQuery
from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation, command
from agent_memory.core.replies import integer, optional_text, raise_first_error
from agent_memory.errors import AgentMemoryError, ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.encoding import encode_value
from agent_memory.schema.filters import scope_filter
from agent_memory.schema.records import NewMemory
from agent_memory.schema.scoring import cosine_distances
from agent_memory.schema.versions import bump, fresh_token
from agent_memory.store.ops.forget import expected_value
from agent_memory.store.ops.settle import execute_writes

DEFAULT_DEDUPE_DISTANCE = 0.05
"""Cosine distance under which two texts count as the same memory. Measured with
all-MiniLM-L6-v2: re-wordings that add or drop a word or fix a typo sit at 0.01-0.05,
while different facts about the same subject start around 0.15."""

_NEIGHBOURS = 8
"""Matches the first duplicate search asks for."""
_WIDEN = 8
"""Each further search of an undecided memory asks for this many times more matches."""
_MAX_NEIGHBOURS = 4096
"""The widest search: past it a memory whose near matches all sit in other scopes is
written as new (logged and counted as ``dedupe_search_exhausted``)."""

_ROUNDING = 1e-5
"""Allowance for the search modules' FLOAT32 arithmetic: two copies of one vector come
back up to about 1e-7 apart (valkey-search, RediSearch), so at ``dedupe_distance=0`` an
exact copy is still a duplicate; re-wordings sit a thousand times farther."""

_logger = logging.getLogger(__name__)


def _tokens(memory: NewMemory) -> tuple[str, str | None, str | None, str]:
    scope = memory.scope
    return (
        memory.namespace_token,
        encode_value(scope.agent_id) if scope.agent_id is not None else None,
        encode_value(scope.thread_id) if scope.thread_id is not None else None,
        memory.session_token,
    )


def stored_duplicate(
    wanted: tuple[str, str | None, str | None, str],
    matches: Sequence[KnnMatch],
    k: int,
    distance: float,
    now_ms: int,
) -> tuple[bool, KnnMatch | None]:
    """``(True, match)``: the nearest match of ``matches`` (at most ``k`` asked) within
    ``distance`` in the exact scope ``wanted`` and not expired by ``now_ms``, or
    ``(True, None)`` when there is none; ``(False, None)`` when all ``k`` matches are
    near but in other scopes (or expired), so a wider search may still find one.

    The filter of the search cannot say "no agent" or "no thread" (valkey-search has no
    test for a missing field), so a memory without them is searched among its
    namespace's memories of every agent and thread, and the exact scope is checked here.
    """
    for match in matches:  # nearest first (the backends' knn sorts them)
        if match.distance > distance + _ROUNDING:
            return True, None
        found = (
            optional_text(match.fields.get(L.F_NAMESPACE)),
            optional_text(match.fields.get(L.F_AGENT)),
            optional_text(match.fields.get(L.F_THREAD)),
            optional_text(match.fields.get(L.F_SESSION)),
        )
        if found == wanted and not _expired(match.fields.get(L.F_EXPIRES), now_ms):
            # (one expired by the store's clock, not yet reaped, would not be refreshed:
            # chosen, it would hide a live copy written in its place behind it)
            return True, match
    return len(matches) < k, None


def _expired(expires: object, now_ms: int) -> bool:
    """An ``expires_at`` at or before ``now_ms`` (an unreadable one is left to the
    refresh, which finds such a memory as it is)."""
    if expires is None:
        return False
    try:
        return integer(expires) <= now_ms
    except ReplyParseError:
        return False


def find_duplicates(
    ctx: StoreContext, memories: Sequence[NewMemory], distance: float
) -> Operation[tuple[list[str | None], dict[str, bytes]]]:
    """For each memory: the id it collapses into (stored or earlier in the batch), or
    None; and for each stored one, the write ``seq`` the search read (as a guard expects
    it: :func:`~agent_memory.store.ops.forget.expected_value`), which its refresh checks
    (:class:`Refresh`).

    One search in the common case; a memory whose nearest matches are all within
    ``distance`` but in other scopes (the same text under other agents or threads) is
    searched again, :data:`_WIDEN` times wider, up to :data:`_MAX_NEIGHBOURS`.
    """
    assert ctx.backend is not None
    filters = [
        scope_filter(m.scope, (), session=m.scope.session_id if m.durability == "session" else None)
        for m in memories
    ]
    stored: list[str | None] = [None] * len(memories)
    seqs: dict[str, bytes] = {}
    pending = list(range(len(memories)))
    k = _NEIGHBOURS
    now = ctx.now_ms()
    while pending:
        queries = [KnnQuery(filters[i], k, memories[i].vector) for i in pending]
        results = yield from ctx.backend.knn(ctx, queries)
        undecided = []
        for index, matches in zip(pending, results, strict=True):
            decided, match = stored_duplicate(_tokens(memories[index]), matches, k, distance, now)
            if match is not None:
                stored[index] = match.id
                # (read again by a wider search: the later read, as the memory now is)
                seqs[match.id] = expected_value(match.fields.get(L.F_SEQ))
            if not decided:
                undecided.append(index)
        if undecided and k >= _MAX_NEIGHBOURS:
            _logger.warning(
                "dedupe: %d memories have %d near matches in other scopes and none in "
                "their own within the search; written as new",
                len(undecided),
                k,
            )
            ctx.count("dedupe_search_exhausted", len(undecided))
            undecided = []
        pending = undecided
        k = min(k * _WIDEN, _MAX_NEIGHBOURS)
    out: list[str | None] = []
    for index, memory in enumerate(memories):
        wanted = _tokens(memory)
        match_id = stored[index]
        if match_id is None:
            for earlier in range(index):
                other = memories[earlier]
                if (
                    _tokens(other) == wanted
                    and batch_distance(other, memory) <= distance + _ROUNDING
                ):
                    match_id = out[earlier] or other.id
                    break
        out.append(match_id)
    return out, seqs


def batch_distance(first: NewMemory, second: NewMemory) -> float:
    """Cosine distance of two memories of one batch, as a search would measure it:
    0 for equal vectors, else the FLOAT32 product the backends compute."""
    if np.array_equal(first.vector, second.vector):
        return 0.0
    return float(cosine_distances(first.vector[np.newaxis, :], second.vector)[0])


@dataclass(frozen=True, slots=True)
class Refresh:
    """A stored duplicate to refresh: the write ``seq`` its search read (a guard's
    expected value: refreshed only while it holds it), the importance and lifetime the
    new writes bring (``expires_at`` ms, ``None``: persistent), the sets listing it by
    expiry, and how many writes collapse into it (each counts as an access, as one after
    another would)."""

    id: str
    seq: bytes
    importance: float
    expires_at: int | None
    expiry_sets: tuple[str, ...]
    registry_version: str
    writes: int = 1


def _longer(first: int | None, second: int | None) -> int | None:
    """The longer of two lifetimes (``expires_at`` ms; ``None``, persistent, beats any)."""
    return None if first is None or second is None else max(first, second)


def merge_refresh(earlier: Refresh | None, later: Refresh) -> Refresh:
    """Two writes collapsing into one stored memory: the higher importance, the longer
    lifetime (persistent beats any TTL) and both counted."""
    if earlier is None:
        return later
    return replace(
        later,
        importance=max(earlier.importance, later.importance),
        expires_at=_longer(earlier.expires_at, later.expires_at),
        writes=earlier.writes + later.writes,
    )


def absorb(
    written: tuple[NewMemory, float | None], copy: tuple[NewMemory, float | None]
) -> tuple[NewMemory, float | None]:
    """A memory of a batch about to be written (with its TTL in seconds) after a later
    ``copy`` of the batch collapsed into it (pure): what the copy's refresh would have
    left, written one after the other: the higher importance, the longer lifetime and one
    more access (at the batch's time, the memory's creation)."""
    memory, ttl = written
    other, other_ttl = copy
    longer = None if ttl is None or other_ttl is None else max(ttl, other_ttl)
    merged = replace(
        memory,
        importance=max(memory.importance, other.importance),
        expires_at=_longer(memory.expires_at, other.expires_at),
        access_count=memory.access_count + 1,
    )
    return merged, longer


def refresh_command(ctx: StoreContext, refresh: Refresh, now_ms: int) -> Command:
    """The script refreshing one stored duplicate at the store's time ``now_ms``, only
    while it is the memory its search found; on a standalone server it re-scores the
    duplicate's expiry sets in the same step."""
    expires, ttl = "", "0"
    if refresh.expires_at is not None:
        expires, ttl = str(refresh.expires_at), str(max(1, refresh.expires_at - now_ms))
    listings: tuple[str, ...] = ()
    if not ctx.settings.cluster:
        listings = (refresh.registry_version, *refresh.expiry_sets)
    return Command(
        (
            "EVAL", scripts.REFRESH_DUPLICATE, str(1 + len(listings)),
            ctx.keys.memory(refresh.id), *listings,
            str(now_ms), repr(refresh.importance), expires, ttl, str(refresh.writes),
            refresh.seq, refresh.id, fresh_token(),
        )
    )  # fmt: skip


def rescore_commands(refresh: Refresh) -> list[Command]:
    """Re-score an extended memory in its expiry sets (``+inf``: persistent): a
    cluster's second step (its sets live in other slots than the memory)."""
    score = str(refresh.expires_at) if refresh.expires_at is not None else "+inf"
    return [
        *(command("ZADD", key, "XX", score, refresh.id) for key in refresh.expiry_sets),
        bump(refresh.registry_version),
    ]


def refresh_existing(ctx: StoreContext, refreshes: Sequence[Refresh]) -> Operation[set[str]]:
    """Refresh stored duplicates; returns the ids that no longer hold them (gone,
    rewritten under their id since the search, or expired by the store's clock: the
    caller writes fresh memories instead). A duplicate whose lifetime the new write
    extends is re-scored in its expiry sets (by the refresh script on a standalone
    server; on a cluster a second round trip, only then)."""
    if not refreshes:
        return set()
    now = ctx.now_ms()
    replies = yield from execute_writes(ctx, [refresh_command(ctx, r, now) for r in refreshes])
    gone = set()
    extended: list[Command] = []
    for refresh, reply in zip(refreshes, replies, strict=True):
        if isinstance(reply, AgentMemoryError):
            raise reply
        outcome = integer(reply)
        if not outcome:
            gone.add(refresh.id)
        elif outcome == 2 and ctx.settings.cluster:
            extended += rescore_commands(refresh)
    if extended:
        raise_first_error((yield from execute_writes(ctx, extended)))
    return gone
