"""Fusion of a semantic and a lexical channel over a candidate set, and leave-one-
conversation-out (LOCO) fitting of fusion constants (prototypes for issue 11).

Every function works on one query's candidate arrays: ``sim`` (cosine similarity,
``1 - d``) and ``lex`` (exact BM25 of the candidate text), plus ``in_sem`` / ``in_lex``
(whether the candidate came from that channel's KNN). A candidate found only by the
lexical KNN has no known distance: its similarity is imputed as the lowest similarity
the semantic KNN returned (an upper bound: it was not among the nearest).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Arr = NDArray[np.float64]
RRF_K = 60.0


def minmax(x: Arr) -> Arr:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def zscore(x: Arr) -> Arr:
    sd = float(x.std())
    return (x - float(x.mean())) / sd if sd > 0 else np.zeros_like(x)


def ranks(x: Arr) -> Arr:
    """1-based rank of each entry by descending value (ties share the better rank)."""
    desc = np.sort(-x)
    return np.searchsorted(desc, -x, side="left").astype(np.float64) + 1.0


def saturate(lex: Arr, kappa: float) -> Arr:
    """``bm25 / (bm25 + kappa)``: an absolute, query-independent lexical score in [0, 1)."""
    return lex / (lex + kappa)


@dataclass(frozen=True, slots=True)
class Fusion:
    """A fusion rule; ``param`` is its one free constant (fitted by LOCO when ``grid``)."""

    name: str
    fn: Callable[[Arr, Arr, NDArray[np.bool_], NDArray[np.bool_], float], Arr]
    param: float
    grid: tuple[float, ...] = ()

    def __call__(
        self, sim: Arr, lex: Arr, in_sem: NDArray[np.bool_], in_lex: NDArray[np.bool_]
    ) -> Arr:
        return self.fn(sim, lex, in_sem, in_lex, self.param)

    def with_param(self, param: float) -> Fusion:
        return Fusion(self.name, self.fn, param, self.grid)


def _rrf(sim: Arr, lex: Arr, in_sem: NDArray[np.bool_], _l: NDArray[np.bool_], w: float) -> Arr:
    r_sem = np.where(in_sem, ranks(np.where(in_sem, sim, -np.inf)), float(in_sem.sum()) + 1)
    r_lex = np.where(lex > 0, ranks(lex), float(len(lex)) + 1)
    return (1.0 - w) / (RRF_K + r_sem) + w / (RRF_K + r_lex)


def _minmax(sim: Arr, lex: Arr, _s: NDArray[np.bool_], _l: NDArray[np.bool_], w: float) -> Arr:
    return (1.0 - w) * minmax(sim) + w * minmax(lex)


def _z(sim: Arr, lex: Arr, _s: NDArray[np.bool_], _l: NDArray[np.bool_], w: float) -> Arr:
    return (1.0 - w) * zscore(sim) + w * zscore(lex)


def _mnz(sim: Arr, lex: Arr, in_sem: NDArray[np.bool_], in_lex: NDArray[np.bool_], w: float) -> Arr:
    hits = in_sem.astype(np.float64) + (lex > 0).astype(np.float64)
    return hits * ((1.0 - w) * minmax(sim) + w * minmax(lex))


def _sat(sim: Arr, lex: Arr, _s: NDArray[np.bool_], _l: NDArray[np.bool_], w: float) -> Arr:
    """Absolute (no per-query calibration): ``(1-w) * sim + w * bm25 / (bm25 + 4)``."""
    return (1.0 - w) * sim + w * saturate(lex, 4.0)


WEIGHTS = tuple(round(0.1 * i, 1) for i in range(1, 10))
FUSIONS = (
    Fusion("RRF k=60, equal weights", _rrf, 0.5),
    Fusion("weighted RRF k=60 (w_lex LOCO)", _rrf, 0.5, WEIGHTS),
    Fusion("CombSUM (min-max, equal)", _minmax, 0.5),
    Fusion("min-max weighted (w_lex LOCO)", _minmax, 0.5, WEIGHTS),
    Fusion("z-score weighted (w_lex LOCO)", _z, 0.5, WEIGHTS),
    Fusion("CombMNZ (min-max, equal)", _mnz, 0.5),
    Fusion("absolute: sim + bm25/(bm25+4) (w LOCO)", _sat, 0.5, WEIGHTS),
)


def loco(
    groups: Sequence[str],
    evaluate: Callable[[str, float], Sequence[int | None]],
    grid: Sequence[float],
    objective: Callable[[Sequence[int | None]], float],
) -> tuple[dict[str, list[int | None]], dict[str, float]]:
    """Leave-one-conversation-out: for each held-out group pick the grid value that
    maximises ``objective`` on the other groups' ranks, then rank the held-out group with
    it. Returns held-out ranks per group and the chosen value per group."""
    table = {(g, p): list(evaluate(g, p)) for g in groups for p in grid}
    held: dict[str, list[int | None]] = {}
    chosen: dict[str, float] = {}
    for g in groups:
        train = [x for x in groups if x != g]
        best = max(grid, key=lambda p: (objective([r for x in train for r in table[(x, p)]]), -p))
        chosen[g] = best
        held[g] = table[(g, best)]
    return held, chosen


def objective_r10_mrr(ranks_: Sequence[int | None]) -> float:
    """Recall@10 plus a small MRR@10 tie-breaker."""
    n = max(len(ranks_), 1)
    r10 = sum(1 for r in ranks_ if r is not None and r <= 10) / n
    mrr = sum(1.0 / r for r in ranks_ if r is not None and r <= 10) / n
    return r10 + 0.1 * mrr
