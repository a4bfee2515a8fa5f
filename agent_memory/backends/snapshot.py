"""The portable backend's index of one namespace: an immutable snapshot of its vectors,
hashed term vectors and filter tokens, scored exactly with numpy.

A snapshot is built once per mirror refresh and only read afterwards, so recalls on
several threads or coroutines share it without locks. Scoring is a sub-operation: while
other operations share the event loop it runs in slices, one per loop turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.base import KnnQuery
from agent_memory.core.effects import Operation, pause
from agent_memory.schema import layout as L
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.lexical import LEX_DIM, bucket
from agent_memory.schema.scoring import cosine_distances

# Rows scored per event-loop turn while other operations share the loop (~0.15 ms):
# eight concurrent recalls interleave slices instead of queueing whole products (a
# 10k x 384 float32 mirror is 15 MB, ~0.8 ms to stream). Measured against 2,048-row
# slices: lag p99 3.4-5.1 against 6.2-7.4 ms, the same total time.
SCORE_ROWS = 1024
MIN_SLICE = 64  # a shorter tail is not worth a turn of its own: it joins the slice before


@dataclass(slots=True)
class Entry:
    """One memory as a mirror holds it: its vector, filter tokens and hashed terms."""

    vector: NDArray[np.float32]
    tokens: dict[str, str | None]
    lex: NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An immutable view of one namespace: readers never see a half-built state.

    Session, agent and thread tokens are stored as integer codes (``codes`` maps each
    token to its code; -1 for no value), so a filter on them is one vectorised compare.
    """

    ids: tuple[str, ...]
    expires: NDArray[np.float64]
    matrix: NDArray[np.float32]
    columns: dict[str, NDArray[np.int32]]
    codes: dict[str, dict[str, int]]
    tokens: tuple[dict[str, str | None], ...]
    lex_by_dim: NDArray[np.float32]  # hashed term vectors, one row per dimension

    @classmethod
    def build(
        cls, ids: tuple[str, ...], expires: list[float], entries: dict[str, Entry], dim: int
    ) -> Snapshot:
        rows = [entries[i] for i in ids]
        matrix = np.stack([r.vector for r in rows]) if rows else np.zeros((0, dim), np.float32)
        columns: dict[str, NDArray[np.int32]] = {}
        codes: dict[str, dict[str, int]] = {}
        for name in (L.F_SESSION, L.F_AGENT, L.F_THREAD):
            table: dict[str, int] = {}
            column = np.empty(len(rows), dtype=np.int32)
            for i, r in enumerate(rows):
                token = r.tokens.get(name)
                column[i] = -1 if token is None else table.setdefault(token, len(table))
            columns[name], codes[name] = column, table
        # Stored dimension-major: a query has a handful of non-zero dimensions, and
        # their rows are all a lexical score reads (a row-major matrix would be read
        # whole, LEX_DIM floats per memory, for every query).
        lex_by_dim = (
            np.ascontiguousarray(np.stack([r.lex for r in rows]).T)
            if rows
            else np.zeros((LEX_DIM, 0), np.float32)
        )
        return cls(
            ids,
            np.asarray(expires, dtype=np.float64),
            matrix,
            columns,
            codes,
            tuple(r.tokens for r in rows),
            lex_by_dim,
        )

    def lexical_scores(
        self, query: NDArray[np.float32], start: int = 0, stop: int | None = None
    ) -> NDArray[np.float64]:
        """Inner product of the hashed term vectors of rows ``start:stop`` with
        ``query``, over the query's non-zero dimensions only (the others add exact zeros)."""
        dims = np.flatnonzero(query)
        weights = query[dims].astype(np.float32)
        return (weights @ self.lex_by_dim[dims, start:stop]).astype(np.float64)

    def holding(self, terms: Sequence[str]) -> NDArray[np.bool_]:
        """The rows whose hashed term vector is non-zero in a bucket of one of
        ``terms``: every memory holding one of them (and the rare memory whose other
        term shares the bucket), as the FT backend's ``lex_terms`` filter selects."""
        buckets = sorted({bucket(t)[0] for t in terms})
        held: NDArray[np.bool_] = np.any(self.lex_by_dim[buckets] != 0, axis=0)
        return held

    def scores(self, query: KnnQuery) -> Operation[NDArray[np.float64]]:
        """Sub-operation: every row's cosine distance to ``query`` (its lexical inner
        product for a lexical query). While other operations share the event loop it is
        computed ``SCORE_ROWS`` rows per turn; alone, in one product (slices that small
        run on one BLAS thread: a lone recall's product would take twice as long). The two
        may differ in the last bit of a float32 product, as rows on either side of a BLAS
        thread's share of one product already do."""
        shared = yield from pause()
        rows = len(self.ids)
        size = SCORE_ROWS if shared else max(1, rows)
        parts: list[NDArray[np.float64]] = []
        for start in range(0, rows, size):
            if start:
                yield from pause()
            stop = start + size
            if rows - stop < MIN_SLICE:
                stop = rows
            parts.append(
                self.lexical_scores(query.vector, start, stop)
                if query.lexical
                else cosine_distances(self.matrix[start:stop], query.vector)
            )
            if stop == rows:
                break
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)

    def mask(self, flt: MemoryFilter, now_ms: int) -> NDArray[np.bool_]:
        mask = self.expires > now_ms
        for value, name in (
            (flt.session, L.F_SESSION),
            (flt.agent, L.F_AGENT),
            (flt.thread, L.F_THREAD),
        ):
            if value is not None:
                code = self.codes[name].get(value)
                if code is None:
                    return np.zeros(len(self.ids), dtype=np.bool_)
                mask &= self.columns[name] == code
        if flt.tags or flt.label_groups or flt.sources is not None or flt.exclude_sources:
            for row in np.nonzero(mask)[0]:
                if not flt.matches(self.tokens[row]):
                    mask[row] = False
        return mask


def nearest(
    snap: Snapshot, rows: NDArray[np.intp], k: int, distances: NDArray[np.float64]
) -> list[tuple[str, float]]:
    """The ``k`` nearest ``rows`` by cosine ``distances`` (ties: registry order)."""
    return [(snap.ids[rows[b]], float(distances[b])) for b in smallest(distances, k)]


SAMPLE_STRIDE = 20  # one value in 20 sets the bound of the k smallest
SAMPLE_FROM = 2000  # below this, a full partition is as quick


def smallest(values: NDArray[np.float64], k: int) -> NDArray[np.intp]:
    """Positions of the ``k`` smallest ``values``, ascending, ties by position (NaN last).

    A full partition of 10k values costs ~0.1 ms (1 ms at 100k); the k-th smallest of a
    strided sample, picked so that ~4k values fall under it, bounds the answer instead,
    and only those few are sorted. When fewer than ``k`` fall under it (an unlucky
    sample) the full partition runs; either way the answer is exact.
    """
    n = values.size
    if k >= n:
        everything = np.arange(n)
        return everything[np.lexsort((everything, values))]
    if n >= SAMPLE_FROM:
        sample = values[::SAMPLE_STRIDE]
        j = min(sample.size - 1, -(-4 * k // SAMPLE_STRIDE))
        under = np.flatnonzero(values <= np.partition(sample, j)[j])
        if under.size >= k:
            return under[np.lexsort((under, values[under]))][:k]
    best = np.argpartition(values, k - 1)[:k]
    kth = values[best].max()
    if not np.isnan(kth):  # every value tied with the k-th stays in: exact ties by position
        best = np.flatnonzero(values <= kth)
    return best[np.lexsort((best, values[best]))][:k]


def lexical_top(
    snap: Snapshot, rows: NDArray[np.intp], k: int, scores: NDArray[np.float64]
) -> list[tuple[str, float]]:
    """The ``k`` ``rows`` of highest positive inner product with the hashed query (their
    ``scores``), ties by id (distance ``1 - ip``, the FT ``IP`` metric)."""
    positive = np.nonzero(scores > 0)[0]
    if positive.size > k:
        # Everything tied with the k-th best score stays in, so the id tie-break is exact.
        kth = np.partition(scores[positive], positive.size - k)[positive.size - k]
        positive = positive[scores[positive] >= kth]
    order = sorted(positive.tolist(), key=lambda b: (-float(scores[b]), snap.ids[rows[b]]))
    return [(snap.ids[rows[b]], 1.0 - float(scores[b])) for b in order[:k]]
