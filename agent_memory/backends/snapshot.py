"""The portable backend's index of one namespace: an immutable snapshot of its vectors,
hashed term vectors and filter tokens, scored exactly with numpy.

A snapshot is only read once made, so recalls on several threads or coroutines share it
without locks. Its rows live in storage (:class:`Rows`) that successive snapshots of a
mirror share: a row is written once and never changed, and a snapshot sees only the rows
written before it, so a refresh appends the memories it has not seen and marks the ones
that left the namespace dead instead of copying the namespace. Once dead rows pass a
quarter of the live ones, or the storage is full, a refresh repacks the live rows into
new storage in registry order (room for a quarter more, and 4), one slice per event-loop
turn (what a first load does).
Scoring is a sub-operation: while other operations share the event loop it runs in
slices, one per loop turn.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.base import KnnQuery
from agent_memory.core.effects import Operation, T, pause
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
COPY_ROWS = 2048  # rows copied per event-loop turn while storage is (re)packed
# Single-valued tokens filter as one integer code per row; tags and labels, which hold
# several tokens each, as (code, row) postings.
CODED = (L.F_SESSION, L.F_AGENT, L.F_THREAD, L.F_SOURCE)
BAGGED = (L.F_TAGS, L.F_LABELS)
_DEAD = -np.inf  # the expiry of a row whose memory left the namespace


@dataclass(slots=True)
class Entry:
    """One memory as a mirror holds it: its vector, filter tokens and hashed terms."""

    vector: NDArray[np.float32]
    tokens: dict[str, str | None]
    lex: NDArray[np.float32]


class _Postings:
    """The (code, row) pairs of a multi-valued token field. It grows by reallocation, so
    the views an older snapshot took of the buffers it replaced stay valid."""

    __slots__ = ("codes", "rows", "size")

    def __init__(self, capacity: int = 64) -> None:
        self.codes = np.empty(capacity, np.int32)
        self.rows = np.empty(capacity, np.int32)
        self.size = 0

    def add(
        self, codes: Sequence[int] | NDArray[np.int32], rows: Sequence[int] | NDArray[np.int32]
    ) -> None:
        end = self.size + len(codes)
        if end > self.codes.size:
            capacity = max(end, 2 * self.codes.size)
            self.codes = _grown(self.codes, capacity, self.size)
            self.rows = _grown(self.rows, capacity, self.size)
        self.codes[self.size : end] = codes
        self.rows[self.size : end] = rows
        self.size = end

    def view(self) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
        return self.codes[: self.size], self.rows[: self.size]


PostingViews = dict[str, tuple[NDArray[np.int32], NDArray[np.int32]]]
"""The (code, row) postings views of each multi-valued token field."""


def _grown(array: NDArray[np.int32], capacity: int, used: int) -> NDArray[np.int32]:
    grown = np.empty(capacity, array.dtype)
    grown[:used] = array[:used]
    return grown


class Rows:
    """The rows of one mirror, shared by its successive snapshots: a row is written
    once, before any snapshot sees it, and never changed.

    The lock passes on to the storage a repack makes; the token code tables do not: the
    repack recodes the live rows' tokens into fresh tables, so the tables hold the
    tokens of the rows in storage only (not every token the mirror ever saw). The lock
    serialises appends and code assignment between threads (it is never held across a
    pause).
    """

    def __init__(
        self,
        dim: int,
        capacity: int,
        codes: dict[str, dict[str, int]] | None = None,
        lock: threading.Lock | None = None,
    ) -> None:
        self.matrix = np.empty((capacity, dim), np.float32)
        self.lex = np.empty((LEX_DIM, capacity), np.float32)
        self.columns = {name: np.empty(capacity, np.int32) for name in CODED}
        self.postings = {name: _Postings() for name in BAGGED}
        self.codes = codes if codes is not None else {name: {} for name in (*CODED, *BAGGED)}
        self.lock = lock or threading.Lock()
        self.ids: list[str] = []

    def free(self) -> int:
        return self.matrix.shape[0] - len(self.ids)

    def append(
        self, base: int, ids: Sequence[str], entries: Sequence[Entry]
    ) -> PostingViews | None:
        """Write ``entries`` after row ``base``; returns the postings of every row up to
        the new end, or ``None`` when rows were written past ``base`` since (another
        refresh's) or there is no room: the caller repacks instead.

        The postings are taken under the lock: another refresh from the same snapshot
        may append its rows as soon as it is released, and a snapshot holding postings
        of rows it does not have fails its tag and label filters (``IndexError``)."""
        with self.lock:
            if len(self.ids) != base or len(entries) > self.free():
                return None
            self._write(np.arange(base, base + len(entries)), entries)
            self.ids.extend(ids)  # last: a row counts once it is whole
            return self._postings()

    def postings_now(self) -> PostingViews:
        """The postings of every row written so far (taken under the lock)."""
        with self.lock:
            return self._postings()

    def _postings(self) -> PostingViews:
        return {name: postings.view() for name, postings in self.postings.items()}

    def fill(self, dst: NDArray[np.intp], entries: Sequence[Entry]) -> None:
        """Write ``entries`` to rows ``dst`` of storage no snapshot sees yet."""
        with self.lock:  # the code tables are shared
            self._write(dst, entries)

    def _write(self, dst: NDArray[np.intp], entries: Sequence[Entry]) -> None:
        if not entries:
            return
        self.matrix[dst] = np.stack([e.vector for e in entries])
        self.lex[:, dst] = np.stack([e.lex for e in entries]).T
        for name in CODED:
            table = self.codes[name]
            self.columns[name][dst] = [
                -1 if (token := e.tokens.get(name)) is None else table.setdefault(token, len(table))
                for e in entries
            ]
        for name in BAGGED:
            table = self.codes[name]
            codes: list[int] = []
            rows: list[int] = []
            for row, e in zip(dst.tolist(), entries, strict=True):
                # As MemoryFilter.matches reads the field: no value holds the empty token.
                for token in set((e.tokens.get(name) or "").split(L.TAG_SEPARATOR)):
                    codes.append(table.setdefault(token, len(table)))
                    rows.append(row)
            self.postings[name].add(codes, rows)

    def copy(
        self,
        dst: NDArray[np.intp],
        source: Snapshot,
        src: NDArray[np.intp],
        tokens: Mapping[str, Sequence[str]],
    ) -> None:
        """Copy rows ``src`` of ``source`` to rows ``dst``, recoding their tokens
        (``tokens``: each of ``source``'s tokens by code, :func:`tokens_by_code`)."""
        self.matrix[dst] = source.matrix[src]
        self.lex[:, dst] = source.lex_by_dim[:, src]
        with self.lock:
            for name in CODED:
                self.columns[name][dst] = self._recoded(
                    name, tokens[name], source.columns[name][src]
                )

    def copy_postings(
        self, source: Snapshot, moved: NDArray[np.intp], tokens: Mapping[str, Sequence[str]]
    ) -> None:
        """The postings of ``source``'s rows, ``moved`` mapping each row to its new one
        (-1: not kept), recoded as :meth:`copy` does."""
        with self.lock:
            for name in BAGGED:
                codes, rows = source.postings[name]
                target = moved[rows]
                kept = target >= 0
                recoded = self._recoded(name, tokens[name], codes[kept])
                self.postings[name].add(recoded, target[kept].astype(np.int32))

    def _recoded(
        self, name: str, tokens: Sequence[str], codes: NDArray[np.int32]
    ) -> NDArray[np.int32]:
        """``codes`` of another table (``tokens`` by code; -1: no value) in this one's."""
        table = self.codes[name]
        unique, at = np.unique(codes, return_inverse=True)
        new = [-1 if c < 0 else table.setdefault(tokens[c], len(table)) for c in unique.tolist()]
        return np.asarray(new, np.int32)[at].astype(np.int32).reshape(codes.shape)


def tokens_by_code(rows: Rows) -> dict[str, list[str]]:
    """Each token of ``rows``' code tables by its code (codes are assigned in order)."""
    with rows.lock:
        return {name: list(table) for name, table in rows.codes.items()}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An immutable view of one namespace: readers never see a half-built state.

    Rows are in the order their memories were first mirrored; ``order`` lists the live
    ones in registry order (the tie-break of the nearest). A row whose memory left the
    namespace stays, with an expiry of ``-inf``, until a repack. Session, agent, thread
    and source tokens are stored as integer codes (``codes`` maps each token to its
    code; -1 for no value), so a filter on them is one vectorised compare; tags and
    labels as (code, row) postings.
    """

    ids: tuple[str, ...]
    expires: NDArray[np.float64]
    order: NDArray[np.intp]
    matrix: NDArray[np.float32]
    columns: dict[str, NDArray[np.int32]]
    codes: dict[str, dict[str, int]]
    postings: PostingViews
    lex_by_dim: NDArray[np.float32]  # hashed term vectors, one row per dimension
    row_of: dict[str, int]  # the live rows by id
    rows: Rows

    @classmethod
    def empty(cls, dim: int) -> Snapshot:
        rows = Rows(dim, 0)
        return cls._over(rows, (), np.zeros(0), np.zeros(0, np.intp), {}, rows.postings_now())

    @classmethod
    def build(
        cls, ids: tuple[str, ...], expires: list[float], entries: dict[str, Entry], dim: int
    ) -> Snapshot:
        """The snapshot of ``ids`` (in registry order) from scratch."""
        listed = list(ids)
        return _finished(
            cls.empty(dim).updated(
                listed,
                np.asarray(expires, dtype=np.float64),
                np.full(len(listed), -1, np.intp),
                entries,
            )
        )

    @classmethod
    def _over(
        cls,
        rows: Rows,
        ids: tuple[str, ...],
        expires: NDArray[np.float64],
        order: NDArray[np.intp],
        row_of: dict[str, int],
        postings: PostingViews,
    ) -> Snapshot:
        """A snapshot of the first ``len(ids)`` rows of ``rows`` and ``postings``, the
        postings of exactly those rows (taken when the last of them was written)."""
        n = len(ids)
        return cls(
            ids,
            expires,
            order,
            rows.matrix[:n],
            {name: column[:n] for name, column in rows.columns.items()},
            rows.codes,
            postings,
            rows.lex[:, :n],
            row_of,
            rows,
        )

    def locate(self, ids: Sequence[str]) -> NDArray[np.intp]:
        """The row of each of ``ids`` (-1: not mirrored)."""
        return np.fromiter(map(self.row_of.get, ids, repeat(-1)), np.intp, len(ids))

    def updated(
        self,
        listed: Sequence[str],
        expires: NDArray[np.float64],
        rows: NDArray[np.intp],
        added: Mapping[str, Entry],
    ) -> Operation[Snapshot]:
        """Sub-operation: the snapshot of a new registry listing (``listed`` ids in
        registry order, their ``expires`` and their rows here, :meth:`locate`), with the
        ``added`` entries of ids it did not hold; a listed id with neither is left out.

        The result holds the same memories, vectors and tokens, in the same registry
        order, as :meth:`build` of the listing; only its storage order may differ.
        """
        fresh = [i for i in np.flatnonzero(rows < 0).tolist() if listed[i] in added]
        live = int(np.count_nonzero(rows >= 0)) + len(fresh)
        base = len(self.ids)
        if 4 * (base + len(fresh) - live) <= live:
            postings = self.rows.append(
                base, [listed[i] for i in fresh], [added[listed[i]] for i in fresh]
            )
            if postings is not None:
                return self._appended(listed, expires, rows, fresh, postings)
        snapshot = yield from self._repacked(listed, expires, rows, fresh, added)
        return snapshot

    def _appended(
        self,
        listed: Sequence[str],
        expires: NDArray[np.float64],
        rows: NDArray[np.intp],
        fresh: list[int],
        postings: PostingViews,
    ) -> Snapshot:
        """The snapshot over this one's rows and the ``fresh`` ones just appended (with
        ``postings``, those :meth:`Rows.append` returned)."""
        base = len(self.ids)
        rows = rows.copy()
        rows[fresh] = np.arange(base, base + len(fresh))
        kept = rows >= 0
        order = rows[kept]
        ids = tuple(self.rows.ids[: base + len(fresh)])
        stamps = np.full(len(ids), _DEAD)
        stamps[order] = expires[kept]
        row_of = dict(self.row_of)
        for row in np.flatnonzero(np.isneginf(stamps[:base]) & ~np.isneginf(self.expires)):
            del row_of[ids[row]]  # left the namespace
        row_of.update((listed[i], base + n) for n, i in enumerate(fresh))
        return Snapshot._over(self.rows, ids, stamps, order, row_of, postings)

    def _repacked(
        self,
        listed: Sequence[str],
        expires: NDArray[np.float64],
        rows: NDArray[np.intp],
        fresh: list[int],
        added: Mapping[str, Entry],
    ) -> Operation[Snapshot]:
        """The snapshot over new storage holding the live rows in registry order (with
        room for a quarter more), copied ``COPY_ROWS`` per event-loop turn."""
        is_fresh = np.zeros(len(listed), np.bool_)
        is_fresh[fresh] = True
        positions = np.flatnonzero((rows >= 0) | is_fresh)
        live = len(positions)
        target = Rows(self.matrix.shape[1], live + live // 4 + 4, None, self.rows.lock)
        tokens = tokens_by_code(self.rows)
        for start in range(0, live, COPY_ROWS):
            if start:
                yield from pause()
            part = positions[start : start + COPY_ROWS]
            dst = np.arange(start, start + len(part))
            old = rows[part] >= 0
            target.copy(dst[old], self, rows[part][old], tokens)
            target.fill(dst[~old], [added[listed[i]] for i in part[~old].tolist()])
        moved = np.full(len(self.ids), -1, np.intp)
        moved[rows[positions][rows[positions] >= 0]] = np.flatnonzero(rows[positions] >= 0)
        target.copy_postings(self, moved, tokens)
        ids = tuple(listed[i] for i in positions.tolist())
        target.ids.extend(ids)
        order = np.arange(live, dtype=np.intp)
        row_of = dict(zip(ids, range(live), strict=True))
        # No other refresh sees ``target`` before this snapshot is published.
        return Snapshot._over(target, ids, expires[positions], order, row_of, target.postings_now())

    def without(self, rows: Sequence[int]) -> Snapshot:
        """This snapshot with ``rows`` dead (their memories were found gone): they match
        no filter and leave ``order`` and ``row_of``; the storage stays shared."""
        expires = self.expires.copy()
        expires[list(rows)] = _DEAD
        gone = {self.ids[row] for row in rows}
        return replace(
            self,
            expires=expires,
            order=self.order[~np.isin(self.order, list(rows))],
            row_of={m: row for m, row in self.row_of.items() if m not in gone},
        )

    def selected(self, mask: NDArray[np.bool_]) -> NDArray[np.intp]:
        """The rows ``mask`` holds, in registry order."""
        return self.order[mask[self.order]]

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
        if flt.sources is not None:
            mask &= np.isin(self.columns[L.F_SOURCE], self._codes_of(L.F_SOURCE, flt.sources))
        if flt.exclude_sources:
            excluded = self._codes_of(L.F_SOURCE, flt.exclude_sources)
            mask &= ~np.isin(self.columns[L.F_SOURCE], excluded)
        for tag in flt.tags:
            mask &= self._holding_token(L.F_TAGS, (tag,))
        for group in flt.label_groups:
            mask &= self._holding_token(L.F_LABELS, group)
        return mask

    def _codes_of(self, name: str, tokens: Sequence[str]) -> list[int]:
        table = self.codes[name]
        return [code for token in tokens if (code := table.get(token)) is not None]

    def _holding_token(self, name: str, tokens: Sequence[str]) -> NDArray[np.bool_]:
        """The rows whose ``name`` field holds one of ``tokens``."""
        held = np.zeros(len(self.ids), dtype=np.bool_)
        codes, rows = self.postings[name]
        wanted = self._codes_of(name, tokens)
        if wanted:
            held[rows[np.isin(codes, wanted)]] = True
        return held


def _finished(op: Operation[T]) -> T:
    """The value of a sub-operation that only pauses, run without a loop to give way to."""
    try:
        next(op)
        while True:
            op.send(False)
    except StopIteration as stop:
        value: T = stop.value
        return value


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
