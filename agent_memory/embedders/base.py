"""The embedder protocol and the validation every built-in embedder shares.

An embedder turns text into an L2-normalised vector of ``dim`` floats. Any object with
``dim``, ``id``, ``embed`` and ``embed_many`` satisfies :class:`Embedder`; the built-in
ones are also callable (``embedder(text)``), so an instance can be passed directly as
the ``embed=`` argument of a store, and they offer ``aembed`` / ``aembed_many`` for
asyncio code (run in a worker thread, so the event loop never blocks).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from agent_memory.core.checks import check_str
from agent_memory.errors import AgentMemoryError, InvalidInputError

#: Upper bound on the dimension of a built-in embedder.
MAX_DIM = 65_536


@runtime_checkable
class Embedder(Protocol):
    """What the store needs from an embedder.

    Attributes:
        dim: the length of every vector this embedder returns.
        id: a stable identifier of the model and every setting that changes the
            vectors; two embedders with the same ``id`` return the same vectors, so it
            keys the embedding cache and the store's stored identity.
    """

    @property
    def dim(self) -> int:
        """The length of every vector."""
        ...

    @property
    def id(self) -> str:
        """A stable identifier of the model and its settings."""
        ...

    def embed(self, text: str) -> list[float]:
        """Embed one text into an L2-normalised vector of ``dim`` floats."""
        ...

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed several texts; the result has one vector per text, in order."""
        ...


def check_text(text: object, *, field: str = "text") -> str:
    """Return ``text`` if it is a ``str`` of valid Unicode (empty text is allowed).

    Raises:
        InvalidInputError: ``text`` is not a ``str`` or is not encodable as UTF-8
            (lone surrogates).
    """
    return check_str(text, field=field)


def check_texts(texts: object) -> list[str]:
    """Return ``texts`` as a list after checking every element with :func:`check_text`.

    Raises:
        InvalidInputError: ``texts`` is a single string (pass a list), is not a
            sequence, or holds an invalid element.
    """
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise InvalidInputError(
            f"texts must be a sequence of str, got {type(texts).__name__}", field="texts"
        )
    return [check_text(t, field=f"texts[{i}]") for i, t in enumerate(texts)]


def check_dim(dim: object, *, field: str = "dim") -> int:
    """Return ``dim`` if it is an int in ``[1, MAX_DIM]``.

    Raises:
        InvalidInputError: otherwise.
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIM:
        raise InvalidInputError(
            f"{field} must be an int in [1, {MAX_DIM}], got {dim!r}", field=field
        )
    return dim


def finish_vectors(
    matrix: npt.ArrayLike,
    *,
    rows: int,
    dim: int,
    source: str,
    error: type[AgentMemoryError] = AgentMemoryError,
) -> list[list[float]]:
    """Validate a ``(rows, dim)`` matrix of raw vectors, L2-normalise it, return lists.

    Args:
        matrix: the raw vectors, one per row.
        rows: the number of vectors expected.
        dim: the length expected of every vector.
        source: who produced the vectors, for messages.
        error: the exception class raised on a bad matrix.

    Raises:
        AgentMemoryError: (of class ``error``) wrong shape, a non-finite value, or a
            zero vector that cannot be normalised.
    """
    try:
        arr = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{source} returned vectors that are not numeric arrays") from exc
    if arr.shape != (rows, dim):
        raise error(f"{source} returned vectors of shape {arr.shape}, expected ({rows}, {dim})")
    if not np.isfinite(arr).all():
        raise error(f"{source} returned a vector with a non-finite value")
    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
    odd = ~(np.isfinite(norms) & (norms > 0.0))
    if odd.any():
        # A squared norm that overflows (components near 1e308) or underflows (subnormal
        # components) is no zero vector: scaled by its largest component first, such a
        # row has a norm in [1, sqrt(dim)].
        peak = np.max(np.abs(arr), axis=1, keepdims=True)
        if not (peak[odd] > 0.0).all():
            raise error(f"{source} returned a zero vector, which cannot be normalised")
        arr = np.where(odd, arr / np.where(odd, peak, 1.0), arr)
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
    unit = arr / norms if rows else arr
    out: list[list[float]] = unit.tolist()
    return out


def describe_failure(exc: BaseException, *, limit: int = 300) -> str:
    """``ClassName: message`` of a model library's exception, cut to ``limit``
    characters (an engine's message can quote a whole file or tensor)."""
    message = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_unit(vector: Sequence[float], *, tol: float = 1e-6) -> bool:
    """Whether ``vector`` has an L2 norm within ``tol`` of 1 (a testing helper)."""
    return abs(math.sqrt(math.fsum(x * x for x in vector)) - 1.0) <= tol


class ThreadedAsyncMixin:
    """``__call__``, ``aembed`` and ``aembed_many`` for an embedder with sync methods.

    The async variants run the sync method in a worker thread (``asyncio.to_thread``),
    so a slow model or a slow HTTP server never blocks the event loop. They raise what
    the sync methods raise.
    """

    __slots__ = ()

    def embed(self, text: str) -> list[float]:  # pragma: no cover - overridden
        """Embed one text (implemented by the concrete embedder)."""
        raise NotImplementedError

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:  # pragma: no cover
        """Embed several texts (implemented by the concrete embedder)."""
        raise NotImplementedError

    def __call__(self, text: str) -> list[float]:
        """Same as :meth:`embed`, so the instance can be the store's ``embed=`` callable."""
        return self.embed(text)

    async def aembed(self, text: str) -> list[float]:
        """Async :meth:`embed`, run in a worker thread. Raises what :meth:`embed` raises."""
        return await asyncio.to_thread(self.embed, text)

    async def aembed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`embed_many`, run in a worker thread.

        Raises what :meth:`embed_many` raises.
        """
        return await asyncio.to_thread(self.embed_many, texts)
