"""One embedder for the store and CrewAI's ``Memory`` (no framework import).

CrewAI's ``Memory(embedder=...)`` takes a callable from a list of texts to a list of
vectors (chromadb's ``EmbeddingFunction`` shape); this library's stores take ``text ->
vector``. :class:`CrewAIEmbedder` turns the second into the first, so the vectors CrewAI
stores and queries with and the ones the store computes itself (for a record saved
without an embedding) come from the same model.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from agent_memory.errors import EmbedderError, InvalidInputError


class CrewAIEmbedder:
    """CrewAI's embedding callable over a blocking ``text -> vector`` embedder.

    Args:
        embed: one of this library's embedders (its ``embed_many`` is used, one call per
            batch) or any blocking callable from a text to a sequence of floats.

    Raises:
        InvalidInputError: ``embed`` is not callable, or is a coroutine function (CrewAI
            calls its embedder synchronously).
    """

    def __init__(self, embed: Callable[[str], Any]) -> None:
        if not callable(embed):
            raise InvalidInputError("embed must be callable", field="embed")
        target = getattr(embed, "embed", embed)
        if inspect.iscoroutinefunction(embed) or inspect.iscoroutinefunction(target):
            raise InvalidInputError(
                "CrewAI calls its embedder synchronously: pass a blocking embedder",
                field="embed",
            )
        self._embed = embed

    def __call__(self, input: Sequence[str]) -> list[list[float]]:
        """The vectors of ``input``, one per text, in order.

        Raises:
            InvalidInputError: ``input`` is not a list of texts.
            EmbedderError: the embedder returned something other than one vector of
                numbers per text.
        """
        if isinstance(input, (str, bytes)) or not isinstance(input, Sequence):
            raise InvalidInputError("input must be a list of texts", field="input")
        texts = list(input)
        many = getattr(self._embed, "embed_many", None)
        raw = many(texts) if callable(many) else [self._embed(t) for t in texts]
        try:
            vectors = [[float(x) for x in vector] for vector in raw]
        except (TypeError, ValueError) as exc:
            raise EmbedderError(f"the embedder returned a non-numeric vector: {exc}") from None
        if len(vectors) != len(texts):
            raise EmbedderError(
                f"the embedder returned {len(vectors)} vectors for {len(texts)} texts"
            )
        return vectors

    def __repr__(self) -> str:
        return f"CrewAIEmbedder({self._embed!r})"


__all__ = ["CrewAIEmbedder"]
