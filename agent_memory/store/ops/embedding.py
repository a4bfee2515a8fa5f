"""Embedding as an effect: the runner calls the user's embedder, sync or async."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.core.effects import Operation, call
from agent_memory.errors import AgentMemoryError, EmbedderError, InvalidInputError
from agent_memory.store.context import StoreContext
from agent_memory.store.validation import unit_vector


def _embedder_failed(exc: Exception) -> EmbedderError:
    return EmbedderError(f"the embedder raised {type(exc).__name__}: {exc}", field="embed")


def embed_texts(ctx: StoreContext, texts: Sequence[str]) -> Operation[list[NDArray[np.float32]]]:
    """Embed ``texts`` (one ``embed_many`` call when configured), validated and unit-length.

    Raises:
        InvalidInputError: the embedder failed or returned a vector of the wrong size,
            with NaN/inf, or of zero length.
    """
    if not texts:
        return []
    raw: list[Any]
    try:
        if ctx.embed_many is not None:
            result = yield from call(ctx.embed_many, list(texts), what="embed_many")
            raw = list(result)
            if len(raw) != len(texts):
                raise InvalidInputError(
                    f"embed_many returned {len(raw)} vectors for {len(texts)} texts",
                    field="embed_many",
                )
        else:
            raw = []
            for text in texts:
                vector = yield from call(ctx.embed, text, what="embed")
                raw.append(vector)
    except AgentMemoryError:
        raise
    except Exception as exc:
        raise _embedder_failed(exc) from exc
    ctx.count("embedding_calls", 1 if ctx.embed_many is not None else len(texts))
    return [unit_vector(v, ctx.dim, field="embedding") for v in raw]


def embed_one(ctx: StoreContext, text: str) -> Operation[NDArray[np.float32]]:
    """Embed a single text (always through ``embed``)."""
    try:
        vector = yield from call(ctx.embed, text, what="embed")
    except AgentMemoryError:
        raise
    except Exception as exc:
        raise _embedder_failed(exc) from exc
    ctx.count("embedding_calls")
    return unit_vector(vector, ctx.dim, field="embedding")
