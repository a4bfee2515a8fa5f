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
WORDS = [
    "user",
    "prefers",
    "dark",
    "mode",
    "deploy",
    "friday",
    "meeting",
    "notes",
    "budget",
    "travel",
    "paris",
    "invoice",
    "python",
    "valkey",
    "search",
    "vector",
    "agent",
    "memory",
    "coffee",
    "morning",
    "report",
    "weekly",
    "review",
]


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


def memory_text(i: int) -> str:
    """A short, deterministic memory text (~60 characters)."""
    words = " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6))
    return f"memory {i}: {words}"


def agent_of(i: int) -> str:
    return f"agent{i % AGENTS}"


def query_text(i: int) -> str:
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
