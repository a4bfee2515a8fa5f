"""Embedding cache: vectors keyed by (embedder id, text), so the same text is embedded once.

An entry is ``{name}:emb:{sha256}`` where the digest covers ``[embedder_id, text]`` in
canonical JSON; the value is the vector as a little-endian float32 blob, read with
binary replies whatever the client's ``decode_responses``. Entries expire after ``ttl``
seconds (default 7 days; ``None``: never).

Counters: ``embedding:hits`` (embedding calls saved) and ``embedding:misses``:
``get_many`` counts each text it looks up, ``embed_many`` and ``wrap`` each text served
without an embedding call (a repeat in one batch included; counted only when the call
returns its vectors: one whose embed function fails served none) and each text to embed
(counted whatever the embed function then does). Lookups are buffered and ride on the tier's next pipeline (see :mod:`agent_memory.cache.stats`).

Every method raises :class:`~agent_memory.errors.ServerUnavailableError`,
:class:`~agent_memory.errors.OperationTimeoutError` or
:class:`~agent_memory.errors.ServerResponseError` when the server fails, and
:class:`~agent_memory.errors.InvalidInputError` for an empty embedder id, a text that is
not a string or not valid Unicode (a lone surrogate), vectors that are not a sequence (or
a two-dimensional array) of vectors, a vector that is empty, not one-dimensional, not
finite or beyond float32's range, or an embed function returning the wrong number of
vectors (nothing is written then). A key another writer gave another type, or a value
that is not finite float32s (NaN and infinities included), is read as a miss, logged and
counted (``corrupt_entries``); the next write replaces it. ``embed_many`` and ``wrap``
return the vectors the embed function made even when caching them fails (logged and
counted in ``store_failures``, as the LLM cache's ``wrap`` keeps a paid-for response).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from agent_memory.cache._bulk import scan_and_unlink
from agent_memory.cache._tier import TierCore, logger
from agent_memory.cache.keys import check_name_for_tier, check_text, digest, ttl_ms
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation, call
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import (
    AgentMemoryError,
    InvalidInputError,
    ReplyParseError,
    WrongTypeError,
)

DEFAULT_EMBEDDING_TTL = 7 * 86_400.0
Vector = list[float]


def _blob(vector: Any, field: str) -> bytes:
    try:
        with np.errstate(over="raise"):  # a number beyond float32 is refused, not inf
            array = np.asarray(vector, dtype="<f4")
    except (OverflowError, FloatingPointError) as exc:
        raise InvalidInputError(
            f"{field}: a number is beyond the range of float32 ({exc})", field=field
        ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{field}: not a vector of numbers ({exc})", field=field) from exc
    if array.ndim != 1 or array.size == 0 or not np.isfinite(array).all():
        raise InvalidInputError(
            f"{field}: vectors must be one-dimensional, non-empty and finite", field=field
        )
    return array.tobytes()


def _vector(raw: Any) -> tuple[Vector | None, str | None]:
    """A cached vector (``None`` when absent), or why the value is not one."""
    if raw is None:
        return None, None
    try:
        data = replies.raw_bytes(raw)
    except ReplyParseError as exc:
        return None, str(exc)
    if not data or len(data) % 4:
        return None, f"{len(data)} bytes, not a float32 vector"
    array = np.frombuffer(data, dtype="<f4")
    if not np.isfinite(array).all():  # no writer of this library stores one
        return None, "a vector holding NaN or an infinity"
    return [float(x) for x in array], None


def _texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise InvalidInputError("texts must be a sequence of strings", field="texts")
    for text in texts:
        if not isinstance(text, str):
            raise InvalidInputError("texts must be strings", field="texts")
    return list(texts)


def vectors_of(value: Any, field: str) -> list[Any]:
    """The vectors of a batch (pure): a list, tuple or other iterable of vectors, or a
    two-dimensional array (what sentence-transformers' ``encode`` returns), as a list.

    Raises:
        InvalidInputError: anything else (a number, text, a mapping, a 1-D array).
    """
    if isinstance(value, np.ndarray):
        if value.ndim != 2:
            raise InvalidInputError(
                f"{field}: an array of vectors must be two-dimensional, got {value.ndim} "
                "dimension(s)",
                field=field,
            )
        return list(value)
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInputError(
            f"{field}: expected a sequence of vectors, got {type(value).__name__}", field=field
        )
    return list(value)


class EmbeddingCore:
    """The operations of the embedding cache (no I/O)."""

    def __init__(self, name: str, ttl: float | None) -> None:
        self.tier = TierCore(name)
        check_name_for_tier(self.tier.layout.name, "embedding")
        self.ttl_ms = ttl_ms(ttl)

    def _key(self, embedder_id: str, text: str) -> str:
        return self.tier.layout.embedding(digest([embedder_id, text], field="texts"))

    def _lookup(self, embedder_id: str, items: list[str]) -> Operation[list[Vector | None]]:
        check_text(embedder_id, field="embedder_id")
        if not items:
            return []
        keys = [self._key(embedder_id, t) for t in items]
        commands = [Command(("GET", key), binary=True) for key in keys]
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, commands)
        # A key of another type (another writer's) is unreadable, a miss: its text is
        # embedded again and the write replaces it.
        raise_first_error([r for r in got if not isinstance(r, WrongTypeError)])
        vectors: list[Vector | None] = []
        for key, raw in zip(keys, got, strict=True):
            vector, why = (
                (None, f"not a string: {raw}") if isinstance(raw, WrongTypeError) else _vector(raw)
            )
            if why is not None:
                self.tier.unreadable(key, why)
            vectors.append(vector)
        return vectors

    def _count(self, hits: int, misses: int) -> None:
        self.tier.buffer.add({"embedding:hits": hits, "embedding:misses": misses})
        self.tier.note_lookups(hits, misses)

    def get_many(self, embedder_id: str, texts: Sequence[str]) -> Operation[list[Vector | None]]:
        items = _texts(texts)
        vectors = yield from self._lookup(embedder_id, items)
        hits = sum(v is not None for v in vectors)
        self._count(hits, len(items) - hits)
        return vectors

    def put_many(
        self,
        embedder_id: str,
        texts: Sequence[str],
        vectors: Sequence[Any],
        ttl: float | None,
    ) -> Operation[None]:
        check_text(embedder_id, field="embedder_id")
        items = _texts(texts)
        given = vectors_of(vectors, "vectors")
        if len(given) != len(items):
            raise InvalidInputError(f"{len(items)} texts but {len(given)} vectors", field="vectors")
        expiry = ttl_ms(ttl) if ttl is not None else self.ttl_ms
        blobs = [_blob(v, "vectors") for v in given]
        yield from self._write(embedder_id, items, blobs, expiry)

    def _write(
        self, embedder_id: str, items: list[str], blobs: list[bytes], expiry: int | None
    ) -> Operation[None]:
        tail: tuple[Any, ...] = ("PX", expiry) if expiry is not None else ()
        commands = [
            Command(("SET", self._key(embedder_id, t), blob, *tail))
            for t, blob in zip(items, blobs, strict=True)
        ]
        if commands:
            got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, commands)
            raise_first_error(got)
            self.tier.note_stored(sum(len(blob) for blob in blobs))

    def embed_many(
        self,
        embedder_id: str,
        texts: Sequence[str],
        embed: Callable[..., Any],
        batched: bool,
    ) -> Operation[list[Vector]]:
        """Counts one hit per text served without an embedding call (a cached text, or a
        repeat of a text in ``texts``) and one miss per distinct text not cached. The
        misses are counted once the lookup answered, the hits only once the vectors are
        ready to be returned: a call whose embed function fails (raises, returns the
        wrong number of vectors or an invalid one) counts its misses and no hit.

        Vectors the embed function returned are returned even when caching them fails
        (the server failed meanwhile): as :meth:`~agent_memory.cache.llm.LlmCore.cached_call` keeps a paid-for
        response, the failed write is logged and counted (``store_failures``), never
        raised. The lookup before the call still raises when the server fails."""
        items = _texts(texts)
        found = yield from self._lookup(embedder_id, items)
        missing = list(dict.fromkeys(t for t, v in zip(items, found, strict=True) if v is None))
        self._count(0, len(missing))  # the misses, whatever the embed function does
        fresh: list[Any] = []
        if batched and missing:
            fresh = vectors_of(
                (yield from call(embed, missing, what="embed function", listed=True)), "embed"
            )
        elif missing:
            for text in missing:
                fresh.append((yield from call(embed, text, what="embed function")))
        if len(fresh) != len(missing):
            raise InvalidInputError(
                f"the embed function returned {len(fresh)} vectors for {len(missing)} texts",
                field="embed",
            )
        blobs = [_blob(v, "embed") for v in fresh]
        # The hits only now, as the vectors are sure to be returned: a call whose embed
        # function failed served none (before the write, so they ride on its batch).
        self._count(len(items) - len(missing), 0)
        try:
            yield from self._write(embedder_id, missing, blobs, self.ttl_ms)
        except AgentMemoryError as exc:  # logged and counted; the paid-for vectors are kept
            logger.warning(
                "cache %s: %d embedding(s) could not be stored (%s: %s); returned uncached",
                self.tier.layout.name,
                len(missing),
                type(exc).__name__,
                exc,
            )
            self.tier.buffer.note("store_failures")
        computed = {
            t: [float(x) for x in np.frombuffer(b, dtype="<f4")]
            for t, b in zip(missing, blobs, strict=True)
        }
        return [v if v is not None else computed[t] for t, v in zip(items, found, strict=True)]

    def clear(self) -> Operation[int]:
        removed = yield from scan_and_unlink(self.tier.layout.embedding_pattern())
        return removed
