"""The issue 11 candidate table: every design evaluated on the same prepared channels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from benchmarks.quality import fusion as F
from benchmarks.quality import lexical as L
from benchmarks.quality import research as R

TEXTBOOK = L.Analyzer(stop=True, stem=False)  # issue 11's "textbook BM25"
COMBSUM = F.FUSIONS[2]
DEFAULT_WEIGHTS = (0.6, 0.25, 0.15)
#: The recommended hybrid, before recency (pool: cosine top-50 + hashed-lexical top-50).
WINNER = R.Pipeline(n=50, dim=256, fusion=COMBSUM)
#: The recommended default configuration: the winner under the composite score with the
#: recommended weights 0.75/0.10/0.15 (recency 0.10, half-life kept at 7 days) and the
#: MiniLM gate (0.65), which lexical matches pass.
RECOMMENDED = replace(WINNER, weights=(0.75, 0.1, 0.15), half_life_days=7.0, threshold=0.65)


def _row(section: str, name: str, result: tuple[dict[str, Any], Any]) -> dict[str, Any]:
    metrics, chosen = result
    return {"section": section, "name": name, "metrics": metrics, "fitted": chosen}


def _full(preps: Sequence[R.Prepared], scores: Any) -> tuple[dict[str, Any], None]:
    return R.full_channel(preps, scores), None


def candidate_rows(preps: Sequence[R.Prepared], *, quick: bool = False) -> list[dict[str, Any]]:
    """All rows of the Part 2 table (``quick``: the reproduction and winner rows only)."""
    an = L.Analyzer()
    rows = [
        _row("1 channels alone (full ranking)", "cosine (MiniLM)", _full(preps, lambda p: p.cos)),
        _row("1 channels alone (full ranking)", "BM25 textbook (k1 1.2, b .75, stopwords)",
             _full(preps, lambda p: p.bm25_scores(TEXTBOOK))),
        _row("1 channels alone (full ranking)", "BM25 + stopwords + suffix stemmer",
             _full(preps, lambda p: p.bm25_scores(an))),
        _row("1 channels alone (full ranking)", "naive RRF of full cosine + textbook BM25",
             _full(preps, lambda p: R.full_rrf(p, p.cos, p.bm25_scores(TEXTBOOK)))),
    ]  # fmt: skip
    if not quick:
        for dim in (256, 1024):
            for idf in ("none", "query-exact"):
                rows.append(_row("1 channels alone (full ranking)",
                                 f"hashed lexical KNN alone, D={dim}, IP, idf={idf}",
                                 _full(preps, lambda p, d=dim, i=idf: p.hashed_scores(an, d, i))))  # fmt: skip
        for fusion in F.FUSIONS:
            rows.append(_row("2 hybrid: cos top50 + hashed-lex KNN top50 (D=256), exact BM25 "
                             "rescoring, fused", fusion.name,
                             R.evaluate(preps, replace(WINNER, fusion=fusion))))  # fmt: skip
        for dim in (64, 128, 512, 1024):
            rows.append(_row("3 CombSUM: lexical field width", f"D={dim}",
                             R.evaluate(preps, replace(WINNER, dim=dim))))  # fmt: skip
        for idf in ("query-exact", "write-time"):
            rows.append(_row("3 CombSUM: IDF inside the hashed vectors", f"idf={idf} (D=256)",
                             R.evaluate(preps, replace(WINNER, hash_idf=idf))))  # fmt: skip
        for n in (25, 100, 200):
            rows.append(_row("3 CombSUM: pool size per channel", f"n={n}",
                             R.evaluate(preps, replace(WINNER, n=n))))  # fmt: skip
        for n in (50, 100, 200):
            rows.append(_row("4 client-side BM25 rescoring of the cosine pool only (no lexical "
                             "KNN)", f"cos top{n}, CombSUM",
                             R.evaluate(preps, replace(WINNER, n=n, dim=None))))  # fmt: skip
        for stop, stem in ((False, False), (True, False), (False, True)):
            rows.append(_row("5 query/doc analysis for the lexical channel (CombSUM)",
                             f"stopwords={stop}, stemmer={stem}",
                             R.evaluate(preps, replace(WINNER, analyzer=L.Analyzer(stop, stem)))))  # fmt: skip
        for hl in (None, 1.0, 7.0, 30.0, 90.0, 365.0):
            label = "recency off" if hl is None else f"half-life {hl:g} d"
            rows.append(_row("6 default weights 0.6/0.25/0.15 over plain cosine", label,
                             R.evaluate(preps, R.Pipeline(dim=None, weights=DEFAULT_WEIGHTS,
                                                          half_life_days=hl))))  # fmt: skip
            rows.append(_row("6 default weights 0.6/0.25/0.15 over the hybrid", label,
                             R.evaluate(preps, replace(WINNER, weights=DEFAULT_WEIGHTS,
                                                       half_life_days=hl))))  # fmt: skip
        for w_rec in (0.05, 0.1, 0.25):
            for hl in (7.0, 30.0):
                weights = (0.85 - w_rec, w_rec, 0.15)
                rows.append(_row("7 hybrid, recency weight x half-life (importance 0.15)",
                                 f"w_rec={w_rec}, half-life {hl:g} d",
                                 R.evaluate(preps, replace(WINNER, weights=weights,
                                                           half_life_days=hl))))  # fmt: skip
        rows.append(_row("8 similarity gate 0.65 (MiniLM default)", "cosine, gated",
                         R.evaluate(preps, R.Pipeline(dim=None, threshold=0.65))))  # fmt: skip
        rows.append(_row("8 similarity gate 0.65 (MiniLM default)", "hybrid, strict cosine gate",
                         R.evaluate(preps, replace(WINNER, threshold=0.65, gate_lexical=False))))  # fmt: skip
        rows.append(_row("8 similarity gate 0.65 (MiniLM default)",
                         "hybrid, gate passes lexical matches",
                         R.evaluate(preps, replace(WINNER, threshold=0.65))))  # fmt: skip
    rows.append(_row("9 winner", "hybrid CombSUM, no recency (D=256, n=50)",
                     R.evaluate(preps, WINNER)))  # fmt: skip
    rows.append(_row("9 winner", "RECOMMENDED DEFAULT: hybrid + 0.75/0.10/0.15, 7 d, gate .65",
                     R.evaluate(preps, RECOMMENDED)))  # fmt: skip
    rows.append(_row("9 winner", "RECOMMENDED, but strict cosine gate (lexical matches gated too)",
                     R.evaluate(preps, replace(RECOMMENDED, gate_lexical=False))))  # fmt: skip
    return rows


def research(preps: Sequence[R.Prepared], *, quick: bool = False) -> dict[str, Any]:
    return {
        "rows": candidate_rows(preps, quick=quick),
        "gate_loss_0.65": R.gate_loss(preps, 0.65),
        "corpus_sizes": {p.conv.id: len(p.ids) for p in preps},
    }
