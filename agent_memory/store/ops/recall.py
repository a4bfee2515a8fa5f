"""``recall`` / ``recall_by_vector``: filtered KNN, gate, rank, merge, side effects.

Hybrid recall (``RecallWeights.lexical > 0``, the default, for text queries): each pool
(shared, and the session's) is searched twice in ONE pipelined round trip, by embedding
(cosine, the ``candidate_count(k)`` nearest) and by its terms (the ``lexical_count(k)``
best: on LoCoMo, 20 lexical candidates instead of 50 kept recall@10 / MRR@10 / off-topic
admissions at 0.721 / 0.470 / 0.28 and cut a recall by ~15%), together with an HMGET of
the namespace's term statistics. The union of both
result lists is rescored client-side: exact BM25 of each candidate's text, then
``rel = (1 - w) * mm(1 - d) + w * mm(bm25)`` (:mod:`agent_memory.store.fusion`) over the
union of all pools, the composite score on top. A candidate found only lexically gets
the largest semantic distance of its pool as its (lower-bound) distance and is dropped
when it shares no analysed term with the query (a hash collision). The lexical search
looks only among the memories holding the query's rarest terms
(:mod:`agent_memory.schema.term_choice`: a word most memories hold would make it visit
them all), so its cost is bounded whatever the namespace's size; BM25 still counts every
query term.

Side effects of a recall travel in one pipelined round trip: exposure counters (and,
with ``reinforce``, recency and access count) of the returned memories, the store's
recall counters, and the selection receipt that ``complete()`` consumes.
"""

from __future__ import annotations

import logging
import math
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.base import KnnQuery
from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import (
    Command,
    Operation,
    command,
    execute_batch,
    in_turns,
    pause,
)
from agent_memory.errors import AgentMemoryError, InvalidInputError, ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema import lexical, term_choice
from agent_memory.schema.filters import MemoryFilter, scope_filter
from agent_memory.schema.labels import Labels, check_labels, context_digest, filter_groups
from agent_memory.schema.records import parse_item
from agent_memory.schema.scoring import Ranked, rank
from agent_memory.schema.types import MemoryHit, RecallResult, RecallWeights, Scope
from agent_memory.search.query import (
    MAX_FILTER_BYTES,
    MAX_TERM_BYTES,
    TERM_CLAUSE_BYTES,
    filter_bytes,
    term_clause_bytes,
)
from agent_memory.store.ops.candidates import (
    Visible,
    found,
    fused,
    lexical_scores,
    rank_fields,
    visible_candidates,
)
from agent_memory.store.ops.embedding import embed_one
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.labeling import run_labeler
from agent_memory.store.ops.read import is_wrong_type
from agent_memory.store.ops.selection import HitRecord, side_effects
from agent_memory.store.validation import (
    check_k,
    check_scope,
    check_tags,
    check_threshold,
    unit_vector,
)

logger = logging.getLogger("agent_memory.store")

MAX_CANDIDATES = 1000
_NO_VECTOR = np.zeros(0, dtype=np.float32)
_NO_SCOPE = Scope()  # immutable: shared by every recall without a scope


def lexical_count(k: int) -> int:
    """How many memories the lexical search brings (beside the semantic candidates)."""
    return min(max(2 * k, 20), MAX_CANDIDATES)


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
    labels: Labels
    filters: tuple[MemoryFilter, ...]  # the shared pool's, then the session's (if any)


def _filters(
    scope: Scope | None, tags: tuple[str, ...], labels: Labels
) -> tuple[MemoryFilter, ...]:
    """The filters of a recall's pools, refused when one would not fit a query string the
    server accepts (:data:`~agent_memory.search.query.MAX_FILTER_BYTES`): the same bound
    on every backend, before anything is sent (a longer filter cannot be narrowed or
    split without changing what the recall may return)."""
    scope = scope or _NO_SCOPE
    groups = filter_groups(labels)
    filters = [scope_filter(scope, tags, session=None, label_groups=groups)]
    if scope.session_id is not None:
        filters.append(scope_filter(scope, tags, session=scope.session_id, label_groups=groups))
    if not groups:  # any scope and MAX_TAGS tags fit (tests/test_query_limits.py)
        return tuple(filters)
    size = max(filter_bytes(f) for f in filters)
    if size > MAX_FILTER_BYTES:
        raise InvalidInputError(
            f"the recall's filter (scope, {len(tags)} tags, "
            f"{sum(len(v) for v in labels.values())} label values) is {size} bytes of query, "
            f"over the {MAX_FILTER_BYTES} a search server accepts: use fewer tags or label "
            "values",
            field="labels",  # a scope and 64 tags always fit: the labels made it too long
        )
    return tuple(filters)


def make_request(
    ctx: StoreContext,
    *,
    scope: Scope | None,
    k: int,
    tags: Sequence[str] | None,
    threshold: float | None,
    weights: RecallWeights | None,
    reinforce: bool,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> RecallRequest:
    """Validate recall arguments (before any I/O)."""
    check_scope(scope)
    if weights is not None and not isinstance(weights, RecallWeights):
        raise InvalidInputError("weights must be a RecallWeights", field="weights")
    checked_tags = check_tags(tags)
    checked_labels = check_labels(labels, None)
    return RecallRequest(
        scope=scope,
        k=check_k(k),
        tags=checked_tags,
        threshold=check_threshold(threshold) if threshold is not None else None,
        weights=weights,
        reinforce=bool(reinforce),
        labels=checked_labels,
        filters=_filters(scope, checked_tags, checked_labels),
    )


def _stats_of_new_terms(
    ctx: StoreContext, namespace: str, terms: list[str], candidates: int
) -> Operation[lexical.TermStats | None]:
    """The namespace's statistics for ``terms`` read now (one round trip before the
    search) when the choice of the lexical candidate terms needs a document frequency
    not known yet: in a namespace larger than the search's budget (or of unknown size).
    None otherwise (the search's own read of the statistics refreshes them)."""
    docs = ctx.frequencies.docs(namespace)
    if docs is not None and docs <= term_choice.lexical_budget(
        candidates, ctx.settings.lexical_budget
    ):
        return None
    if docs is not None and not ctx.frequencies.unknown(namespace, terms):
        return None
    key = ctx.keys.term_stats(namespace)
    replies = yield from execute_batch([command("HMGET", key, *lexical.stats_fields(terms))])
    return _term_stats(ctx, namespace, terms, replies[0])


def _term_stats(
    ctx: StoreContext, namespace: str, terms: list[str], reply: Any
) -> lexical.TermStats:
    """The statistics of ``terms`` from an HMGET reply, learned for the term choice. A
    statistics key another writer replaced by another type reads as empty (logged and
    counted: derived data, rebuilt by the next write); other errors are raised."""
    if is_wrong_type(reply):
        logger.warning(
            "store %s: the term statistics of namespace %s are not a hash (%s); the "
            "recall ranks without them",
            ctx.keys.name, namespace, reply,
        )  # fmt: skip
        ctx.count("corrupt_records")
        return lexical.TermStats()
    if isinstance(reply, AgentMemoryError):
        raise reply
    damaged: list[str] = []
    stats = lexical.parse_stats(
        terms, reply, lambda name, value: damaged.append(f"{name}={value!r:.40}")
    )
    if damaged:
        logger.warning(
            "store %s: term statistics of namespace %s that are not counts or are beyond "
            "2**53 (%s) read as 0; the next write of each term replaces it",
            ctx.keys.name, namespace, ", ".join(damaged[:5]),
        )  # fmt: skip
        ctx.count("corrupt_records")
    ctx.frequencies.learn(namespace, stats, terms)
    return stats


def _text_clause(term: str) -> int:
    return term_clause_bytes(term, text_form=True)


def _clause_bytes(ctx: StoreContext) -> int | Callable[[str], int]:
    """The bytes each lexical term adds to the store's lexical query (the same for
    every term in the vector form)."""
    return _text_clause if ctx.lexical_form == lexical.TEXT_FORM else TERM_CLAUSE_BYTES


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


def recall_vector(
    ctx: StoreContext,
    request: RecallRequest,
    vector: NDArray[np.float32],
    query_labels: Labels | None = None,
    query_text: str | None = None,
) -> Operation[RecallResult]:
    """Recall with an already-validated unit query vector (hybrid when ``query_text``
    is given and ``RecallWeights.lexical > 0``)."""
    threshold = request.threshold if request.threshold is not None else ctx.config.threshold
    weights = request.weights or ctx.config.weights
    context_labels = {**(query_labels or {}), **request.labels}
    candidates_k = candidate_count(request.k)
    filters = request.filters
    terms: list[str] | None = None
    lexical_vector = None
    chosen: tuple[str, ...] = ()
    stats: lexical.TermStats | None = None
    if query_text is not None and weights.lexical > 0:
        terms = sorted(set(lexical.analyze(query_text)))
        if terms:
            namespace = filters[0].namespace
            stats = yield from _stats_of_new_terms(ctx, namespace, terms, candidates_k)
            df = ctx.frequencies.get(namespace, terms)
            budget = term_choice.lexical_budget(candidates_k, ctx.settings.lexical_budget)
            docs = ctx.frequencies.docs(namespace)
            chosen = term_choice.candidate_terms(
                terms, df, budget, docs, size=_clause_bytes(ctx), room=MAX_TERM_BYTES
            )
        if ctx.lexical_form == lexical.TEXT_FORM:
            lexical_vector = _NO_VECTOR  # the server matches the terms themselves
        else:
            lexical_vector = lexical.query_vector(terms)
    wanted = rank_fields(ctx, with_labels=bool(context_labels), with_content=terms is not None)
    queries = [KnnQuery(flt, candidates_k, vector, fields=wanted) for flt in filters]
    extra: list[Command] = []
    if lexical_vector is not None and chosen:
        queries += [
            KnnQuery(
                flt,
                lexical_count(request.k),
                lexical_vector,
                lexical=True,
                fields=wanted,
                terms=chosen,
            )
            for flt in filters
        ]
    if terms and stats is None:
        stats_key = ctx.keys.term_stats(filters[0].namespace)
        extra.append(command("HMGET", stats_key, *lexical.stats_fields(terms)))
    assert ctx.backend is not None
    outcome = yield from ctx.backend.search(ctx, queries, extra)
    if extra:
        stats = _term_stats(ctx, filters[0].namespace, terms or [], outcome.extra[0])
    stats = stats or lexical.TermStats()
    now = ctx.now_ms()
    pools = len(filters)
    visible: list[Visible] = []
    # Pauses cut the ranking of ~100 candidates into short turns (``in_turns``): eight
    # concurrent recalls then share an event loop in ~0.1 ms slices instead of queueing
    # the loop for the sum of their whole rankings (free for the blocking store).
    for i in range(pools):
        lexical_matches = outcome.matches[pools + i] if len(outcome.matches) > pools else []
        for part in in_turns(found(outcome.matches[i], lexical_matches)):
            yield from pause()
            visible += visible_candidates(ctx, i, part, weights, context_labels, now)
    scored: list[tuple[float, float]] | None = None
    if terms is not None:
        scorer = lexical.QueryScorer.of(terms, stats)
        scored = []
        for some in in_turns(visible):
            yield from pause()
            scored += lexical_scores(ctx, some, scorer)
    yield from pause()
    candidates = fused(visible, scored, weights)
    yield from pause()
    pool_of = {v.item.id: v.pool for v in visible}
    rankings = [
        rank(
            [c for c in candidates if pool_of[c.id] == i],
            k=request.k,
            threshold=threshold,
            weights=weights,
            half_life_seconds=ctx.config.half_life_seconds,
            now_ms=now,
        )
        for i in range(pools)
    ]
    if len(rankings) == 2:
        ranked = _merge(list(rankings[0].hits), list(rankings[1].hits), request.k)
    else:
        ranked = list(rankings[0].hits)
    distances = [r.nearest_distance for r in rankings if r.nearest_distance is not None]
    nearest = min(distances) if distances else None
    near_miss = not ranked and any(r.near_miss for r in rankings)
    total_candidates = len(candidates)
    if near_miss:
        _report_near_miss(ctx, nearest, threshold)
    yield from pause()
    selection_id = uuid.uuid4().hex
    records = yield from side_effects(
        ctx,
        ranked,
        now,
        request.reinforce,
        selection_id,
        context_digest(context_labels),
        request.scope,
    )
    hits: list[MemoryHit | None] = []
    for returned in in_turns(list(zip(ranked, records, strict=True)), _HITS_PER_TURN):
        yield from pause()
        hits += [_hit(ctx, r, fields) for r, fields in returned]
    return RecallResult(
        [hit for hit in hits if hit is not None],
        selection_id=selection_id,
        candidates=total_candidates,
        nearest_distance=nearest,
        near_miss=near_miss,
        backend=ctx.backend.name,
    )


_HITS_PER_TURN = 4  # a hit's full record costs as much to parse as ~6 candidates


def _hit(ctx: StoreContext, ranked: Ranked, record: HitRecord) -> MemoryHit | None:
    visible = ranked.candidate.payload
    assert isinstance(visible, Visible)
    fields = record.fields
    if fields is None or L.F_CONTENT not in fields:
        return None  # forgotten between the search and the fetch
    try:
        item = parse_item(
            visible.item.id,
            fields,
            usage=(record.exposures, record.accesses),
            retention=visible.retention,
        )
    except ReplyParseError as exc:
        logger.warning(
            "memory %s of store %s is unreadable: %s", visible.item.id, ctx.keys.name, exc
        )
        ctx.count("corrupt_records")
        return None
    candidate = ranked.candidate
    distance = candidate.distance
    return MemoryHit(
        item=item,
        score=ranked.score,
        distance=distance,
        similarity=1.0 - distance,
        matched=candidate.matched,
        lexical_score=candidate.lexical_score,
    )


def _report_near_miss(ctx: StoreContext, nearest: float | None, threshold: float) -> None:
    ctx.count("near_misses")
    if ctx.near_miss_warned:
        return
    ctx.near_miss_warned = True
    message = (
        f"recall on store {ctx.keys.name!r} found no memory within the threshold "
        f"{threshold:.3f}; the nearest was a near miss at cosine distance {nearest:.3f} "
        "(within twice the threshold). Nothing relevant may be stored; if memories that far "
        "are relevant with this embedder, raise the threshold (warned once per store)"
    )
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def query_labels(ctx: StoreContext, query: str) -> Operation[Labels]:
    """Labels the store's labeler gives the query (boost only); best-effort."""
    if ctx.settings.labeler is None:
        return {}
    labels = yield from run_labeler(ctx, query, what="a query")
    return labels or {}


def recall_text(ctx: StoreContext, request: RecallRequest, query: str) -> Operation[RecallResult]:
    """Embed ``query`` (and label it with the store's labeler) then recall."""
    yield from ensure_ready(ctx)
    vector = yield from embed_one(ctx, query)
    labels = yield from query_labels(ctx, query)
    result = yield from recall_vector(ctx, request, vector, labels, query)
    return result


def recall_by_vector(
    ctx: StoreContext, request: RecallRequest, vector: Sequence[float]
) -> Operation[RecallResult]:
    """Validate a caller's vector then recall."""
    yield from ensure_ready(ctx)
    unit = unit_vector(vector, ctx.dim, field="vector")
    result = yield from recall_vector(ctx, request, unit)
    return result
