"""Embedding as an effect: the runner calls the user's embedder, sync or async."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Operation, call
from agent_memory.errors import EmbedderError, InvalidInputError
from agent_memory.store.validation import unit_vector


def _embedder_failed(exc: Exception) -> EmbedderError:
    return EmbedderError(f"the embedder raised {type(exc).__name__}: {exc}", field="embed")


def call_embedder(fn: Any, argument: Any, *, what: str, listed: bool = False) -> Operation[Any]:
    """Call the user's embedder; what it raises becomes :class:`EmbedderError`.

    With ``listed`` (a batch), an iterator it returns (a generator, say) is consumed
    where the embedder ran, so its deferred work stays off the event loop and what it
    raises is the embedder's failure too.

    Only the call is guarded, so a fault in the library's own handling of the result
    surfaces as itself instead of being reported as the embedder's. The built-in HTTP
    embedder's own errors (an unreachable embedding server is a ``ServerUnavailableError``
    when it is called directly) are wrapped too: through the store, that class means
    the Valkey server.
    """
    try:
        result = yield from call(fn, argument, what=what, listed=listed)
    except EmbedderError:
        raise
    except Exception as exc:  # any failure of the embedder, re-raised as ours
        raise _embedder_failed(exc) from exc
    return result


def checked_embedding(vector: Any, dim: int | None) -> NDArray[np.float32]:
    """The embedder's ``vector`` checked and unit-length; not a usable vector is the
    embedder's failure (:class:`EmbedderError`, ``field="embedding"``)."""
    try:
        return unit_vector(vector, dim, field="embedding")
    except InvalidInputError as exc:
        raise EmbedderError(
            f"the embedder returned an unusable vector: {exc}", field="embedding"
        ) from exc


def embed_texts(ctx: StoreContext, texts: Sequence[str]) -> Operation[list[NDArray[np.float32]]]:
    """Embed ``texts`` (one ``embed_many`` call when configured), validated and unit-length.

    Raises:
        EmbedderError: the embedder raised, ``embed_many`` returned the wrong number of
            vectors, or a vector is unusable (not a flat sequence of numbers, of the
            wrong size, with NaN/inf, or of zero length).
    """
    if not texts:
        return []
    raw: list[Any]
    if ctx.settings.embed_many is not None:
        result = yield from call_embedder(
            ctx.settings.embed_many, list(texts), what="embed_many", listed=True
        )
        if isinstance(result, (str, bytes)) or not isinstance(result, Iterable):
            raise EmbedderError(
                f"embed_many must return a list of vectors, got {type(result).__name__}",
                field="embed_many",
            )
        raw = list(result)
        if len(raw) != len(texts):
            raise EmbedderError(
                f"embed_many returned {len(raw)} vectors for {len(texts)} texts",
                field="embed_many",
            )
    else:
        raw = []
        for text in texts:
            vector = yield from call_embedder(ctx.settings.embed, text, what="embed")
            raw.append(vector)
    ctx.count("embedding_calls", 1 if ctx.settings.embed_many is not None else len(texts))
    return [checked_embedding(v, ctx.dim) for v in raw]


def embed_one(ctx: StoreContext, text: str) -> Operation[NDArray[np.float32]]:
    """Embed a single text (always through ``embed``). Raises as :func:`embed_texts`."""
    vector = yield from call_embedder(ctx.settings.embed, text, what="embed")
    ctx.count("embedding_calls")
    return checked_embedding(vector, ctx.dim)
