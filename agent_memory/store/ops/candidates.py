"""Recall candidates: the ranking fields of each match (full records are built only
for the hits), visibility (expiry, forgetting), bonuses and hybrid fusion."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from agent_memory.backends.base import KnnMatch
from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import damaged, unreadable
from agent_memory.core.replies import integer, text
from agent_memory.errors import ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema import lexical
from agent_memory.schema.labels import Labels, context_digest, overlap
from agent_memory.schema.records import stored_importance, utility_state
from agent_memory.schema.scoring import LEXICAL_GATE, Candidate
from agent_memory.schema.types import RecallWeights
from agent_memory.schema.utility import Contexts, parse_contexts, retention, utility
from agent_memory.store.fusion import fuse
from agent_memory.store.ops.read import is_expired

logger = logging.getLogger("agent_memory.store")


class _Light(NamedTuple):
    """What ranking needs of a candidate, read without parsing the whole record (the
    full :class:`MemoryItem` is built only for the hits that are returned)."""

    id: str
    content: str
    importance: float
    created_at: int
    last_accessed_at: int
    fields: Mapping[str, Any]
    touched: int  # the later of created_at and last_accessed_at


def light(ctx: StoreContext, match: KnnMatch, now: int) -> _Light | None:
    """The ranking fields of a match; None when it is gone, expired or unreadable."""
    fields = match.fields
    if not fields:
        return None  # deleted between the match and the read of its fields
    try:
        if is_expired(fields, now):
            return None
        created = integer(fields.get(L.F_CREATED, 0))
        raw_accessed = fields.get(L.F_ACCESSED)
        accessed = integer(raw_accessed) if raw_accessed is not None else created
        content = fields.get(L.F_CONTENT)
        return _Light(
            match.id,
            text(content) if content is not None else "",
            stored_importance(match.id, fields),
            created,
            accessed,
            fields,
            accessed if accessed > created else created,
        )
    except ReplyParseError as exc:
        unreadable(ctx, match.id, exc)
        return None


class Visible(NamedTuple):
    """A candidate that survived expiry and forgetting, before fusion."""

    pool: int
    item: _Light
    distance: float
    bonus: float
    matched: frozenset[str]
    retention: float = 1.0


_CHANNELS = {
    (True, True): frozenset({"semantic", "lexical"}),
    (True, False): frozenset({"semantic"}),
    (False, True): frozenset({"lexical"}),
    (False, False): frozenset(),
}  # the channels that found a candidate, by (semantic, lexical)


class Found(NamedTuple):
    """A match of a pool's semantic or lexical channel, once per memory."""

    match: KnnMatch
    distance: float  # a lexical-only match: the farthest semantic distance of the pool
    matched: frozenset[str]  # the channels that found it


def found(semantic: list[KnnMatch], lexical_matches: list[KnnMatch]) -> list[Found]:
    """Union of a pool's semantic and lexical matches, each memory once (the first of
    its matches kept, the semantic ones first)."""
    both, semantic_only, lexical_only = (
        _CHANNELS[True, True],
        _CHANNELS[True, False],
        _CHANNELS[False, True],
    )
    lexical_ids = {m.id for m in lexical_matches}
    seen: set[str] = set()
    out = []
    for match in semantic:
        if match.id not in seen:
            seen.add(match.id)
            channels = both if match.id in lexical_ids else semantic_only
            out.append(Found(match, match.distance, channels))
    if lexical_matches:
        bound = max((m.distance for m in semantic), default=2.0)
        for match in lexical_matches:
            if match.id not in seen:
                seen.add(match.id)
                out.append(Found(match, bound, lexical_only))
    return out


def visible_candidates(
    ctx: StoreContext,
    pool: int,
    matches: Sequence[Found],
    weights: RecallWeights,
    query_labels: Labels,
    now: int,
) -> list[Visible]:
    """The matches of a pool (see :func:`found`) minus the expired and the suppressed."""
    context = context_digest(query_labels)
    in_context = ctx.settings.reinforcement and context is not None
    forgetting = ctx.settings.forgetting
    out = []
    for match, distance, matched in matches:
        item = light(ctx, match, now)
        if item is None:
            continue
        bonus = 0.0
        kept = 1.0
        if ctx.settings.reinforcement or forgetting is not None:
            try:
                state = utility_state(item.fields, _contexts(ctx, item) if in_context else None)
            except ReplyParseError as exc:
                unreadable(ctx, item.id, exc)
                continue
            if forgetting is not None:
                kept = retention(
                    state, importance=item.importance, created_at=item.created_at,
                    now_ms=now, forgetting=forgetting,
                )  # fmt: skip
                if kept < forgetting.retention_threshold:
                    continue  # suppressed: stays inspectable, never recalled
            if ctx.settings.reinforcement:
                bonus += weights.utility * utility(state, context)
        if query_labels:
            bonus += weights.labels * overlap(query_labels, _labels_of(ctx, item))
        out.append(Visible(pool, item, distance, bonus, matched, kept))
    return out


def _contexts(ctx: StoreContext, item: _Light) -> Contexts | None:
    """A candidate's per-context usefulness; what is damaged (no writer makes it) is
    reported and left out, and its next evaluation rebuilds it."""
    raw = item.fields.get(L.F_CONTEXTS)
    if raw is None:
        return None
    try:
        contexts, damage = parse_contexts(text(raw))
    except ReplyParseError as exc:  # not UTF-8: as damaged as text that is not JSON
        contexts, damage = {}, str(exc)
    if damage is not None:
        _damaged(ctx, item.id, f"its per-context usefulness ({L.F_CONTEXTS})", damage)
    return contexts


def _damaged(ctx: StoreContext, memory_id: str, part: str, why: str) -> None:
    damaged(ctx, memory_id, part, why, outcome="ranked without it")


def _labels_of(ctx: StoreContext, item: _Light) -> Labels:
    """A candidate's labels for the label bonus; labels that are not a JSON object give
    no bonus (reported: no writer makes them)."""
    raw = item.fields.get(L.F_LABELS_RAW)
    if raw is None:
        return {}
    try:
        data = json.loads(text(raw))
    except (ValueError, ReplyParseError) as exc:
        _damaged(ctx, item.id, "its labels", f"not JSON: {exc}")
        return {}
    if not isinstance(data, dict):
        _damaged(ctx, item.id, "its labels", f"a JSON {type(data).__name__}, not an object")
        return {}
    return {str(k): tuple(str(v) for v in vs) for k, vs in data.items() if isinstance(vs, list)}


def lexical_scores(
    ctx: StoreContext, visible: Sequence[Visible], scorer: lexical.QueryScorer
) -> list[tuple[float, float]]:
    """``(bm25, coverage)`` of each candidate's text for the query."""
    return [scorer.score(_terms(ctx, v.item)) for v in visible]


def fused(
    visible: list[Visible],
    scored: list[tuple[float, float]] | None,
    weights: RecallWeights,
) -> list[Candidate]:
    """Candidates with their hybrid relevance, from each visible candidate's lexical
    scores (:func:`lexical_scores`); ``scored`` None: hybrid off, ``1 - d/2``."""
    if scored is None:
        return [
            Candidate(v.item.id, v.distance, v.item.importance, v.item.touched, v, v.bonus)
            for v in visible
        ]
    kept = [
        (v, s, c)
        for v, (s, c) in zip(visible, scored, strict=True)
        if s > 0 or "semantic" in v.matched
    ]
    relevance = fuse(
        [1.0 - v.distance for v, _, _ in kept], [s for _, s, _ in kept], weights.lexical
    )
    return [
        Candidate(
            v.item.id,
            v.distance,
            v.item.importance,
            v.item.touched,
            v,
            v.bonus,
            relevance=rel,
            lexical_match=s > 0 and c >= LEXICAL_GATE,
            lexical_score=s,
            matched=_CHANNELS["semantic" in v.matched, s > 0],
        )
        for (v, s, c), rel in zip(kept, relevance, strict=True)
    ]


def _terms(ctx: StoreContext, item: _Light) -> tuple[str, ...]:
    """The analysed terms of a candidate's text: read from ``lex_text`` where the store
    keeps them (the server's full-text form), else analysed here (memoised)."""
    stored = item.fields.get(L.F_LEX_TEXT)
    if stored is not None:
        try:
            return _stored_terms(stored)
        except ReplyParseError as exc:
            logger.warning(
                "memory %s of store %s has unreadable stored terms (%s); its text is "
                "analysed instead",
                item.id,
                ctx.keys.name,
                exc,
            )
            ctx.count("corrupt_records")
    return lexical.document_terms(item.content)


def _stored_terms(raw: Any) -> tuple[str, ...]:
    """The terms of a stored ``lex_text`` value (memoised by the raw value: the same
    memories come back as candidates recall after recall)."""
    if isinstance(raw, (bytes, str)):
        return _split_terms(raw)
    return tuple(text(raw).split())


@lru_cache(maxsize=8192)
def _split_terms(raw: bytes | str) -> tuple[str, ...]:
    return tuple(text(raw).split())


def rank_fields(ctx: StoreContext, *, with_labels: bool, with_content: bool) -> tuple[str, ...]:
    """The fields a recall candidate needs for ranking (the full record is fetched for
    the returned hits only, with the side effects); the content only for hybrid
    recalls, which rescore it with BM25. The creation stamp also goes into the selection
    receipt, so a completion credits only the memories the recall ranked, not one stored
    again under a forgotten one's id."""
    names = [L.F_IMPORTANCE, L.F_CREATED, L.F_ACCESSED, L.F_EXPIRES]
    if with_content:
        names.insert(0, L.F_CONTENT)
        if ctx.lexical_form == lexical.TEXT_FORM:
            names.insert(1, L.F_LEX_TEXT)  # the terms, analysed at write time
    if with_labels:
        names.append(L.F_LABELS_RAW)
    if ctx.settings.reinforcement or ctx.settings.forgetting is not None:
        names += [n for n in L.RETENTION_FIELDS if n not in names]
    if ctx.settings.reinforcement and with_labels:
        names.append(L.F_CONTEXTS)  # a learning context exists only with query labels
    return tuple(names)
