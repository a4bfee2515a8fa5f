"""Evidence recall@k and MRR, per question category and overall.

recall@k is the share of questions with at least one evidence turn among the top k
(the definition of issue 11); MRR is the mean of 1 / rank of the first evidence turn,
counted within the top ``MRR_CUTOFF`` (MRR@10, so a library recall of k=10 and a full
numpy ranking are comparable); ``mrr_full`` (whole ranking) is given when known.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

KS = (1, 5, 10)
MRR_CUTOFF = 10
Metrics = dict[str, float]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One question's result: its category and the 1-based rank of its first evidence."""

    category: int
    rank: int | None  # None: no evidence in what was returned


def first_rank(ranked: Sequence[str], evidence: Iterable[str]) -> int | None:
    wanted = set(evidence)
    for i, dia in enumerate(ranked):
        if dia in wanted:
            return i + 1
    return None


def rank_from_scores(
    scores: NDArray[np.float64], ids: Sequence[str], evidence: Iterable[str]
) -> int:
    """Rank of the best evidence in a full score vector (ties broken by position, stable)."""
    wanted = set(evidence)
    best = max(float(scores[i]) for i, d in enumerate(ids) if d in wanted)
    first = min(i for i, d in enumerate(ids) if d in wanted and float(scores[i]) == best)
    above = int(np.count_nonzero(scores > best))
    ties_before = int(np.count_nonzero(scores[:first] == best))
    return above + ties_before + 1


def _metrics(ranks: Sequence[int | None]) -> Metrics:
    n = len(ranks)
    out: Metrics = {"n": float(n)}
    for k in KS:
        out[f"r@{k}"] = sum(1 for r in ranks if r is not None and r <= k) / n if n else 0.0
    out["mrr"] = sum(1.0 / r for r in ranks if r is not None and r <= MRR_CUTOFF) / n if n else 0.0
    out["mrr_full"] = sum(1.0 / r for r in ranks if r is not None) / n if n else 0.0
    return out


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Metrics]:
    """``{"1": metrics, ..., "4": metrics, "all": metrics}`` (categories present only)."""
    out: dict[str, Metrics] = {}
    for cat in sorted({o.category for o in outcomes}):
        out[str(cat)] = _metrics([o.rank for o in outcomes if o.category == cat])
    out["all"] = _metrics([o.rank for o in outcomes])
    return out
