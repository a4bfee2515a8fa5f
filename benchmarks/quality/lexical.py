"""Lexical scoring prototypes for issue 11: tokeniser, stopwords, a tiny stemmer, BM25
and hashed term vectors that a VECTOR field can hold (so KNN does the lexical search)."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from agent_memory.schema.lexical import STOPWORDS

_TOKEN = re.compile(r"[^\W_]+")

# The stopword list is the library's (the research measured exactly this list).


_SUFFIXES = (("sses", "ss"), ("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("ly", ""))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A tiny suffix stripper: plural/-ing/-ed/-ly, undouble, drop a final 'e'.

    Crude on purpose (no dependency): ``paintings``/``painted``/``painting`` -> ``paint``,
    ``loved``/``loves`` -> ``lov``, ``running`` -> ``run``, ``stories`` -> ``story``.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + repl
            break
    else:
        if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
            word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


@dataclass(frozen=True, slots=True)
class Analyzer:
    """Text -> terms: lowercase word tokens, optional stopword removal and stemming."""

    stop: bool = True
    stem: bool = True

    def __call__(self, text: str) -> list[str]:
        words = _TOKEN.findall(text.lower().replace("'", ""))
        if self.stop:
            words = [w for w in words if w not in STOPWORDS]
        if self.stem:
            words = [stem(w) for w in words]
        return words


class Bm25:
    """Textbook Okapi BM25 over one corpus (idf ``ln(1 + (N - df + .5) / (df + .5))``)."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.n = len(docs)
        self.tfs = [Counter(d) for d in docs]
        self.dl = np.array([len(d) for d in docs], dtype=np.float64)
        self.avgdl = float(self.dl.mean()) if self.n else 1.0
        self.df: Counter[str] = Counter()
        for tf in self.tfs:
            self.df.update(tf.keys())
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, tf in enumerate(self.tfs):
            for term, count in tf.items():
                self.postings.setdefault(term, []).append((i, count))

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: Sequence[str]) -> NDArray[np.float64]:
        out = np.zeros(self.n, dtype=np.float64)
        norm = self.k1 * (1.0 - self.b + self.b * self.dl / self.avgdl)
        for term in set(query):
            idf = self.idf(term)
            for i, tf in self.postings.get(term, ()):
                out[i] += idf * tf * (self.k1 + 1.0) / (tf + norm[i])
        return out


@lru_cache(maxsize=262144)
def bucket(term: str, dim: int) -> tuple[int, float]:
    """Signed feature hashing: blake2b-64 of the UTF-8 term -> (index mod dim, +-1)."""
    h = int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "little")
    return (h >> 1) % dim, (1.0 if h & 1 else -1.0)


def tf_weight(tf: int, dl: int, mode: str, avgdl: float, k1: float = 1.2, b: float = 0.75) -> float:
    """Document-side term weight: ``bm25`` saturation with length norm, ``log`` or ``binary``."""
    if mode == "bm25":
        return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl))
    if mode == "log":
        return 1.0 + math.log(tf)
    return 1.0


def doc_vectors(
    docs: Sequence[Sequence[str]],
    dim: int,
    *,
    mode: str = "bm25",
    avgdl: float = 12.0,
    idf: Callable[[int, str], float] | None = None,
    normalize: bool = False,
) -> NDArray[np.float32]:
    """Hashed sparse term vectors, one row per document (``idf(doc_index, term)`` optional:
    the write-time IDF variant bakes the statistics of the moment into the stored vector)."""
    out = np.zeros((len(docs), dim), dtype=np.float32)
    for i, terms in enumerate(docs):
        for term, tf in Counter(terms).items():
            j, sign = bucket(term, dim)
            w = tf_weight(tf, len(terms), mode, avgdl)
            if idf is not None:
                w *= idf(i, term)
            out[i, j] += sign * w
    if normalize:
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.where(norms == 0, 1.0, norms)
    return out


def query_vector(
    terms: Sequence[str], dim: int, idf: Callable[[str], float] | None = None
) -> NDArray[np.float32]:
    """Hashed query vector: each distinct term once, weighted by ``idf`` (or 1), unit length
    (scaling does not change an inner-product ranking, and valkey-search wants unit queries)."""
    out = np.zeros(dim, dtype=np.float32)
    for term in set(terms):
        j, sign = bucket(term, dim)
        out[j] += sign * (idf(term) if idf is not None else 1.0)
    norm = float(np.linalg.norm(out))
    return out / norm if norm > 0 else out
