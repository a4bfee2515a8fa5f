"""A user's callback failing is reported as the callback's; a fault of ours is not hidden."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory import SyncMemoryStore
from agent_memory.backends.inprocess import InProcessClient, Keyspace
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import EmbedderError
from agent_memory.store.ops import labeling

EMBEDDER = HashingEmbedder()


def _store(
    keyspace: Keyspace | None = None, embed: Any = EMBEDDER, **options: Any
) -> SyncMemoryStore:
    return SyncMemoryStore(InProcessClient(keyspace or Keyspace()), "callbacks", embed, **options)


def test_embedder_failures_are_embedder_errors() -> None:
    def broken(text: str) -> list[float]:
        raise TimeoutError("model server down")

    keyspace = Keyspace()
    store = _store(keyspace)
    store.remember("kept")
    with pytest.raises(EmbedderError, match="TimeoutError: model server down") as caught:
        _store(keyspace, broken).recall("x")
    assert isinstance(caught.value.__cause__, TimeoutError)
    with pytest.raises(EmbedderError, match="must return a list of vectors"):
        _store(keyspace, embed_many=lambda texts: 3).remember_many(
            [{"content": "a"}, {"content": "b"}]
        )
    with pytest.raises(EmbedderError, match="2 vectors for 3 texts"):
        _store(keyspace, embed_many=lambda texts: [[1.0] * EMBEDDER.dim] * 2).remember_many(
            [{"content": t} for t in "abc"]
        )
    assert [m.content for m in store.list().items] == ["kept"]


def test_a_failing_labeler_is_counted_and_recall_goes_on() -> None:
    def labeler(text: str) -> Any:
        raise ValueError("labeler down")

    store = _store(labeler=labeler)
    store.remember("the deploy is on Tuesday")
    assert [h.item.content for h in store.recall("deploy")] == ["the deploy is on Tuesday"]
    assert store._ctx.counters["labeler_failures"] == 2


def test_a_fault_in_our_own_label_check_is_not_reported_as_the_labeler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def our_bug(found: Any, policy: Any) -> Any:
        raise KeyError("a bug in the library")

    monkeypatch.setattr(labeling, "check_labels", our_bug)
    store = _store(labeler=lambda text: {"topic": ["x"]})
    with pytest.raises(KeyError, match="a bug in the library"):
        store.recall("deploy")
