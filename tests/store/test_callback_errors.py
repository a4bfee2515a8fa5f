"""A user's callback failing is reported as the callback's; a fault of ours is not hidden."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agent_memory import MemoryStore, SyncMemoryStore
from agent_memory.backends.inprocess import AsyncInProcessClient, InProcessClient, Keyspace
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


def _lazy_batch(seen: list[int], fail_after: int | None = None) -> Any:
    """A batch embedder returning a generator: its work happens as it is iterated."""

    def embed_many(texts: list[str]) -> Any:
        def vectors() -> Any:
            for i, text in enumerate(texts):
                seen.append(threading.get_ident())
                if fail_after is not None and i == fail_after:
                    raise RuntimeError("model crashed mid-batch")
                yield EMBEDDER(text)

        return vectors()

    return embed_many


async def test_a_lazy_batch_is_computed_off_the_event_loop() -> None:
    """A generator returned by a blocking ``embed_many`` is its work deferred: the async
    store must consume it in the embedder's worker thread, not on the event loop."""
    seen: list[int] = []
    store = MemoryStore(
        AsyncInProcessClient(Keyspace()), "lazy", EMBEDDER, embed_many=_lazy_batch(seen)
    )
    await store.remember_many([{"content": "a"}, {"content": "b"}])
    assert len(seen) == 2 and threading.get_ident() not in seen
    assert sorted(m.content for m in (await store.list()).items) == ["a", "b"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_lazy_batch_failing_midway_is_an_embedder_error(mode: str) -> None:
    seen: list[int] = []
    keyspace = Keyspace()
    items = [{"content": "a"}, {"content": "b"}]
    with pytest.raises(EmbedderError, match="RuntimeError: model crashed") as caught:
        if mode == "sync":
            _store(keyspace, embed_many=_lazy_batch(seen, fail_after=1)).remember_many(items)
        else:
            store = MemoryStore(
                AsyncInProcessClient(keyspace),
                "callbacks",
                EMBEDDER,
                embed_many=_lazy_batch(seen, fail_after=1),
            )
            await store.remember_many(items)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert _store(keyspace).list().items == ()


@pytest.mark.parametrize("value", [1e308, 1e-320])
def test_an_embedding_of_extreme_magnitude_is_stored_as_its_direction(value: float) -> None:
    """The squared norm of [v, v, ...] overflows (or underflows) a float, yet the vector
    has a direction: the store keeps it, and finds it, instead of calling it zero."""
    dim = EMBEDDER.dim

    def embed(text: str) -> list[float]:
        return [value] * dim if text == "extreme" else EMBEDDER(text)

    store = _store(embed=embed)
    memory_id = store.remember("extreme")
    assert [h.item.id for h in store.recall("extreme")] == [memory_id]


@pytest.mark.parametrize(
    "returned",
    [None, {"a": 1.0}, "1, 2", [1.0, 2.0], [float("nan")] * EMBEDDER.dim, [0.0] * EMBEDDER.dim],
    ids=["none", "dict", "str", "wrong-dim", "nan", "zero"],
)
def test_an_unusable_vector_is_an_embedder_error(returned: Any) -> None:
    """What the embedder returned being no usable vector is the embedder's failure
    (EmbedderError, as the class documents), for embed and embed_many alike."""

    class Returns:
        dim = EMBEDDER.dim  # declared, so the store sends no probe text

        def __call__(self, text: str) -> Any:
            return returned

    keyspace = Keyspace()
    store = _store(keyspace)
    store.remember("kept")
    with pytest.raises(EmbedderError, match="embedding"):
        _store(keyspace, Returns()).remember("x")
    with pytest.raises(EmbedderError, match="embedding"):
        _store(keyspace, Returns()).recall("x")
    with pytest.raises(EmbedderError, match="embedding"):
        _store(keyspace, embed_many=lambda texts: [returned] * len(texts)).remember_many(
            [{"content": "a"}, {"content": "b"}]
        )
    assert [m.content for m in store.list().items] == ["kept"]
    if returned != [1.0, 2.0]:  # as the probe of an embedder declaring no dim
        with pytest.raises(EmbedderError, match="embedding"):
            _store(Keyspace(), lambda text: returned).ensure_index()


class _RaisesStopIteration:
    dim = EMBEDDER.dim

    def __call__(self, text: str) -> list[float]:
        raise StopIteration  # e.g. a next() on an exhausted iterator inside the model code


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_embedder_raising_stop_iteration_is_an_embedder_error(mode: str) -> None:
    """StopIteration cannot cross an asyncio Future: raised by a blocking embedder in its
    worker thread it left the async store's call waiting forever."""
    keyspace = Keyspace()
    with pytest.raises(EmbedderError, match="StopIteration") as caught:
        if mode == "sync":
            _store(keyspace, _RaisesStopIteration()).remember("x")
        else:
            store = MemoryStore(AsyncInProcessClient(keyspace), "callbacks", _RaisesStopIteration())
            # The bound only keeps a regression from hanging the suite.
            await asyncio.wait_for(store.remember("x"), timeout=30)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert isinstance(caught.value.__cause__.__cause__, StopIteration)
    assert _store(keyspace).list().items == ()
