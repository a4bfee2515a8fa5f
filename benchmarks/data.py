"""Deterministic benchmark data: clustered unit vectors, texts, scopes and queries.

Embedding time is excluded from every speed figure: texts map to pre-generated vectors
through a dict lookup (:class:`LookupEmbedder`). Vectors are clustered (a few hundred
random centres, each memory a noisy copy of one), so the nearest neighbours of a query
are a real subset of one cluster and HNSW has to work to find them.

This module is also imported by the peer worker, which runs in another virtual
environment: it needs numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

DIM = 384
SEED = 20240607
AGENTS = 8
CLUSTERS = 256
CLUSTER_NOISE = 0.5
QUERY_NOISE = 0.25
VOCABULARY = 5000  # distinct content words of the corpus
ZIPF = 1.07  # the exponent of their frequency by rank (natural text: about 1)
WORDS_PER_MEMORY = 9
WORDS_PER_QUERY = 3
EVERYWHERE = "user"  # a word every memory holds (the main person of a real agent's memory)
OFTEN = "caroline"  # a word half of them hold (a second person)
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _unit(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / norms).astype(np.float32)


def clustered_vectors(count: int, *, seed: int = SEED, dim: int = DIM) -> NDArray[np.float32]:
    """``count`` unit vectors around ``CLUSTERS`` random centres.

    Row ``i`` is the same for every ``count`` (so a bigger data set extends a smaller
    one): centres come from one stream, each row from a stream seeded by its index block.
    """
    centres = _unit(np.random.default_rng(seed).standard_normal((CLUSTERS, dim)).astype(np.float32))
    out = np.empty((count, dim), dtype=np.float32)
    block = 1000
    for start in range(0, count, block):
        stop = min(start + block, count)
        rng = np.random.default_rng((seed, start))
        n = stop - start
        which = (np.arange(start, stop, dtype=np.int64) * 2654435761) % CLUSTERS
        noise = rng.standard_normal((n, dim)).astype(np.float32) / np.sqrt(dim)
        out[start:stop] = _unit(centres[which] + CLUSTER_NOISE * noise)
    return out


def query_vectors(
    base: NDArray[np.float32], count: int, *, seed: int = SEED + 1
) -> NDArray[np.float32]:
    """Queries near random stored memories (their nearest neighbours are in one cluster)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(base), size=count)
    noise = rng.standard_normal((count, base.shape[1])).astype(np.float32) / np.sqrt(base.shape[1])
    return _unit(base[picks] + QUERY_NOISE * noise)


def _vocabulary() -> list[str]:
    """``VOCABULARY`` distinct pseudo-words of two or three consonant-vowel syllables
    (no English stopword, untouched by the analyser's stemmer but for a final ``e``)."""
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    words: list[str] = []
    for a in syllables:
        for b in syllables:
            words.append(a + b)
    rng = np.random.default_rng(SEED)
    rng.shuffle(words)
    three = [w + syllables[int(rng.integers(len(syllables)))] for w in words]
    return (words + three)[:VOCABULARY]


WORDS = _vocabulary()
_RANK_P = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF
_RANK_P /= _RANK_P.sum()
_CDF = np.cumsum(_RANK_P)


def _zipf_words(seed: tuple[int, ...], count: int) -> list[str]:
    draws = np.random.default_rng(seed).random(count)
    return [WORDS[min(int(j), VOCABULARY - 1)] for j in np.searchsorted(_CDF, draws)]


def memory_text(i: int) -> str:
    """A deterministic memory text (~70 characters) whose words recur across memories
    as words of real text do: ``WORDS_PER_MEMORY`` words of a Zipf vocabulary, the word
    ``user`` in every memory and ``caroline`` in every other one."""
    words = _zipf_words((SEED, 1, i), WORDS_PER_MEMORY)
    who = f"{EVERYWHERE} and {OFTEN}" if i % 2 else EVERYWHERE
    return f"the {who} talked about {' '.join(words)}"


def agent_of(i: int) -> str:
    return f"agent{i % AGENTS}"


def query_text(i: int) -> str:
    """A question sharing words with the memories: ``user`` (held by every memory) and
    ``WORDS_PER_QUERY`` words of the same Zipf vocabulary."""
    words = _zipf_words((SEED, 2, i), WORDS_PER_QUERY)
    return f"what did the {EVERYWHERE} say about {' '.join(words)}?"


def unmatched_query_text(i: int) -> str:
    """The earlier benchmark's query: no analysed term of it is in any memory, so the
    hybrid recall's lexical search finds nothing (the "no lexical match" row)."""
    return f"query {i}"


@dataclass
class Dataset:
    """Vectors of the stored memories and of the queries, with their texts."""

    vectors: NDArray[np.float32]
    queries: NDArray[np.float32]

    @classmethod
    def build(cls, size: int, queries: int = 2000) -> Dataset:
        base = clustered_vectors(size)
        return cls(base, query_vectors(base, queries))

    def save(self, folder: Path) -> tuple[Path, Path]:
        """Write ``vectors.npy`` and ``queries.npy`` for the peer worker."""
        folder.mkdir(parents=True, exist_ok=True)
        vec, qry = folder / "vectors.npy", folder / "queries.npy"
        np.save(vec, self.vectors)
        np.save(qry, self.queries)
        return vec, qry


class LookupEmbedder:
    """``text -> vector`` by dict lookup over pre-generated vectors (no model time).

    Unknown texts (the store's ``ensure_index`` probe) get a fixed vector.
    """

    recommended_threshold = 1.0

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.table: dict[str, NDArray[np.float32]] = {}
        fallback = np.zeros(dim, dtype=np.float32)
        fallback[0] = 1.0
        self._fallback = fallback

    def add(self, texts: list[str], vectors: NDArray[np.float32]) -> None:
        for text, vector in zip(texts, vectors, strict=True):
            self.table[text] = vector

    def __call__(self, text: str) -> NDArray[np.float32]:
        return self.table.get(text, self._fallback)

    def many(self, texts: list[str]) -> list[NDArray[np.float32]]:
        return [self.table.get(t, self._fallback) for t in texts]

    async def aembed(self, text: str) -> NDArray[np.float32]:
        """The async form the async stores get, as the peer's embedder is async: a
        blocking embedder would run in a worker thread (the store never blocks its
        event loop), a cost that belongs to the embedder, not to the store."""
        return self(text)

    async def aembed_many(self, texts: list[str]) -> list[NDArray[np.float32]]:
        return self.many(texts)
