"""Unit tests of the lexical channel (analyzer, stemmer, hashing, BM25) and the fusion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent_memory.schema import lexical as X
from agent_memory.schema.scoring import Candidate, rank
from agent_memory.schema.types import RecallWeights
from agent_memory.store.fusion import fuse, minmax


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("paintings", "painting"),  # one suffix per word
        ("painted", "paint"),
        ("painting", "paint"),
        ("loved", "lov"),
        ("loves", "lov"),
        ("running", "run"),
        ("stories", "story"),
        ("classes", "class"),
        ("bus", "bus"),
        ("cat", "cat"),
        ("b2b", "b2b"),
    ],
)
def test_stem(word: str, expected: str) -> None:
    assert X.stem(word) == expected


def test_analyze_lowercases_drops_stopwords_and_apostrophes() -> None:
    assert X.analyze("What did Caroline's kids PAINT on Tuesday?") == [
        "carolin",
        "kid",
        "paint",
        "tuesday",
    ]
    assert X.analyze("") == [] and X.analyze("the and of it") == []
    assert X.analyze("snake_case") == ["snak", "cas"]  # underscore splits tokens


def test_analyze_keeps_unicode_words_and_cuts_long_terms() -> None:
    assert X.analyze("Zoë fährt nach Köln") == ["zoë", "fährt", "nach", "köln"]
    assert X.analyze("x" * 100) == ["x" * X.MAX_TERM_CHARS]
    assert X.analyze("東京 2024") == ["東京", "2024"]


def test_bucket_is_stable_signed_feature_hashing() -> None:
    j, sign = X.bucket("paint")
    assert 0 <= j < X.LEX_DIM and sign in (1.0, -1.0)
    assert X.bucket("paint") == (j, sign)
    # Pinned: changing the hash would orphan every stored vector (ANALYZER_ID must move).
    import hashlib

    h = int.from_bytes(hashlib.blake2b(b"paint", digest_size=8).digest(), "little")
    assert (j, sign) == ((h >> 1) % 256, 1.0 if h & 1 else -1.0)
    assert X.ANALYZER_ID == "lex-v1:d=256"


def test_document_vector_weights_log_tf_and_query_vector_is_unit() -> None:
    doc = X.document_vector(["paint", "paint", "lake"])
    j, sign = X.bucket("paint")
    k, sign_k = X.bucket("lake")
    assert doc.dtype == np.float32 and doc.shape == (X.LEX_DIM,)
    if j != k:
        assert doc[j] == pytest.approx(sign * (1 + math.log(2)))
        assert doc[k] == pytest.approx(sign_k)
    q = X.query_vector(["paint", "paint", "lake"])
    assert q is not None and float(np.linalg.norm(q)) == pytest.approx(1.0, abs=1e-6)
    assert X.query_vector([]) is None
    assert not X.document_vector([]).any()
    # A shared term gives a positive inner product, no shared term (almost always) zero.
    assert float(doc @ X.query_vector(["paint"])) > 0  # type: ignore[operator]
    blob = X.lex_blob("paint the lake")
    assert len(blob) == 4 * X.LEX_DIM


def test_bm25_matches_the_textbook_formula() -> None:
    stats = X.TermStats(docs=10, length=50, df={"paint": 2, "lake": 5})
    doc = ["paint", "paint", "lake", "sunris"]
    k1, b, avgdl = 1.2, 0.75, 5.0
    norm = k1 * (1 - b + b * len(doc) / avgdl)
    idf_paint = math.log(1 + (10 - 2 + 0.5) / (2 + 0.5))
    idf_lake = math.log(1 + (10 - 5 + 0.5) / (5 + 0.5))
    expected = idf_paint * 2 * 2.2 / (2 + norm) + idf_lake * 1 * 2.2 / (1 + norm)
    assert X.bm25(["paint", "lake", "paint"], doc, stats) == pytest.approx(expected)
    assert X.bm25(["absent"], doc, stats) == 0.0
    assert X.bm25(["paint"], [], stats) == 0.0
    # Statistics out of range (drift) are clamped, never negative IDF or division by 0.
    odd = X.TermStats(docs=1, length=0, df={"paint": 7})
    assert X.bm25(["paint"], doc, odd) > 0
    assert X.bm25(["paint"], doc, X.TermStats()) > 0


def test_stats_fields_parse_and_delta() -> None:
    terms = ["lake", "paint"]
    assert X.stats_fields(terms) == ["n", "len", "t:lake", "t:paint"]
    stats = X.parse_stats(terms, [b"4", "20", None, b"2"])
    assert stats == X.TermStats(4, 20, {"lake": 0, "paint": 2})
    assert X.parse_stats(terms, None) == X.TermStats(0, 0, {"lake": 0, "paint": 0})
    assert X.parse_stats(terms, ["-3", "x", "1", "1"]).docs == 0  # drift / garbage -> 0
    reported: list[tuple[str, object]] = []
    damaged = X.parse_stats(terms, ["-3", "x", b"nan", None], lambda f, v: reported.append((f, v)))
    assert damaged == X.TermStats(0, 0, {"lake": 0, "paint": 0})
    assert reported == [("t:lake", b"nan"), ("len", "x")]  # drift below 0 is no damage
    huge = b"9" * 400  # an integer beyond a float: BM25 raised OverflowError with it
    reported.clear()
    beyond = X.parse_stats(
        terms, [huge, str(2**53 + 1), str(2**53), huge], lambda f, v: reported.append((f, v))
    )
    assert beyond == X.TermStats(0, 0, {"lake": 2**53, "paint": 0})
    assert [f for f, _ in reported] == ["t:paint", "n", "len"]
    largest = X.TermStats(2**53, 2**53, {"lake": 2**53})  # what is read still computes
    assert math.isfinite(X.bm25(["lake", "paint"], ["lake", "paint"], largest))
    delta = X.stats_delta(["Paint the lake", "paintings of a lake, a lake"], 1)
    assert delta == {"n": 2, "len": 5, "t:paint": 1, "t:painting": 1, "t:lak": 2}
    assert X.stats_delta(["Paint the lake"], -1) == {"n": -1, "len": -2, "t:paint": -1, "t:lak": -1}
    assert X.adjust_args("k", {}) is None
    args = X.adjust_args("k", {"n": 1, "t:a": -1})
    assert args is not None and args[:4] == ("EVAL", X.ADJUST_STATS, "1", "k")
    assert args[4:] == ("n", "1", "t:a", "-1")


def test_minmax_and_fuse() -> None:
    assert minmax([1.0, 3.0, 2.0], signal=True) == [0.0, 1.0, 0.5]
    assert minmax([2.0, 2.0], signal=True) == [1.0, 1.0]
    assert minmax([0.0, 0.0], signal=False) == [0.0, 0.0]
    assert minmax([], signal=True) == []
    rel = fuse([0.9, 0.5, 0.7], [0.0, 4.0, 2.0], 0.5)
    assert rel == pytest.approx([0.5, 0.5, 0.5 * 0.5 + 0.5 * 0.5])
    # Without any lexical signal the semantic channel takes the whole relevance.
    assert fuse([0.9, 0.5], [0.0, 0.0], 0.5) == pytest.approx([1.0, 0.0])
    assert fuse([0.9, 0.5], [1.0, 3.0], 1.0) == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError):
        fuse([0.1], [], 0.5)


def test_gate_admits_lexical_matches_and_near_miss_stays_on_distance() -> None:
    weights = RecallWeights()
    far_lexical = Candidate(
        "a", 0.9, 0.5, 0, relevance=1.0, lexical_match=True, matched=frozenset({"lexical"})
    )
    far_semantic = Candidate("b", 0.8, 0.5, 0, relevance=0.4)
    ranking = rank(
        [far_lexical, far_semantic],
        k=5,
        threshold=0.5,
        weights=weights,
        half_life_seconds=60,
        now_ms=0,
    )
    assert [r.candidate.id for r in ranking.hits] == ["a"]
    assert ranking.nearest_distance == 0.8  # lexical-only distances are bounds: ignored
    empty = rank(
        [far_semantic], k=5, threshold=0.5, weights=weights, half_life_seconds=60, now_ms=0
    )
    assert not empty.hits and empty.near_miss


def test_recall_weights_lexical_is_validated() -> None:
    from agent_memory.errors import InvalidInputError

    assert RecallWeights().lexical == 0.6
    assert RecallWeights(0.6, 0.25, 0.15, lexical=0).lexical == 0
    for bad in (-0.1, 1.5, True, "x"):
        with pytest.raises(InvalidInputError):
            RecallWeights(lexical=bad)  # type: ignore[arg-type]


def test_coverage_is_the_share_of_the_query_idf_mass() -> None:
    stats = X.TermStats(docs=100, length=1000, df={"user": 80, "invoic": 1, "ship": 2})
    query = ["user", "invoic", "ship"]
    full = X.coverage(query, ["user", "invoic", "ship"], stats)
    common_only = X.coverage(query, ["user", "name", "ada"], stats)
    rare = X.coverage(query, ["invoic", "ship", "address"], stats)
    assert full == pytest.approx(1.0)
    assert common_only < 0.1
    assert 0.5 < rare < 1.0
    assert X.coverage([], ["user"], stats) == 0.0
    scorer = X.QueryScorer.of(query, stats)
    assert scorer.score(["invoic", "ship"]) == (
        pytest.approx(X.bm25(query, ["invoic", "ship"], stats)),
        pytest.approx(rare),
    )
