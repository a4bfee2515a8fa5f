"""Issue 11 research: lexical channels, candidate pools, fusion and recency on LoCoMo,
computed with numpy from the same (cached) MiniLM vectors the library stores.

A *design* ranks each question's memories; the outcome is the rank of its first evidence
turn (``None`` when the design never surfaces it). Fitted constants are chosen by
leave-one-conversation-out (LOCO) and only held-out ranks are reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.quality import fusion as F
from benchmarks.quality import lexical as L
from benchmarks.quality.data import Conversation
from benchmarks.quality.embedcache import embed_cached
from benchmarks.quality.metrics import Outcome, rank_from_scores, summarize

Arr = NDArray[np.float64]
Ranks = list[int | None]
DAY = 86400.0
DEFAULT_ANALYZER = L.Analyzer(stop=True, stem=True)


@dataclass
class Prepared:
    """One conversation's channels: every question against every turn."""

    conv: Conversation
    ids: list[str]
    cos: Arr  # (questions, turns) cosine similarity
    created: Arr  # (turns,) epoch seconds
    turn_vecs: NDArray[np.float32]  # unit rows, what the store holds
    query_vecs: NDArray[np.float32]
    docs: dict[str, list[list[str]]] = field(default_factory=dict)  # analyzer name -> terms
    queries: dict[str, list[list[str]]] = field(default_factory=dict)
    bm25: dict[str, L.Bm25] = field(default_factory=dict)
    cache: dict[tuple[Any, ...], Arr] = field(default_factory=dict)

    def terms(self, an: L.Analyzer) -> tuple[list[list[str]], list[list[str]], L.Bm25]:
        key = f"stop={an.stop},stem={an.stem}"
        if key not in self.docs:
            self.docs[key] = [an(t.content()) for t in self.conv.turns]
            self.queries[key] = [an(q.text) for q in self.conv.questions]
            self.bm25[key] = L.Bm25(self.docs[key])
        return self.docs[key], self.queries[key], self.bm25[key]

    def bm25_scores(self, an: L.Analyzer) -> Arr:
        key = ("bm25", an)
        if key not in self.cache:
            _, queries, index = self.terms(an)
            self.cache[key] = np.array([index.scores(q) for q in queries]).reshape(len(queries), -1)
        return self.cache[key]

    def hashed_scores(self, an: L.Analyzer, dim: int, idf: str, tf: str = "log") -> Arr:
        """Inner product of hashed query and document term vectors (what a second VECTOR
        field with DISTANCE_METRIC IP returns as ``1 - score``)."""
        key = ("hash", an, dim, idf, tf)
        if key not in self.cache:
            docs, queries, index = self.terms(an)
            doc_idf = _write_time_idf(docs) if idf == "write-time" else None
            mat = L.doc_vectors(docs, dim, mode=tf, avgdl=index.avgdl, idf=doc_idf)
            q_idf = index.idf if idf == "query-exact" else None
            qm = np.array([L.query_vector(q, dim, q_idf) for q in queries]).reshape(-1, dim)
            self.cache[key] = (qm @ mat.T).astype(np.float64)
        return self.cache[key]


def _write_time_idf(docs: list[list[str]]) -> Callable[[int, str], float]:
    """IDF baked in at write time from the statistics of the moment (stale later)."""
    seen: dict[str, int] = {}
    table: list[dict[str, float]] = []
    for i, terms in enumerate(docs):
        for term in set(terms):
            seen[term] = seen.get(term, 0) + 1
        n = i + 1
        table.append(
            {t: float(np.log(1 + (n - seen[t] + 0.5) / (seen[t] + 0.5))) for t in set(terms)}
        )
    return lambda i, term: table[i][term]


def prepare(convs: Sequence[Conversation], embedder: Any) -> list[Prepared]:
    out = []
    for conv in convs:
        turns = embed_cached(embedder, [t.content() for t in conv.turns])
        qs = embed_cached(embedder, [q.text for q in conv.questions])
        cos = (qs.astype(np.float64) @ turns.T.astype(np.float64)).reshape(len(qs), -1)
        created = np.array([t.created_at for t in conv.turns], dtype=np.float64)
        out.append(Prepared(conv, [t.dia_id for t in conv.turns], cos, created, turns, qs))
    return out


def full_ranks(p: Prepared, scores: Arr) -> Ranks:
    return [rank_from_scores(scores[i], p.ids, q.evidence) for i, q in enumerate(p.conv.questions)]


def _topn(scores: Arr, n: int) -> NDArray[np.intp]:
    return np.argsort(-scores, kind="stable")[:n]


def recency_factor(p: Prepared, half_life_days: float | None) -> Arr:
    if half_life_days is None:
        return np.zeros_like(p.created)
    age = np.clip(p.conv.end_time - p.created, 0, None)
    return np.exp2(-age / (half_life_days * DAY))


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A recall pipeline: candidates = semantic top-``n`` (+ lexical KNN top-``n`` over a
    hashed ``dim``-wide field when ``dim``), fused by ``fusion`` (``None``: cosine only),
    then the composite ``w_sim * rel + w_rec * recency + w_imp * 0.5`` on top, with the
    cosine-distance gate ``threshold`` (``None``: no gate)."""

    n: int = 50
    dim: int | None = 256
    fusion: F.Fusion | None = None
    analyzer: L.Analyzer = DEFAULT_ANALYZER
    hash_idf: str = "none"
    weights: tuple[float, float, float] = (1.0, 0.0, 0.0)
    half_life_days: float | None = None
    threshold: float | None = None
    gate_lexical: bool = True  # lexical matches pass the gate even beyond the threshold

    def ranks(
        self,
        p: Prepared,
        param: float | None = None,
        pools: Sequence[tuple[Sequence[int], Sequence[int]]] | None = None,
    ) -> Ranks:
        """Rank of the first evidence per question; ``pools`` replaces the numpy KNN pools
        by (semantic, lexical) candidate indices that a server returned."""
        fuse = self.fusion.with_param(param) if self.fusion and param is not None else self.fusion
        lex_all = p.bm25_scores(self.analyzer) if fuse else None
        hashed = (
            p.hashed_scores(self.analyzer, self.dim, self.hash_idf) if self.dim and fuse else None
        )
        rec = recency_factor(p, self.half_life_days)
        w_sim, w_rec, w_imp = self.weights
        out: Ranks = []
        for i, q in enumerate(p.conv.questions):
            if pools is not None:
                sem = np.asarray(pools[i][0], dtype=np.intp)
                lex_pool = [j for j in pools[i][1] if j not in set(sem)]
            else:
                sem = _topn(p.cos[i], self.n)
                lex_pool = []
                if hashed is not None:
                    lex_pool = [j for j in _topn(hashed[i], self.n) if hashed[i, j] > 0]
            pool = list(sem) + [j for j in lex_pool if j not in set(sem)]
            idx = np.array(pool, dtype=np.intp)
            in_sem = np.isin(idx, sem)
            sim = p.cos[i, idx]
            sim = np.where(in_sem, sim, float(p.cos[i, sem].min()))
            lex = lex_all[i, idx] if lex_all is not None else np.zeros(len(idx))
            rel = fuse(sim, lex, in_sem, lex > 0) if fuse else (1.0 + sim) / 2.0
            score = w_sim * rel + w_rec * rec[idx] + w_imp * 0.5
            keep = np.ones(len(idx), dtype=bool)
            if self.threshold is not None:
                keep = (1.0 - sim) <= self.threshold
                if self.gate_lexical and fuse:
                    keep |= lex > 0
            order = sorted(range(len(idx)), key=lambda j: (-score[j], -sim[j], int(idx[j])))
            ranked = [p.ids[idx[j]] for j in order if keep[j]]
            ev = set(q.evidence)
            out.append(next((r + 1 for r, d in enumerate(ranked) if d in ev), None))
        return out


def outcomes(preps: Sequence[Prepared], ranks: dict[str, Ranks]) -> list[Outcome]:
    return [
        Outcome(q.category, r)
        for p in preps
        for q, r in zip(p.conv.questions, ranks[p.conv.id], strict=True)
    ]


def evaluate(preps: Sequence[Prepared], pipe: Pipeline) -> tuple[dict[str, dict[str, float]], Any]:
    """Metrics of ``pipe``; a fusion with a grid is fitted by LOCO (held-out ranks only)."""
    by_id = {p.conv.id: p for p in preps}
    if pipe.fusion is not None and pipe.fusion.grid and len(preps) > 1:
        held, chosen = F.loco(
            list(by_id), lambda g, w: pipe.ranks(by_id[g], w), pipe.fusion.grid, F.objective_r10_mrr
        )
        return summarize(outcomes(preps, held)), chosen
    return summarize(outcomes(preps, {g: pipe.ranks(p) for g, p in by_id.items()})), None


def full_channel(
    preps: Sequence[Prepared], scores: Callable[[Prepared], Arr]
) -> dict[str, dict[str, float]]:
    """Metrics of a channel ranking every memory (no candidate pool)."""
    return summarize(outcomes(preps, {p.conv.id: full_ranks(p, scores(p)) for p in preps}))


def gate_loss(preps: Sequence[Prepared], threshold: float) -> float:
    """Share of questions whose every evidence turn lies beyond ``threshold`` distance."""
    lost = total = 0
    for p in preps:
        pos = {d: j for j, d in enumerate(p.ids)}
        for i, q in enumerate(p.conv.questions):
            total += 1
            lost += all(1.0 - p.cos[i, pos[e]] > threshold for e in q.evidence)
    return lost / max(total, 1)


def full_rrf(p: Prepared, a: Arr, b: Arr, k: float = F.RRF_K) -> Arr:
    """Naive reciprocal-rank fusion of two full rankings (issue 11's 0.633 baseline)."""
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = 1.0 / (k + F.ranks(a[i])) + 1.0 / (k + F.ranks(b[i]))
    return out
