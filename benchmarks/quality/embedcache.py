"""Embeddings of turns and questions, cached on disk as ``.npy`` (git-ignored ``.cache/``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]


def embed_cached(
    embedder: Any, texts: Sequence[str], cache_dir: Path | None = DEFAULT_CACHE
) -> NDArray[np.float32]:
    """``embedder.embed_many(texts)`` as a unit-row float32 matrix, cached by content.

    The cache key is the embedder's ``id`` and a digest of every text, so any change of
    model, data or text format recomputes. ``cache_dir=None`` disables the cache.
    """
    digest = hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()[:24]
    path = None
    if cache_dir is not None:
        folder = cache_dir / _safe(str(getattr(embedder, "id", type(embedder).__name__)))
        path = folder / f"{digest}.npy"
        if path.is_file():
            cached: NDArray[np.float32] = np.load(path).astype(np.float32)
            if cached.shape[0] == len(texts):
                return cached
    if texts:
        matrix = np.asarray(embedder.embed_many(list(texts)), dtype=np.float32)
    else:
        matrix = np.zeros((0, int(embedder.dim)), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, matrix)
    return matrix


class CachedEmbedder:
    """An embedder for the store that serves precomputed vectors by text.

    The store embeds each memory and each query; the benchmark already has those vectors
    (cached), so this maps text -> vector and falls back to the real embedder for a text it
    does not know.
    """

    def __init__(self, embedder: Any, texts: Sequence[str], matrix: NDArray[np.float32]) -> None:
        self._embedder = embedder
        self._table = {t: matrix[i] for i, t in enumerate(texts)}
        self.dim = int(embedder.dim)
        self.id = str(getattr(embedder, "id", "cached"))
        self.recommended_threshold = float(getattr(embedder, "recommended_threshold", 0.33))

    def embed(self, text: str) -> list[float]:
        vec = self._table.get(text)
        if vec is None:
            return list(self._embedder.embed(text))
        return [float(x) for x in vec]

    def __call__(self, text: str) -> list[float]:
        return self.embed(text)

    def embed_many(self, texts: list[str]) -> list[list[float]]:
        return [self.embed(t) for t in texts]
