"""The asyncio cache-tier classes (``LlmCache``, ``ToolCache``, ``SessionStore``,
``EmbeddingCache``): thin facades over the operations of their core modules.

``sync_tiers.py`` is generated from this file by ``scripts/unasync.py`` (the test suite
fails when the two drift): edit this file, then run ``python scripts/unasync.py``.
Every method raises :class:`~agent_memory.errors.ServerUnavailableError`,
:class:`~agent_memory.errors.OperationTimeoutError` or
:class:`~agent_memory.errors.ServerResponseError` when the server fails; the errors
listed per method come on top.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import AsyncTier
from agent_memory.cache.embeddings import DEFAULT_EMBEDDING_TTL, EmbeddingCore, Vector
from agent_memory.cache.keys import check_text, ttl_ms
from agent_memory.cache.llm import LlmCacheResult, LlmCore, TokenUsage, _check_args
from agent_memory.cache.prices import ModelPrice, PriceTable
from agent_memory.cache.session import DEFAULT_SESSION_TTL, SessionCore
from agent_memory.cache.stats import CacheStats
from agent_memory.cache.tool_core import ToolCacheResult, ToolCore, ToolEffectiveness, ToolPolicy
from agent_memory.errors import InvalidInputError

_ASYNC = True


class LlmCache(AsyncTier):
    """Asyncio LLM response cache over ``valkey.asyncio``/``redis.asyncio`` clients
    (standalone or cluster). The constructor does no I/O.

    Args:
        client: an asyncio client.
        name: the cache name (key prefix).
        ttl: default entry lifetime in seconds (at most ten years); ``None`` keeps
            entries until evicted.
        prices: overrides merged over the default price table, or a full
            :class:`PriceTable`.
        clock: time source in seconds.

    Raises:
        InvalidInputError: a blocking client, a bad name (one another tier's keys
            could share: see :func:`~agent_memory.cache.keys.check_name_for_tier`), TTL,
            price or clock.
    """

    __slots__ = ("_core",)

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        ttl: float | None = None,
        prices: PriceTable | Mapping[str, ModelPrice | Mapping[str, Any]] | None = None,
        clock: Callable[[], float] = time.time,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(client, name, "llm", registry)
        self._core = LlmCore(name, ttl, prices, clock)
        self._core.tier.cluster = self._cluster

    async def check(self, params: Mapping[str, Any]) -> LlmCacheResult:
        """Look ``params`` up. Raises InvalidInputError (no model, non-JSON values: text
        that is not valid Unicode, an integer beyond a float's range), before anything is
        sent; ServerUnavailableError, OperationTimeoutError, ServerResponseError. An
        entry another writer left unreadable (not JSON, another type) is a miss, logged
        and counted (``corrupt_entries``)."""
        return await self._run(self._core.check(params))

    async def store(
        self,
        params: Mapping[str, Any],
        response: Any,
        *,
        tokens: TokenUsage | Mapping[str, Any] | None = None,
        ttl: float | None = None,
    ) -> str:
        """Store a JSON-serialisable ``response`` for ``params``; returns the key (text
        with a lone surrogate is stored as a JSON escape and read back as it was). Raises
        InvalidInputError (no model, non-JSON values, bad tokens or TTL),
        ServerUnavailableError, OperationTimeoutError, ServerResponseError."""
        return await self._run(self._core.store(params, response, tokens, ttl))

    async def invalidate_by_model(self, model: str) -> int:
        """Delete every entry of ``model`` (scans every primary); returns the count.
        Raises InvalidInputError, ServerUnavailableError, OperationTimeoutError,
        ServerResponseError."""
        return await self._run(self._core.invalidate_by_model(model))

    async def clear(self) -> int:
        """Delete every LLM entry of this name; returns the count. Raises
        ServerUnavailableError, OperationTimeoutError, ServerResponseError."""
        return await self._run(self._core.clear())

    async def stats(self) -> CacheStats:
        """Flush buffered counters and read ``{name}:__stats``. Raises
        ServerUnavailableError, OperationTimeoutError, ServerResponseError."""
        return await self._run(self._core.tier.stats())

    async def flush_stats(self) -> None:
        """Send buffered hit/miss counters now. Raises ServerUnavailableError,
        OperationTimeoutError."""
        await self._run(self._core.tier.flush_stats())

    def wrap(
        self,
        fn: Callable[..., Any],
        *,
        ttl: float | None = None,
        usage: Callable[[Any], TokenUsage | Mapping[str, Any] | None] | None = None,
    ) -> Callable[..., Awaitable[Any]]:
        """Cache a completion function (sync or async) called with keyword arguments.

        The wrapper returns the cached response on a hit and otherwise calls ``fn``,
        stores its (JSON-serialisable) response with the token usage found by ``usage``
        (default: the ``usage`` mapping of a dict response; ``usage`` runs off the event
        loop and may be async; when it fails or returns ``None``, or a response's own
        ``usage`` is not a valid usage mapping, that is logged and counted in
        ``usage_failures`` and the response is stored without token usage) and returns it. Calls with ``stream=True`` bypass the cache. A response
        that cannot be stored (the server failed meanwhile, or it is not
        JSON-serialisable) is still returned; the failure is logged and counted in
        ``store_failures``. The wrapper raises what :meth:`check` raises,
        InvalidInputError for positional arguments, and whatever ``fn`` raises.

        Raises:
            InvalidInputError: ``fn`` or ``usage`` is not callable, or a bad ``ttl``.
        """
        if not callable(fn):
            raise InvalidInputError(f"fn must be callable, got {type(fn).__name__}", field="fn")
        if usage is not None and not callable(usage):
            raise InvalidInputError(
                f"usage must be callable, got {type(usage).__name__}", field="usage"
            )
        ttl_ms(ttl)  # a bad ttl is refused here, not at the first call
        if not _ASYNC and inspect.iscoroutinefunction(fn):
            raise InvalidInputError(
                f"{type(self).__name__}.wrap needs a sync function; use LlmCache", field="fn"
            )

        @functools.wraps(fn)
        async def wrapper(*args: Any, **params: Any) -> Any:
            _check_args(args)
            return await self._run(self._core.cached_call(fn, params, ttl, usage))

        return wrapper


class ToolCache(AsyncTier):
    """Asyncio tool result cache (standalone or cluster clients). No I/O in the constructor.

    Args:
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client.
        name: the cache name (key prefix).
        ttl: default entry lifetime in seconds (``None``: no expiry).
        policy_refresh: seconds between re-reads of ``{name}:__tool_policies``.
        clock: time source in seconds.

    Raises:
        InvalidInputError: a blocking client, a bad name (one holding ``:session``,
            ``:mem`` or another open prefix followed by ``:`` or at its end: see
            :func:`~agent_memory.core.names.check_name_apart`), TTL, refresh interval
            or clock.
    """

    __slots__ = ("_core",)

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        ttl: float | None = None,
        policy_refresh: float = 30.0,
        clock: Callable[[], float] = time.time,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(client, name, "tool", registry)
        self._core = ToolCore(name, ttl, policy_refresh, clock)
        self._core.tier.cluster = self._cluster

    async def check(self, tool: str, args: Any) -> ToolCacheResult:
        """Look up the result of ``tool(args)`` (args: any JSON value, key order ignored).
        Raises InvalidInputError for an empty tool name or non-JSON args (text that is not
        valid Unicode, an integer beyond a float's range included)."""
        return await self._run(self._core.check(tool, args))

    async def store(self, tool: str, args: Any, result: Any, *, ttl: float | None = None) -> str:
        """Store a JSON-serialisable ``result``; returns the key. TTL: ``ttl``, else the
        tool's policy, else the tier default. Raises InvalidInputError (tool name, args,
        result or TTL)."""
        return await self._run(self._core.store(tool, args, result, ttl))

    async def set_policy(self, tool: str, *, ttl: float) -> None:
        """Persist the TTL policy of ``tool`` in ``{name}:__tool_policies``. Raises
        InvalidInputError (tool name, TTL)."""
        await self._run(self._core.set_policy(tool, ttl))

    async def get_policy(self, tool: str) -> ToolPolicy | None:
        """Read the policy of ``tool`` from the server (``None`` when it has none, or its
        policy or the policies key another writer left unreadable: logged and counted).
        Raises InvalidInputError (tool name)."""
        return await self._run(self._core.get_policy(tool))

    async def delete_policy(self, tool: str) -> bool:
        """Remove the policy of ``tool``; True if it had one. Raises InvalidInputError."""
        return await self._run(self._core.delete_policy(tool))

    async def invalidate(self, tool: str, args: Any) -> bool:
        """Delete the entry of ``tool(args)``; True if it existed. Raises InvalidInputError."""
        return await self._run(self._core.invalidate(tool, args))

    async def invalidate_by_tool(self, tool: str) -> int:
        """Delete every entry of ``tool`` (scans every primary); returns the count. Raises
        InvalidInputError (tool name)."""
        return await self._run(self._core.invalidate_by_tool(tool))

    async def tool_effectiveness(self) -> list[ToolEffectiveness]:
        """Per-tool hit rate and TTL recommendation, most looked-up tools first."""
        return await self._run(self._core.tool_effectiveness())

    async def stats(self) -> CacheStats:
        """Flush buffered counters and read ``{name}:__stats``."""
        return await self._run(self._core.tier.stats())

    async def flush_stats(self) -> None:
        """Send buffered hit/miss counters now."""
        await self._run(self._core.tier.flush_stats())


class SessionStore(AsyncTier):
    """Asyncio per-thread state store (standalone or cluster). No I/O in the constructor.

    Args:
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client.
        name: the cache name (key prefix).
        ttl: sliding lifetime of a thread in seconds, refreshed by every access
            (default one day; ``None``: no expiry).

    A thread whose key another writer gave another type reads as empty (logged and
    counted as ``corrupt_entries``); writes to it raise ``WrongTypeError``. No read,
    write, touch or :meth:`destroy_thread` changes such a key (its TTL included): it is
    another writer's, for that writer (or an operator) to delete.

    Raises:
        InvalidInputError: a blocking client, a bad name (one holding ``:session``,
            ``:mem`` or another open prefix followed by ``:`` or at its end, or ending
            with ``:tool``: see :func:`~agent_memory.core.names.check_name_apart`) or
            TTL.
    """

    __slots__ = ("_core",)

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        ttl: float | None = DEFAULT_SESSION_TTL,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(client, name, "session", registry)
        self._core = SessionCore(name, ttl)

    async def get(self, thread_id: str, key: str) -> Any:
        """The value of ``key`` in the thread (``None`` when absent); refreshes the TTL."""
        return await self._run(self._core.get(thread_id, key))

    async def set(self, thread_id: str, key: str, value: Any) -> None:
        """Set ``key`` to a JSON-serialisable ``value``; refreshes the TTL. Raises
        InvalidInputError for a non-JSON value (an integer beyond a float's range
        included; text with a lone surrogate is stored as a JSON escape)."""
        await self._run(self._core.set(thread_id, key, value))

    async def get_all(self, thread_id: str) -> dict[str, Any]:
        """Every key of the thread in one round trip (``{}`` when absent); refreshes the TTL."""
        return await self._run(self._core.get_all(thread_id))

    async def delete(self, thread_id: str, key: str) -> bool:
        """Remove ``key``; True if it existed. Refreshes the TTL."""
        return await self._run(self._core.delete(thread_id, key))

    async def destroy_thread(self, thread_id: str) -> int:
        """Delete the whole thread in one round trip, atomically; returns how many keys it
        had (0 for a key another writer gave another type, which is deleted too, so the
        thread takes new writes: logged and counted as ``corrupt_entries``)."""
        return await self._run(self._core.destroy_thread(thread_id))

    async def touch(self, thread_id: str) -> bool:
        """Refresh the thread's TTL; True if the thread exists (a key another writer gave
        another type is no thread: False, logged and counted, its TTL left as it is)."""
        return await self._run(self._core.touch(thread_id))

    async def stats(self) -> CacheStats:
        """Flush buffered counters and read ``{name}:__stats``."""
        return await self._run(self._core.tier.stats())

    async def flush_stats(self) -> None:
        """Send buffered counters now."""
        await self._run(self._core.tier.flush_stats())


class EmbeddingCache(AsyncTier):
    """Asyncio embedding cache (standalone or cluster). No I/O in the constructor.

    Args:
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client.
        name: the cache name (key prefix).
        ttl: entry lifetime in seconds (default 7 days; ``None``: never expires).

    Raises:
        InvalidInputError: a blocking client, a bad name (one another tier's keys
            could share: see :func:`~agent_memory.cache.keys.check_name_for_tier`) or
            TTL.
    """

    __slots__ = ("_core",)

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        ttl: float | None = DEFAULT_EMBEDDING_TTL,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(client, name, "embedding", registry)
        self._core = EmbeddingCore(name, ttl)

    async def get_many(self, embedder_id: str, texts: Sequence[str]) -> list[Vector | None]:
        """The cached vector of each text (``None`` for a miss), in one round trip."""
        return await self._run(self._core.get_many(embedder_id, texts))

    async def put_many(
        self,
        embedder_id: str,
        texts: Sequence[str],
        vectors: Sequence[Any],
        *,
        ttl: float | None = None,
    ) -> None:
        """Cache one vector per text (stored as float32), in one round trip. ``vectors``:
        a sequence (or any iterable) of vectors, or a two-dimensional array. Raises
        InvalidInputError (texts, vectors, TTL), before anything is written."""
        await self._run(self._core.put_many(embedder_id, texts, vectors, ttl))

    async def embed_many(
        self, embedder_id: str, texts: Sequence[str], embed: Callable[..., Any]
    ) -> list[Vector]:
        """Vectors of ``texts``, calling ``embed(list_of_texts)`` (sync or async) once with
        only the distinct texts that were not cached (it may return a list of vectors or
        a two-dimensional array); caches what it returns (a write that fails is logged
        and counted in ``store_failures``, the vectors returned all the same). Raises
        InvalidInputError (texts, or what ``embed`` returned) before anything is
        written."""
        return await self._run(self._core.embed_many(embedder_id, texts, embed, True))

    def wrap(
        self, embed: Callable[..., Any], *, embedder_id: str, batched: bool = False
    ) -> Callable[..., Awaitable[Any]]:
        """Wrap ``embed`` (sync or async) so only cache misses reach it. ``batched=False``:
        ``embed(text) -> vector`` and the wrapper takes one text; ``batched=True``:
        ``embed(texts) -> vectors`` and the wrapper takes a list. A failed cache write
        is logged and counted (``store_failures``); the vectors are returned. Raises
        InvalidInputError for an empty ``embedder_id`` or an ``embed`` that is not
        callable."""
        check_text(embedder_id, field="embedder_id")
        if not callable(embed):
            raise InvalidInputError(
                f"embed must be callable, got {type(embed).__name__}", field="embed"
            )
        if not _ASYNC and inspect.iscoroutinefunction(embed):
            raise InvalidInputError(
                f"{type(self).__name__}.wrap needs a sync function; use EmbeddingCache",
                field="embed",
            )

        @functools.wraps(embed)
        async def wrapper(texts: Any) -> Any:
            if batched:
                return await self._run(self._core.embed_many(embedder_id, texts, embed, True))
            (vector,) = await self._run(self._core.embed_many(embedder_id, [texts], embed, False))
            return vector

        return wrapper

    async def clear(self) -> int:
        """Delete every embedding of this name (scans every primary); returns the count."""
        return await self._run(self._core.clear())

    async def stats(self) -> CacheStats:
        """Flush buffered counters and read ``{name}:__stats``."""
        return await self._run(self._core.tier.stats())

    async def flush_stats(self) -> None:
        """Send buffered counters now."""
        await self._run(self._core.tier.flush_stats())
