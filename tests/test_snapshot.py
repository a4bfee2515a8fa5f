"""A portable snapshot scores its vectors in slices, one per event-loop turn, while other
operations share the loop, and in one product alone: the same scores either way; its
selection of the k nearest is exact."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from agent_memory.backends import snapshot
from agent_memory.backends.base import KnnQuery
from agent_memory.backends.snapshot import Entry, Snapshot
from agent_memory.core.effects import Sleep
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.lexical import LEX_DIM, query_vector
from agent_memory.schema.scoring import cosine_distances

DIM = 384


def _snapshot(rows: int) -> Snapshot:
    rng = np.random.default_rng(rows)
    vectors = rng.normal(size=(rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    lex = rng.normal(size=(rows, LEX_DIM)).astype(np.float32)
    ids = tuple(f"m{i}" for i in range(rows))
    entries = {m: Entry(vectors[i], {}, lex[i]) for i, m in enumerate(ids)}
    return Snapshot.build(ids, [math.inf] * rows, entries, DIM)


def _unit_query() -> NDArray[np.float32]:
    vector = np.linspace(-1.0, 1.0, DIM, dtype=np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def _query(lexical: bool) -> KnnQuery:
    vector = query_vector(["coffee", "deploy"]) if lexical else _unit_query()
    assert vector is not None
    return KnnQuery(MemoryFilter(namespace="_d"), 8, vector, lexical=lexical)


def _drain(op: Any, *, shared: bool) -> tuple[NDArray[np.float64], int]:
    """Run a sub-operation that only pauses, answering each pause with ``shared`` (what
    the async runner says when other operations share the loop); returns its value and
    how often it paused."""
    pauses = 0
    try:
        effect = next(op)
        while True:
            assert isinstance(effect, Sleep) and effect.seconds == 0
            pauses += 1
            effect = op.send(shared)
    except StopIteration as stop:
        value: NDArray[np.float64] = stop.value
        return value, pauses


@pytest.mark.parametrize("rows", [0, 1, 1000, 1024, 1025, 1088, 1089, 2049, 3000, 5000])
@pytest.mark.parametrize("lexical", [False, True])
def test_sliced_and_whole_scores_agree(rows: int, lexical: bool) -> None:
    """To the last bit of a float32 product (BLAS sums a row differently near the edge
    of a thread's share, wherever the slices or the thread shares begin)."""
    snap = _snapshot(rows)
    query = _query(lexical)
    sliced, _ = _drain(snap.scores(query), shared=True)
    whole, _ = _drain(snap.scores(query), shared=False)
    reference = (
        snap.lexical_scores(query.vector)
        if lexical
        else cosine_distances(snap.matrix, query.vector)
    )
    assert sliced.shape == whole.shape == (rows,) and sliced.dtype == np.float64
    np.testing.assert_allclose(sliced, reference, rtol=0, atol=4e-7)
    np.testing.assert_allclose(whole, reference, rtol=0, atol=4e-7)


@pytest.mark.parametrize(
    ("rows", "shared", "pauses"),
    [
        (0, True, 1),
        (5000, False, 1),  # alone: the first pause only, then one product
        (1024, True, 1),
        (1087, True, 1),  # a 63-row tail joins the first slice
        (1088, True, 2),
        (5000, True, 5),  # 1024 x 4 + 904: a pause before each slice
    ],
)
def test_a_shared_loop_gets_one_turn_per_slice(rows: int, shared: bool, pauses: int) -> None:
    assert snapshot.SCORE_ROWS == 1024 and snapshot.MIN_SLICE == 64
    _, paused = _drain(_snapshot(rows).scores(_query(False)), shared=shared)
    assert paused == pauses


def _reference_smallest(values: NDArray[np.float64], k: int) -> list[int]:
    def key(i: int) -> tuple[bool, float, int]:
        v = float(values[i])
        return (math.isnan(v), 0.0 if math.isnan(v) else v, i)

    return sorted(range(values.size), key=key)[:k]


@pytest.mark.parametrize("n", [1, 7, 50, 1999, 2000, 2001, 10_000, 30_000])
@pytest.mark.parametrize("k", [1, 8, 50, 200])
@pytest.mark.parametrize("kind", ["distinct", "ties", "nan", "constant", "sorted"])
def test_smallest_is_the_exact_k_smallest_ties_by_position(n: int, k: int, kind: str) -> None:
    rng = np.random.default_rng(n * 1000 + k)
    values = rng.random(n)
    if kind == "ties":
        values = np.round(values * 20) / 20  # a few hundred positions share each value
    elif kind == "nan":
        values[rng.random(n) < 0.3] = np.nan
    elif kind == "constant":
        values = np.full(n, 0.5)
    elif kind == "sorted":
        values = np.sort(values)[::-1].copy()  # the stride sample sees the far end first
    assert snapshot.smallest(values, k).tolist() == _reference_smallest(values, k)


def test_smallest_falls_back_when_the_sample_bound_is_too_tight() -> None:
    """Every sampled position holds the smallest values: the bound lets fewer than k in."""
    values = np.ones(10_000)
    values[:: snapshot.SAMPLE_STRIDE] = 0.0
    values[1] = 0.5
    assert snapshot.smallest(values, 600).tolist() == _reference_smallest(values, 600)
