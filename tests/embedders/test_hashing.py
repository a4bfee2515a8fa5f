"""HashingEmbedder: determinism, lexical similarity, validation, the protocol."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from agent_memory.embedders import Embedder, HashingEmbedder
from agent_memory.embedders.base import is_unit
from agent_memory.errors import InvalidInputError

# Pinned output: any change of tokenisation, hashing or weighting breaks stored vectors.
GOLDEN_TEXT = "Hello, World! héllo wörld"
GOLDEN_16 = [0, 0, 0, 0, -1, 1, 0, 1, 0, 0, 1, 0, 1, 0, -1, -1]


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_golden_vector_is_stable() -> None:
    vec = HashingEmbedder(dim=16).embed(GOLDEN_TEXT)
    expected = [x / math.sqrt(7) for x in GOLDEN_16]
    assert vec == pytest.approx(expected, abs=1e-12)


def test_long_features_are_not_cached_and_keep_their_vectors() -> None:
    """A cache entry keeps its feature alive: features of long tokens (a hex dump, up
    to a text's whole length) filled the cache with up to 100 kB strings, ~190 MB for
    2,000 such texts. Only short features are cached now, with the same vectors (the
    golden values were computed before the change)."""
    from agent_memory.embedders import hashing

    hashing._cached_bucket.cache_clear()
    long_token = "ab12" * 40
    vec = HashingEmbedder(dim=16).embed(f"short words and a long token {long_token} tail")
    golden = [1, 0, 1, 0, -2, -1, -2, 1, 1, 0, 1, 2, 0, 0, 0, 1]
    assert vec == pytest.approx([x / math.sqrt(19) for x in golden], abs=1e-12)
    cached = hashing._cached_bucket.cache_info().currsize
    assert cached == 12  # the 7 words and 5 bigrams without the long token
    HashingEmbedder(dim=16).embed(hashing.CACHED_FEATURE_CHARS * "x" + "y")
    assert hashing._cached_bucket.cache_info().currsize == cached


def test_same_vectors_in_another_process_with_another_hash_seed() -> None:
    code = (
        "from agent_memory.embedders import HashingEmbedder;"
        f"print(repr(HashingEmbedder(dim=64, seed=3).embed({GOLDEN_TEXT!r})))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert eval(out.stdout) == HashingEmbedder(dim=64, seed=3).embed(GOLDEN_TEXT)


def test_shared_words_are_closer_than_unrelated_text() -> None:
    emb = HashingEmbedder()
    a = emb.embed("The user prefers dark mode in the editor")
    b = emb.embed("dark mode is what the user likes")
    c = emb.embed("Quarterly revenue grew twelve percent")
    assert cos(a, b) > cos(a, c) + 0.2
    assert cos(a, a) == pytest.approx(1.0)


def test_case_and_unicode_normalisation() -> None:
    emb = HashingEmbedder()
    assert emb.embed("Dark MODE") == emb.embed("dark mode")
    assert emb.embed("caf\u00e9") == emb.embed("cafe\u0301")  # NFC and NFD forms
    assert cos(emb.embed("Straße"), emb.embed("STRASSE")) == pytest.approx(1.0)
    assert emb.embed("日本語 テキスト") != emb.embed("")


@pytest.mark.parametrize("text", ["", "   \n\t", "!!! ... ???"])
def test_text_without_words_is_one_fixed_unit_vector(text: str) -> None:
    emb = HashingEmbedder()
    vec = emb.embed(text)
    assert is_unit(vec)
    assert all(math.isfinite(x) for x in vec)
    assert sum(1 for x in vec if x != 0.0) == 1
    assert vec == emb.embed("")


def test_vectors_are_unit_and_dim_long() -> None:
    emb = HashingEmbedder(dim=50)
    for vec in emb.embed_many(["one", "two words", "a b c d e f g h " * 50, ""]):
        assert len(vec) == 50
        assert is_unit(vec)


def test_embed_many_matches_embed_and_empty_list() -> None:
    emb = HashingEmbedder()
    texts = ["alpha beta", "gamma", "alpha beta"]
    assert emb.embed_many(texts) == [emb.embed(t) for t in texts]
    assert emb.embed_many([]) == []
    assert emb("alpha beta") == emb.embed("alpha beta")


def test_seed_and_ngrams_change_the_space_and_the_id() -> None:
    base = HashingEmbedder()
    seeded = HashingEmbedder(seed=1)
    unigrams = HashingEmbedder(ngram_range=(1, 1))
    assert base.embed("dark mode") != seeded.embed("dark mode")
    assert base.embed("dark mode") != unigrams.embed("dark mode")
    assert len({base.id, seeded.id, unigrams.id, HashingEmbedder(dim=128).id}) == 4
    assert base.id == HashingEmbedder().id == "hashing-v1:dim=384:ngram=1-2:seed=0"
    assert unigrams.ngram_range == (1, 1)


def test_bigrams_capture_word_order() -> None:
    emb = HashingEmbedder()
    assert emb.embed("dog bites man") != emb.embed("man bites dog")
    assert HashingEmbedder(ngram_range=(1, 1)).embed("dog bites man") == pytest.approx(
        HashingEmbedder(ngram_range=(1, 1)).embed("man bites dog")
    )


def test_is_an_embedder_frozen_and_slotted() -> None:
    emb = HashingEmbedder()
    assert isinstance(emb, Embedder)
    with pytest.raises(AttributeError):
        emb.dim = 3  # type: ignore[misc]
    assert not hasattr(emb, "__dict__")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dim": 0},
        {"dim": True},
        {"dim": 1.5},
        {"dim": 10**6},
        {"ngram_range": (0, 1)},
        {"ngram_range": (2, 1)},
        {"ngram_range": (1, 9)},
        {"ngram_range": (1,)},
        {"seed": -1},
        {"seed": 2**64},
        {"seed": "x"},
    ],
)
def test_invalid_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        HashingEmbedder(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["list"], "\ud800"])
def test_invalid_text(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        HashingEmbedder().embed(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["a string", None, 5, ["ok", 3], {"a"}])
def test_invalid_texts(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        HashingEmbedder().embed_many(bad)  # type: ignore[arg-type]


async def test_async_variants() -> None:
    emb = HashingEmbedder()
    assert await emb.aembed("hello there") == emb.embed("hello there")
    assert await emb.aembed_many(["a", "b"]) == emb.embed_many(["a", "b"])
