"""``recall`` / ``recall_by_vector``: filtered KNN, gate, rank, merge, reinforce."""

from __future__ import annotations

import logging
import math
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.base import KnnMatch, KnnQuery
from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.errors import AgentMemoryError, InvalidInputError
from agent_memory.store import scripts
from agent_memory.store.context import StoreContext
from agent_memory.store.filters import scope_filter
from agent_memory.store.ops.embedding import embed_one
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.read import item_or_none
from agent_memory.store.scoring import Candidate, Ranked, rank
from agent_memory.store.types import MemoryHit, MemoryItem, RecallResult, RecallWeights, Scope
from agent_memory.store.validation import check_k, check_tags, check_threshold, unit_vector

logger = logging.getLogger("agent_memory.store")

MAX_CANDIDATES = 1000


def candidate_count(k: int) -> int:
    """How many nearest neighbours to fetch so re-ranking by recency/importance matters."""
    return min(max(4 * k, 50), MAX_CANDIDATES)


@dataclass(frozen=True, slots=True)
class RecallRequest:
    scope: Scope | None
    k: int
    tags: tuple[str, ...]
    threshold: float | None  # None: the live config's value at run time
    weights: RecallWeights | None
    reinforce: bool


def make_request(
    ctx: StoreContext,
    *,
    scope: Scope | None,
    k: int,
    tags: Sequence[str] | None,
    threshold: float | None,
    weights: RecallWeights | None,
    reinforce: bool,
) -> RecallRequest:
    """Validate recall arguments (before any I/O)."""
    if scope is not None and not isinstance(scope, Scope):
        raise InvalidInputError("scope must be a Scope or None", field="scope")
    if weights is not None and not isinstance(weights, RecallWeights):
        raise InvalidInputError("weights must be a RecallWeights", field="weights")
    return RecallRequest(
        scope=scope,
        k=check_k(k),
        tags=check_tags(tags),
        threshold=check_threshold(threshold) if threshold is not None else None,
        weights=weights,
        reinforce=bool(reinforce),
    )


def _merge(shared: list[Ranked], session: list[Ranked], k: int) -> list[Ranked]:
    """Merge two ranked pools so neither can crowd the other out.

    Each pool is guaranteed ``ceil(k/2)`` slots when it has that many hits; the rest go
    to the best remaining scores. The result is ordered by score.
    """
    quota = math.ceil(k / 2)
    chosen = shared[:quota] + session[:quota]
    rest = sorted(shared[quota:] + session[quota:], key=lambda r: -r.score)
    chosen += rest[: max(0, k - len(chosen))]
    chosen.sort(key=lambda r: (-r.score, r.candidate.distance, r.candidate.id))
    return chosen[:k]


def _candidates(ctx: StoreContext, matches: list[KnnMatch]) -> list[Candidate]:
    out = []
    for match in matches:
        item = item_or_none(ctx, match.id, dict(match.fields))
        if item is None:
            continue
        touched = max(item.created_at, item.last_accessed_at)
        out.append(Candidate(item.id, match.distance, item.importance, touched, item))
    return out


def recall_vector(
    ctx: StoreContext, request: RecallRequest, vector: NDArray[np.float32]
) -> Operation[RecallResult]:
    """Recall with an already-validated unit query vector."""
    scope = request.scope or Scope()
    threshold = request.threshold if request.threshold is not None else ctx.config.threshold
    weights = request.weights or ctx.config.weights
    candidates_k = candidate_count(request.k)
    queries = [KnnQuery(scope_filter(scope, request.tags, session=None), candidates_k, vector)]
    if scope.session_id is not None:
        session_flt = scope_filter(scope, request.tags, session=scope.session_id)
        queries.append(KnnQuery(session_flt, candidates_k, vector))
    assert ctx.backend is not None
    results = yield from ctx.backend.knn(ctx, queries)
    now = ctx.now_ms()
    rankings = [
        rank(
            _candidates(ctx, matches),
            k=request.k,
            threshold=threshold,
            weights=weights,
            half_life_seconds=ctx.config.half_life_seconds,
            now_ms=now,
        )
        for matches in results
    ]
    if len(rankings) == 2:
        hits = _merge(list(rankings[0].hits), list(rankings[1].hits), request.k)
    else:
        hits = list(rankings[0].hits)
    distances = [r.nearest_distance for r in rankings if r.nearest_distance is not None]
    nearest = min(distances) if distances else None
    near_miss = not hits and any(r.near_miss for r in rankings)
    total_candidates = sum(len(m) for m in results)
    if near_miss:
        _report_near_miss(ctx, nearest, threshold)
    yield from _side_effects(ctx, hits, now, request.reinforce)
    return RecallResult(
        [_hit(r) for r in hits],
        selection_id=uuid.uuid4().hex,
        candidates=total_candidates,
        nearest_distance=nearest,
        near_miss=near_miss,
        backend=ctx.backend.name,
    )


def _hit(ranked: Ranked) -> MemoryHit:
    item = ranked.candidate.payload
    assert isinstance(item, MemoryItem)
    distance = ranked.candidate.distance
    return MemoryHit(item=item, score=ranked.score, distance=distance, similarity=1.0 - distance)


def _report_near_miss(ctx: StoreContext, nearest: float | None, threshold: float) -> None:
    ctx.count("near_misses")
    if ctx.near_miss_warned:
        return
    ctx.near_miss_warned = True
    message = (
        f"recall on store {ctx.keys.name!r} returned nothing, but the nearest memory lay at "
        f"cosine distance {nearest:.3f}, within twice the threshold {threshold:.3f}; "
        "the threshold may be too strict for this embedder (warned once per store)"
    )
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def _side_effects(
    ctx: StoreContext, hits: list[Ranked], now: int, reinforce: bool
) -> Operation[None]:
    """Reinforcement and counters in one round trip."""
    commands: list[Command] = [command("HINCRBY", ctx.keys.stats, "recalls", "1")]
    commands.append(
        command("HINCRBY", ctx.keys.stats, "recall_hits" if hits else "recall_empty", "1")
    )
    if reinforce:
        commands += [
            Command(("EVAL", scripts.REINFORCE, "1", ctx.keys.memory(r.candidate.id), str(now)))
            for r in hits
        ]
    replies = yield from execute_batch(commands)
    for reply in replies:
        if isinstance(reply, AgentMemoryError):
            # The recall itself succeeded; a failed side effect must not lose it.
            logger.warning("recall side effect failed on %s: %s", ctx.keys.name, reply)
            ctx.count("side_effect_failures")
    ctx.count("recalls")
    ctx.count("recall_hits" if hits else "recall_empty")


def recall_text(ctx: StoreContext, request: RecallRequest, query: str) -> Operation[RecallResult]:
    """Embed ``query`` then recall."""
    yield from ensure_ready(ctx)
    vector = yield from embed_one(ctx, query)
    result = yield from recall_vector(ctx, request, vector)
    return result


def recall_by_vector(
    ctx: StoreContext, request: RecallRequest, vector: Sequence[float]
) -> Operation[RecallResult]:
    """Validate a caller's vector then recall."""
    yield from ensure_ready(ctx)
    unit = unit_vector(vector, ctx.dim, field="vector")
    result = yield from recall_vector(ctx, request, unit)
    return result
