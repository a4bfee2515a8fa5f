"""Fusion of the semantic and lexical channels of one recall pool (pure functions).

The relevance of a candidate is a CombSUM of per-pool min-max normalised channels:
``rel = (1 - w) * mm(similarity) + w * mm(bm25)`` with ``w`` = ``RecallWeights.lexical``
(0.6 by default, chosen by leave-one-conversation-out on LoCoMo, see
``benchmarks/quality/PRECISION.md``).
``mm(x) = (x - min) / (max - min)`` over the pool; when every candidate has the same
value the channel gives 1 to all when it has a signal (a semantic match / a positive
BM25) and 0 otherwise. When no candidate shares a term with the query (no lexical
signal at all), the semantic channel takes the whole relevance: ``rel = mm(similarity)``.
Relevance is therefore relative to the pool: the best semantic candidate and the best
lexical candidate each get the channel's full weight, whatever the embedder's scale.
"""

from __future__ import annotations

from collections.abc import Sequence


def minmax(values: Sequence[float], *, signal: bool) -> list[float]:
    """Min-max normalise ``values`` to [0, 1] (see the module docstring for ties)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi > lo:
        span = hi - lo
        return [(v - lo) / span for v in values]
    return [1.0 if signal else 0.0 for _ in values]


def fuse(
    similarities: Sequence[float], scores: Sequence[float], lexical_share: float
) -> list[float]:
    """Relevance in [0, 1] of each candidate from its cosine similarity and its BM25."""
    if len(similarities) != len(scores):
        raise ValueError("one similarity and one lexical score per candidate")
    sem = minmax(similarities, signal=bool(similarities))
    has_lexical = any(s > 0 for s in scores)
    lex = minmax(scores, signal=has_lexical)
    w = min(max(lexical_share, 0.0), 1.0) if has_lexical else 0.0
    return [(1.0 - w) * s + w * x for s, x in zip(sem, lex, strict=True)]
