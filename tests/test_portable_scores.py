"""The portable backend scores its mirror in slices, one per event-loop turn, with the
same result as scoring every row at once."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from agent_memory.backends import portable
from agent_memory.backends.base import KnnQuery
from agent_memory.backends.portable import _Entry, _Snapshot
from agent_memory.core.effects import Sleep
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.lexical import LEX_DIM, query_vector
from agent_memory.schema.scoring import cosine_distances

DIM = 16


def _snapshot(rows: int) -> _Snapshot:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    lex = rng.normal(size=(rows, LEX_DIM)).astype(np.float32)
    ids = tuple(f"m{i}" for i in range(rows))
    entries = {m: _Entry(vectors[i], {}, lex[i]) for i, m in enumerate(ids)}
    return _Snapshot.build(ids, [math.inf] * rows, entries, DIM)


def _unit_query() -> np.ndarray[Any, np.dtype[np.float32]]:
    vector = np.linspace(-1.0, 1.0, DIM, dtype=np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def _drain(op: Any, *, shared: bool) -> tuple[Any, int]:
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
        return stop.value, pauses


@pytest.mark.parametrize("rows", [0, 1, 100, 250, 1000])
@pytest.mark.parametrize("lexical", [False, True])
@pytest.mark.parametrize("shared", [False, True])
def test_scores_in_slices_equal_the_whole_product(
    rows: int, lexical: bool, shared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(portable, "_SCORE_ROWS", 100)
    snap = _snapshot(rows)
    vector = query_vector(["coffee", "deploy"]) if lexical else _unit_query()
    assert vector is not None
    query = KnnQuery(MemoryFilter(namespace="_d"), 8, vector, lexical=lexical)
    scores, pauses = _drain(snap.scores(query), shared=shared)
    whole = snap.lexical_scores(vector) if lexical else cosine_distances(snap.matrix, vector)
    assert scores.shape == (rows,) and scores.dtype == np.float64
    np.testing.assert_allclose(scores, whole, rtol=0, atol=1e-6)
    # One pause first (it tells whether the loop is shared), then one between slices
    # when it is; alone, one product.
    slices = math.ceil(rows / 100) if shared else min(rows, 1)
    assert pauses == 1 + max(0, slices - 1)
