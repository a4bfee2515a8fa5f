"""``recall`` / ``recall_by_vector``: filtered KNN, gate, rank, merge, side effects.

Hybrid recall (``RecallWeights.lexical > 0``, the default, for text queries): each pool
(shared, and the session's) is searched twice in ONE pipelined round trip, by embedding
(cosine, the ``candidate_count(k)`` nearest) and by hashed term vector (inner product,
as many), together with an HMGET of the namespace's term statistics. The union of both
result lists is rescored client-side: exact BM25 of each candidate's text, then
``rel = (1 - w) * mm(1 - d) + w * mm(bm25)`` (:mod:`agent_memory.store.fusion`) over the
union of all pools, the composite score on top. A candidate found only lexically gets
the largest semantic distance of its pool as its (lower-bound) distance and is dropped
when it shares no analysed term with the query (a hash collision).

Side effects of a recall travel in one pipelined round trip: exposure counters (and,
with ``reinforce``, recency and access count) of the returned memories, the store's
recall counters, and the selection receipt that ``complete()`` consumes.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.base import KnnMatch, KnnQuery
from agent_memory.core.effects import Command, Operation, call, command, execute_batch
from agent_memory.core.replies import integer, number, optional_text, text
from agent_memory.errors import AgentMemoryError, InvalidInputError, ReplyParseError
from agent_memory.store import layout as L
from agent_memory.store import lexical, scripts
from agent_memory.store.context import StoreContext
from agent_memory.store.filters import scope_filter
from agent_memory.store.fusion import fuse
from agent_memory.store.labels import Labels, check_labels, context_digest, filter_groups, overlap
from agent_memory.store.ops.embedding import embed_one
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.read import fields_of, is_expired
from agent_memory.store.records import parse_item, utility_state
from agent_memory.store.scoring import Candidate, Ranked, rank
from agent_memory.store.types import MemoryHit, RecallResult, RecallWeights, Scope
from agent_memory.store.utility import retention, utility
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
    labels: Labels


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
        labels=check_labels(labels, None),
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


@dataclass(frozen=True, slots=True)
class _Light:
    """What ranking needs of a candidate, read without parsing the whole record (the
    full :class:`MemoryItem` is built only for the hits that are returned)."""

    id: str
    content: str
    importance: float
    created_at: int
    last_accessed_at: int
    fields: dict[str, Any]

    @property
    def touched(self) -> int:
        return max(self.created_at, self.last_accessed_at)


def _light(ctx: StoreContext, match: KnnMatch, now: int) -> _Light | None:
    """The ranking fields of a match; None when it is gone, expired or unreadable."""
    fields = dict(match.fields)
    if L.F_CONTENT not in fields:
        return None
    try:
        if is_expired(fields, now):
            return None
        created = integer(fields.get(L.F_CREATED, 0))
        accessed = fields.get(L.F_ACCESSED)
        return _Light(
            match.id,
            text(fields[L.F_CONTENT]),
            number(fields.get(L.F_IMPORTANCE, 0.5)),
            created,
            integer(accessed) if accessed is not None else created,
            fields,
        )
    except ReplyParseError as exc:
        logger.warning("memory %s of store %s is unreadable: %s", match.id, ctx.keys.name, exc)
        ctx.count("corrupt_records")
        return None


@dataclass(frozen=True, slots=True)
class _Visible:
    """A candidate that survived expiry and forgetting, before fusion."""

    pool: int
    item: _Light
    distance: float
    bonus: float
    matched: frozenset[str]
    retention: float = 1.0


def _visible(
    ctx: StoreContext,
    pool: int,
    semantic: list[KnnMatch],
    lexical_matches: list[KnnMatch],
    weights: RecallWeights,
    query_labels: Labels,
    now: int,
) -> list[_Visible]:
    """Union of a pool's semantic and lexical matches, minus expired and suppressed."""
    context = context_digest(query_labels)
    forgetting = ctx.forgetting
    bound = max((m.distance for m in semantic), default=2.0)
    lexical_ids = {m.id for m in lexical_matches}
    semantic_ids = {m.id for m in semantic}
    merged = [(m, m.distance) for m in semantic]
    merged += [(m, bound) for m in lexical_matches if m.id not in semantic_ids]
    seen: set[str] = set()
    out = []
    for match, distance in merged:
        if match.id in seen:
            continue
        seen.add(match.id)
        item = _light(ctx, match, now)
        if item is None:
            continue
        bonus = 0.0
        kept = 1.0
        if ctx.reinforcement or forgetting is not None:
            try:
                state = utility_state(item.fields)
            except ReplyParseError:
                ctx.count("corrupt_records")
                continue
            if forgetting is not None:
                kept = retention(
                    state, importance=item.importance, created_at=item.created_at,
                    now_ms=now, forgetting=forgetting,
                )  # fmt: skip
                if kept < forgetting.retention_threshold:
                    continue  # suppressed: stays inspectable, never recalled
            if ctx.reinforcement:
                bonus += weights.utility * utility(state, context)
        if query_labels:
            bonus += weights.labels * overlap(query_labels, _labels_of(item.fields))
        matched = frozenset(
            name
            for name, found in (("semantic", match.id in semantic_ids),
                                ("lexical", match.id in lexical_ids))
            if found
        )  # fmt: skip
        out.append(_Visible(pool, item, distance, bonus, matched, kept))
    return out


def _labels_of(fields: dict[str, Any]) -> Labels:
    raw = fields.get(L.F_LABELS_RAW)
    if raw is None:
        return {}
    try:
        data = json.loads(text(raw))
    except (ValueError, ReplyParseError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): tuple(str(v) for v in vs) for k, vs in data.items() if isinstance(vs, list)}


def _fused(
    visible: list[_Visible],
    terms: list[str] | None,
    stats: lexical.TermStats,
    weights: RecallWeights,
) -> list[Candidate]:
    """Candidates with their hybrid relevance (``terms`` None: hybrid off, 1 - d/2)."""
    if terms is None:
        return [
            Candidate(v.item.id, v.distance, v.item.importance, v.item.touched, v, v.bonus)
            for v in visible
        ]
    scores = [lexical.bm25(terms, lexical.document_terms(v.item.content), stats) for v in visible]
    kept = [
        (v, s) for v, s in zip(visible, scores, strict=True) if s > 0 or "semantic" in v.matched
    ]
    relevance = fuse([1.0 - v.distance for v, _ in kept], [s for _, s in kept], weights.lexical)
    return [
        Candidate(
            v.item.id,
            v.distance,
            v.item.importance,
            v.item.touched,
            v,
            v.bonus,
            relevance=rel,
            lexical_match=s > 0,
            lexical_score=s,
            matched=v.matched | {"lexical"} if s > 0 else v.matched - {"lexical"},
        )
        for (v, s), rel in zip(kept, relevance, strict=True)
    ]


def recall_vector(
    ctx: StoreContext,
    request: RecallRequest,
    vector: NDArray[np.float32],
    query_labels: Labels | None = None,
    query_text: str | None = None,
) -> Operation[RecallResult]:
    """Recall with an already-validated unit query vector (hybrid when ``query_text``
    is given and ``RecallWeights.lexical > 0``)."""
    scope = request.scope or Scope()
    threshold = request.threshold if request.threshold is not None else ctx.config.threshold
    weights = request.weights or ctx.config.weights
    context_labels = {**(query_labels or {}), **request.labels}
    groups = filter_groups(request.labels)
    candidates_k = candidate_count(request.k)
    filters = [scope_filter(scope, request.tags, session=None, label_groups=groups)]
    if scope.session_id is not None:
        filters.append(
            scope_filter(scope, request.tags, session=scope.session_id, label_groups=groups)
        )
    terms: list[str] | None = None
    lexical_vector = None
    if query_text is not None and weights.lexical > 0:
        terms = sorted(set(lexical.analyze(query_text)))
        lexical_vector = lexical.query_vector(terms)
    wanted = rank_fields(ctx, bool(context_labels))
    queries = [KnnQuery(flt, candidates_k, vector, fields=wanted) for flt in filters]
    extra: list[Command] = []
    if lexical_vector is not None and terms:
        queries += [
            KnnQuery(flt, candidates_k, lexical_vector, lexical=True, fields=wanted)
            for flt in filters
        ]
        stats_key = ctx.keys.term_stats(filters[0].namespace)
        extra.append(command("HMGET", stats_key, *lexical.stats_fields(terms)))
    assert ctx.backend is not None
    outcome = yield from ctx.backend.search(ctx, queries, extra)
    stats = lexical.TermStats()
    if extra:
        reply = outcome.extra[0]
        if isinstance(reply, AgentMemoryError):
            raise reply
        stats = lexical.parse_stats(terms or [], reply)
    now = ctx.now_ms()
    pools = len(filters)
    visible: list[_Visible] = []
    for i in range(pools):
        lexical_matches = outcome.matches[pools + i] if len(outcome.matches) > pools else []
        visible += _visible(
            ctx, i, outcome.matches[i], lexical_matches, weights, context_labels, now
        )
    candidates = _fused(visible, terms, stats, weights)
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
    selection_id = uuid.uuid4().hex
    records = yield from _side_effects(
        ctx, ranked, now, request.reinforce, selection_id, context_digest(context_labels)
    )
    hits = [_hit(ctx, r, fields) for r, fields in zip(ranked, records, strict=True)]
    return RecallResult(
        [hit for hit in hits if hit is not None],
        selection_id=selection_id,
        candidates=total_candidates,
        nearest_distance=nearest,
        near_miss=near_miss,
        backend=ctx.backend.name,
    )


def rank_fields(ctx: StoreContext, with_labels: bool) -> tuple[str, ...]:
    """The fields a recall candidate needs for ranking (the full record is fetched for
    the returned hits only, with the side effects)."""
    names = [L.F_ID, L.F_CONTENT, L.F_IMPORTANCE, L.F_CREATED, L.F_ACCESSED, L.F_EXPIRES]
    if with_labels:
        names.append(L.F_LABELS_RAW)
    if ctx.reinforcement or ctx.forgetting is not None:
        names += [n for n in L.RETENTION_FIELDS if n not in names]
        names.append(L.F_CONTEXTS)
    return tuple(names)


def _hit(ctx: StoreContext, ranked: Ranked, fields: dict[str, Any] | None) -> MemoryHit | None:
    visible = ranked.candidate.payload
    assert isinstance(visible, _Visible)
    if fields is None or L.F_CONTENT not in fields:
        return None  # forgotten between the search and the fetch
    try:
        item = parse_item(visible.item.id, fields)
    except ReplyParseError as exc:
        logger.warning(
            "memory %s of store %s is unreadable: %s", visible.item.id, ctx.keys.name, exc
        )
        ctx.count("corrupt_records")
        return None
    if ctx.forgetting is not None:
        item = replace(item, retention=visible.retention)
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
        f"recall on store {ctx.keys.name!r} returned nothing, but the nearest memory lay at "
        f"cosine distance {nearest:.3f}, within twice the threshold {threshold:.3f}; "
        "the threshold may be too strict for this embedder (warned once per store)"
    )
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def _side_effects(
    ctx: StoreContext,
    hits: list[Ranked],
    now: int,
    reinforce: bool,
    selection_id: str,
    context: str | None,
) -> Operation[list[dict[str, Any] | None]]:
    """The hits' full records, then exposures, reinforcement, counters and the selection
    receipt, in one round trip. Returns each hit's fields (read before reinforcement)."""
    stats = ctx.keys.stats
    fetches = [Command(("HMGET", ctx.keys.memory(r.candidate.id), *L.ITEM_FIELDS)) for r in hits]
    commands: list[Command] = [
        *fetches,
        command("HINCRBY", stats, "recalls", "1"),
        command("HINCRBY", stats, "recall_hits" if hits else "recall_empty", "1"),
    ]
    flag = "1" if reinforce else "0"
    commands += [
        Command(("EVAL", scripts.REINFORCE, "1", ctx.keys.memory(r.candidate.id), str(now), flag))
        for r in hits
    ]
    if hits:
        receipt = json.dumps({"ids": [r.candidate.id for r in hits], "ctx": context or ""})
        ttl_ms = str(max(1, int(ctx.receipt_ttl * 1000)))
        commands += [
            command("SET", ctx.keys.receipt(selection_id), receipt, "PX", ttl_ms),
            command("ZADD", ctx.keys.receipts, str(now), selection_id),
            command("ZCARD", ctx.keys.receipts),
        ]
    replies = yield from execute_batch(commands)
    records: list[dict[str, Any] | None] = []
    for reply in replies[: len(fetches)]:
        if isinstance(reply, AgentMemoryError):
            raise reply
        records.append(fields_of(reply))
    for reply in replies[len(fetches) :]:
        if isinstance(reply, AgentMemoryError):
            # The recall itself succeeded; a failed side effect must not lose it.
            logger.warning("recall side effect failed on %s: %s", ctx.keys.name, reply)
            ctx.count("side_effect_failures")
    ctx.count("recalls")
    ctx.count("recall_hits" if hits else "recall_empty")
    card = replies[-1] if hits else None
    if (
        card is not None
        and not isinstance(card, AgentMemoryError)
        and integer(card) > ctx.max_receipts
    ):
        yield from _trim_receipts(ctx, integer(card))
    return records


def _trim_receipts(ctx: StoreContext, count: int) -> Operation[None]:
    """Keep the newest ``max_receipts`` receipts (oldest are dropped first)."""
    excess = count - ctx.max_receipts
    replies = yield from execute_batch([command("ZRANGE", ctx.keys.receipts, "0", str(excess - 1))])
    if isinstance(replies[0], AgentMemoryError):
        logger.warning("trimming receipts of %s failed: %s", ctx.keys.name, replies[0])
        ctx.count("side_effect_failures")
        return
    old = [optional_text(x) or "" for x in replies[0] or []]
    commands = [command("ZREM", ctx.keys.receipts, *old)] if old else []
    commands += [command("DEL", ctx.keys.receipt(sel)) for sel in old]
    done = yield from execute_batch(commands)
    for reply in done:
        if isinstance(reply, AgentMemoryError):
            logger.warning("trimming receipts of %s failed: %s", ctx.keys.name, reply)
            ctx.count("side_effect_failures")


def query_labels(ctx: StoreContext, query: str) -> Operation[Labels]:
    """Labels the store's labeler gives the query (boost only); best-effort."""
    if ctx.labeler is None:
        return {}
    try:
        found = yield from call(ctx.labeler, query, what="labeler")
        return check_labels(found, ctx.label_policy)
    except Exception as exc:  # noqa: BLE001 - labels only boost; recall goes on without them
        logger.warning("labeler failed on a query of %s: %s", ctx.keys.name, exc)
        ctx.count("labeler_failures")
        return {}


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
