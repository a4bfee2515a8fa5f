"""Ranking of recall candidates and eviction order (pure functions).

``score = w_sim * rel + w_rec * 2^(-age/half_life) + w_imp * importance`` with
``age = now - max(created_at, last_accessed_at)``. ``rel`` is the hybrid relevance
(:mod:`agent_memory.store.fusion`) or, with hybrid recall off, ``1 - d/2`` (the formula
of the BetterDB TypeScript library). The threshold is a gate, the score only orders what
passed it: a candidate is eligible when its cosine distance ``d <= threshold`` or, in
hybrid recall, when its lexical evidence is strong: it contains at least
:data:`LEXICAL_GATE` of the query's idf mass (the idf of the query's distinct analysed
terms, from the namespace's statistics). Sharing one common word is not enough: on
LoCoMo with 55 off-topic questions, "any shared term" let 5.4 memories per question
through, this rule 0.28, at the same recall@10 (``benchmarks/quality/PRECISION.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from agent_memory.schema.types import RecallWeights

NEAR_MISS_FACTOR = 2.0
LEXICAL_GATE = 0.5  # share of the query's idf mass a lexical match must contain


def recency(age_ms: float, half_life_seconds: float) -> float:
    """``2^(-age/half_life)``: 1 for a fresh memory, 0.5 after one half-life."""
    return float(2.0 ** (-(age_ms if age_ms > 0.0 else 0.0) / 1000.0 / half_life_seconds))


def composite_score(
    distance: float,
    importance: float,
    last_touched_ms: int,
    now_ms: int,
    weights: RecallWeights,
    half_life_seconds: float,
    relevance: float | None = None,
) -> float:
    """The ranking score of one candidate (``relevance`` None: ``1 - distance/2``)."""
    rel = relevance if relevance is not None else 1.0 - distance / 2.0
    return (
        weights.similarity * rel
        + weights.recency * recency(now_ms - last_touched_ms, half_life_seconds)
        + weights.importance * importance
    )


class Candidate(NamedTuple):
    """A search candidate before ranking (a named tuple: a recall builds about a
    hundred, and a tuple is built in a third of a frozen dataclass's time)."""

    id: str
    distance: float
    importance: float
    last_touched_ms: int
    payload: object = None
    bonus: float = 0.0  # learned utility and label matches (already weighted)
    relevance: float | None = None  # hybrid relevance in [0, 1]; None: 1 - distance/2
    lexical_match: bool = False  # lexical evidence passes the gate (see LEXICAL_GATE)
    lexical_score: float = 0.0  # BM25 of the candidate's text
    matched: frozenset[str] = frozenset({"semantic"})  # channels that found it


class Ranked(NamedTuple):
    """A candidate that passed the gate, with its score."""

    candidate: Candidate
    score: float


@dataclass(frozen=True, slots=True)
class Ranking:
    """Outcome of :func:`rank`."""

    hits: tuple[Ranked, ...]
    nearest_distance: float | None
    near_miss: bool


def rank(
    candidates: Sequence[Candidate],
    *,
    k: int,
    threshold: float,
    weights: RecallWeights,
    half_life_seconds: float,
    now_ms: int,
) -> Ranking:
    """Gate, score, sort (score desc, then distance, then id), cut to ``k``.

    The gate admits a candidate whose distance is ``<= threshold`` or whose lexical
    evidence passes (``lexical_match``); a candidate's ``bonus`` (utility, labels) can reorder
    what passed, never admit what did not. A lexical-only candidate's distance is a
    bound (the farthest semantic candidate's) and is gated as its distance: when the
    whole semantic pool lies within the threshold, weaker lexical evidence passes too
    (measured on LoCoMo: gating it on its evidence alone lost 0.025 recall@10 at the same
    off-topic admissions; README). ``nearest_distance`` and the near-miss report look at
    measured (semantic) distances only.
    """
    nearest = min((c.distance for c in candidates if "semantic" in c.matched), default=None)
    passed = [c for c in candidates if c.distance <= threshold or c.lexical_match]
    scored = [
        Ranked(
            c,
            composite_score(
                c.distance,
                c.importance,
                c.last_touched_ms,
                now_ms,
                weights,
                half_life_seconds,
                c.relevance,
            )
            + c.bonus,
        )
        for c in passed
    ]
    scored.sort(key=lambda r: (-r.score, r.candidate.distance, r.candidate.id))
    near_miss = not scored and nearest is not None and nearest <= threshold * NEAR_MISS_FACTOR
    return Ranking(tuple(scored[:k]), nearest, near_miss)


def eviction_order(
    ids: Sequence[str],
    importance: Sequence[float],
    last_touched_ms: Sequence[int],
    *,
    now_ms: int,
    weights: RecallWeights,
    half_life_seconds: float,
    created_ms: Sequence[int] | None = None,
    sequence: Sequence[int] | None = None,
) -> list[str]:
    """Ids from the first to evict to the last: lowest importance + recency first; ties
    go in write order (oldest ``created_ms``, then lowest write ``sequence``, then id),
    so of memories written in one millisecond the earliest write goes first."""
    imp = np.asarray(importance, dtype=np.float64)
    age_s = (now_ms - np.asarray(last_touched_ms, dtype=np.float64)).clip(min=0) / 1000.0
    keep_value = weights.importance * imp + weights.recency * np.exp2(-age_s / half_life_seconds)
    created = list(created_ms) if created_ms is not None else [0] * len(ids)
    seq = list(sequence) if sequence is not None else [0] * len(ids)
    order = sorted(
        range(len(ids)), key=lambda i: (float(keep_value[i]), created[i], seq[i], ids[i])
    )
    return [ids[i] for i in order]


def cosine_distances(
    matrix: NDArray[np.float32], query: NDArray[np.float32]
) -> NDArray[np.float64]:
    """Cosine distance of each (unit-length) row to a unit-length query, clipped to [0, 2]."""
    if matrix.size == 0:
        return np.zeros(0, dtype=np.float64)
    # FLOAT32 products, as the search modules compute them (and without copying the
    # matrix); the distances are then widened for ranking.
    sims = (matrix @ np.asarray(query, dtype=np.float32)).astype(np.float64)
    return np.clip(1.0 - sims, 0.0, 2.0)
