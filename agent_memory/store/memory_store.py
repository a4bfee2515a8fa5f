"""The asyncio long-term memory store.

``sync_store.py`` is generated from this file by ``scripts/unasync.py`` (the test suite
fails when the two drift): edit this file, then run ``python scripts/unasync.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.backends.inprocess import is_in_process
from agent_memory.core.clients import (
    AsyncExecutor,
    client_from_url,
    close_async_client,
    is_async_client,
)
from agent_memory.core.effects import Operation, T
from agent_memory.core.runner import run_async
from agent_memory.errors import InvalidInputError, StoreClosedError
from agent_memory.store.config import refresh_config
from agent_memory.store.context import Clock, LiveConfig, StoreContext, system_clock
from agent_memory.store.filters import scope_filter
from agent_memory.store.layout import Keys
from agent_memory.store.ops.ensure import IndexStatus, ensure_index
from agent_memory.store.ops.forget import forget, forget_matching
from agent_memory.store.ops.read import MemoryStats, get, list_items, stats
from agent_memory.store.ops.recall import make_request, recall_by_vector, recall_text
from agent_memory.store.ops.write import MemoryInput, remember_many, update
from agent_memory.store.types import (
    Durability,
    ListResult,
    MemoryItem,
    RecallResult,
    RecallWeights,
    Scope,
)
from agent_memory.store.validation import (
    check_k,
    check_name,
    check_tags,
    check_text,
    check_threshold,
)
from agent_memory.telemetry import Telemetry
from agent_memory.telemetry.core import AttributeValue, describe_result

_ASYNC = True
DEFAULT_MAX_CONTENT_BYTES = 32 * 1024
DEFAULT_THRESHOLD = 0.33
_BACKENDS = ("auto", "ft", "portable")


def _validated_config(
    threshold: Any, weights: RecallWeights | None, half_life: float, cap: int | None
) -> LiveConfig:
    if isinstance(half_life, bool) or not isinstance(half_life, (int, float)) or not half_life > 0:
        raise InvalidInputError("half_life_seconds must be > 0", field="half_life_seconds")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise InvalidInputError(
            "max_items_per_scope must be an int >= 1 or None", field="max_items_per_scope"
        )
    if weights is not None and not isinstance(weights, RecallWeights):
        raise InvalidInputError("weights must be a RecallWeights", field="weights")
    return LiveConfig(
        threshold=check_threshold(threshold),
        weights=weights or RecallWeights(),
        half_life_seconds=float(half_life),
        max_items_per_scope=cap,
    )


class MemoryStore:
    """Long-term semantic memory on Valkey (asyncio).

    Args:
        client: a ``valkey.asyncio.Valkey`` or ``redis.asyncio.Redis`` client (RESP2 or
            RESP3, ``decode_responses`` on or off). The store never closes a client it
            did not create.
        name: store name; keys are ``{name}:mem:{id}``, the index ``{name}:mem:idx``.
        embed: ``text -> vector`` function, sync or async. An ``int`` attribute ``dim``
            on it saves a probe call at ``ensure_index``.
        embed_many: optional batch embedder ``list[text] -> list[vector]``.
        default_threshold: maximum cosine distance (0..2) of a recalled memory. ``None``
            uses the embedder's ``recommended_threshold`` attribute when it has one (the
            built-in embedders do), else 0.33 (the BetterDB default).
        weights: weights of the composite score (default 0.6 / 0.25 / 0.15).
        half_life_seconds: recency half-life (default 7 days).
        max_items_per_scope: cap of memories per exact scope; lowest importance +
            recency are evicted after a write that exceeds it.
        config_refresh: seconds between re-reads of ``{name}:__mem_config``; ``None``
            disables live config.
        clock: ``() -> seconds since the epoch``; injected for tests.
        backend: ``"auto"`` (FT search when the server has a module, else portable),
            ``"ft"`` or ``"portable"``. With an in-process client
            (:mod:`agent_memory.backends.inprocess`) the backend is ``"inprocess"``.
        max_content_bytes: largest accepted memory text, in UTF-8 bytes.
        registry: a ``prometheus_client.CollectorRegistry`` to record ``agent_memory_*``
            metrics on (labelled by ``name``); ``None`` records none. Spans always go to
            the global OpenTelemetry tracer provider.

    Raises:
        InvalidInputError: a bad argument (wrong client kind, bad name, ...).
    """

    def __init__(
        self,
        client: Any,
        name: str,
        embed: Callable[[str], Any],
        *,
        embed_many: Callable[[list[str]], Any] | None = None,
        default_threshold: float | None = None,
        weights: RecallWeights | None = None,
        half_life_seconds: float = 604800.0,
        max_items_per_scope: int | None = None,
        config_refresh: float | None = None,
        clock: Clock | None = None,
        backend: str = "auto",
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        registry: CollectorRegistry | None = None,
    ) -> None:
        if is_async_client(client) != _ASYNC:
            wanted = "an async" if _ASYNC else "a sync"
            raise InvalidInputError(
                f"{type(self).__name__} needs {wanted} client, got {type(client).__name__}",
                field="client",
            )
        if not callable(embed):
            raise InvalidInputError("embed must be callable", field="embed")
        if embed_many is not None and not callable(embed_many):
            raise InvalidInputError("embed_many must be callable or None", field="embed_many")
        if backend not in _BACKENDS:
            raise InvalidInputError(f"backend must be one of {_BACKENDS}", field="backend")
        if config_refresh is not None and not (
            isinstance(config_refresh, (int, float)) and config_refresh > 0
        ):
            raise InvalidInputError(
                "config_refresh must be > 0 seconds or None", field="config_refresh"
            )
        if (
            isinstance(max_content_bytes, bool)
            or not isinstance(max_content_bytes, int)
            or max_content_bytes < 1
        ):
            raise InvalidInputError(
                "max_content_bytes must be a positive int", field="max_content_bytes"
            )
        if default_threshold is None:
            default_threshold = getattr(embed, "recommended_threshold", DEFAULT_THRESHOLD)
        config = _validated_config(
            default_threshold, weights, half_life_seconds, max_items_per_scope
        )
        self._client = client
        self._executor = AsyncExecutor(client)
        self._owns_client = False
        self._closed = False
        self._config_refresh = config_refresh
        self._next_refresh = 0.0
        self._telemetry = Telemetry(check_name(name), kind="memory", registry=registry)
        self._ctx = StoreContext(
            keys=Keys(check_name(name)),
            embed=embed,
            embed_many=embed_many,
            clock=clock or system_clock,
            config=config,
            initial_config=config,
            backend_choice=backend,
            max_content_bytes=max_content_bytes,
            in_process=is_in_process(client),
            telemetry=self._telemetry,
        )

    @classmethod
    def from_url(
        cls, url: str, *, name: str, embed: Callable[[str], Any], **kwargs: Any
    ) -> MemoryStore:
        """Create a store with its own client for ``url`` (closed by :meth:`close`).

        ``client_*`` keyword arguments go to the client (``client_protocol=3`` becomes
        ``protocol=3``); the others to the constructor.

        Raises:
            InvalidInputError: unsupported URL scheme or bad argument.
        """
        client_options = {
            k[len("client_") :]: v for k, v in kwargs.items() if k.startswith("client_")
        }
        store_options = {k: v for k, v in kwargs.items() if not k.startswith("client_")}
        client = client_from_url(url, asyncio=_ASYNC, **client_options)
        store = cls(client, name, embed, **store_options)
        store._owns_client = True
        return store

    @property
    def name(self) -> str:
        """The store name (key prefix)."""
        return self._ctx.keys.name

    @property
    def client(self) -> Any:
        """The underlying client."""
        return self._client

    async def _run(self, op: Operation[T], operation: str, **attributes: AttributeValue) -> T:
        if self._closed:
            op.close()
            raise StoreClosedError(f"store {self.name!r} is closed")
        telemetry = self._telemetry
        with telemetry.operation(operation, attributes=attributes) as scope:
            if self._config_refresh is not None and time.monotonic() >= self._next_refresh:
                self._next_refresh = time.monotonic() + self._config_refresh
                await run_async(refresh_config(self._ctx), self._executor)
            result = await run_async(op, self._executor, telemetry.child_span)
            describe_result(scope, result)
            return result

    async def ensure_index(self) -> IndexStatus:
        """Create the index (or check the existing one) and pick the backend. Idempotent.

        Returns:
            which backend serves the store and the detected server dialect.

        Raises:
            IndexMismatchError: the index or stored identity has another dimension or
                metric than the embedder.
            CapabilityError: ``backend="ft"`` on a server without a search module, or
                the embedder fails on a probe text.
            ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
        """
        return await self._run(ensure_index(self._ctx), "ensure_index")

    async def remember(
        self,
        content: str,
        *,
        importance: float = 0.5,
        tags: Sequence[str] = (),
        ttl: float | None = None,
        scope: Scope | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        durability: Durability = "shared",
        subject: str | None = None,
        date: str | None = None,
    ) -> str:
        """Store one memory and return its id.

        Args:
            content: the text (non-empty, at most ``max_content_bytes`` UTF-8 bytes).
            importance: 0..1, used in ranking and eviction.
            tags: free strings; a recall with ``tags`` needs all of them.
            ttl: seconds until the memory expires; set atomically with the write.
            scope: namespace / agent / thread / session of the memory.
            source, subject, date: provenance fields (BetterDB layout).
            metadata: JSON-serialisable mapping kept with the memory.
            durability: ``"shared"`` (default) or ``"session"`` (visible only to recalls
                with the same ``scope.session_id``).

        Raises:
            InvalidInputError: a bad argument, or the embedder returned a bad vector;
                nothing was written.
            ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
        """
        item = MemoryInput(
            content=content, importance=importance, tags=tags, ttl=ttl, scope=scope,
            source=source, subject=subject, date=date, metadata=metadata, durability=durability,
        )  # fmt: skip
        ids = await self._run(remember_many(self._ctx, [item]), "remember")
        return ids[0]

    async def remember_many(self, items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[str]:
        """Store many memories: one embedding batch, one pipelined round trip per chunk.

        Each item is a :class:`MemoryInput` or a mapping of ``remember`` arguments.
        Every item is validated before anything is written.

        Raises:
            InvalidInputError: any item is invalid; nothing was written.
        """
        return await self._run(remember_many(self._ctx, _inputs(items)), "remember_many")

    async def recall(
        self,
        query: str,
        *,
        scope: Scope | None = None,
        k: int = 8,
        tags: Sequence[str] | None = None,
        threshold: float | None = None,
        weights: RecallWeights | None = None,
        reinforce: bool = True,
    ) -> RecallResult:
        """The ``k`` most relevant memories for ``query``, best first.

        Only memories within ``threshold`` cosine distance are returned; they are ordered
        by the composite score. With ``scope.session_id`` the shared pool and that
        session are searched separately and merged. ``reinforce`` bumps the returned
        memories' ``last_accessed_at`` and ``access_count`` in one round trip.

        Raises:
            InvalidInputError: a bad argument or a bad query vector from the embedder.
            ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
        """
        check_text(query, field="query", max_bytes=self._ctx.max_content_bytes)
        request = make_request(
            self._ctx, scope=scope, k=k, tags=tags, threshold=threshold, weights=weights,
            reinforce=reinforce,
        )  # fmt: skip
        return await self._run(recall_text(self._ctx, request, query), "recall", k=k)

    async def recall_by_vector(
        self,
        vector: Sequence[float],
        *,
        scope: Scope | None = None,
        k: int = 8,
        tags: Sequence[str] | None = None,
        threshold: float | None = None,
        weights: RecallWeights | None = None,
        reinforce: bool = True,
    ) -> RecallResult:
        """Like :meth:`recall` with a precomputed query vector (scaled to unit length).

        Raises:
            InvalidInputError: wrong dimension, NaN/inf or zero vector, bad argument.
        """
        request = make_request(
            self._ctx, scope=scope, k=k, tags=tags, threshold=threshold, weights=weights,
            reinforce=reinforce,
        )  # fmt: skip
        return await self._run(
            recall_by_vector(self._ctx, request, vector), "recall_by_vector", k=k
        )

    async def get(self, id: str) -> MemoryItem | None:
        """The memory with this id, or ``None`` if there is none (or it expired).

        Raises:
            InvalidInputError: ``id`` is not a well-formed memory id.
        """
        return await self._run(get(self._ctx, id), "get")

    async def list(
        self,
        scope: Scope | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> ListResult:
        """A page of memories of a scope, newest first, with the total that match.

        Without ``scope.session_id`` only shared memories are listed; with it, that
        session's memories.

        Raises:
            InvalidInputError: bad scope, tags, limit or offset.
        """
        check_k(limit, field="limit", maximum=10_000)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError("offset must be an int >= 0", field="offset")
        flt = scope_filter(scope, check_tags(tags), session=(scope or Scope()).session_id)
        return await self._run(list_items(self._ctx, flt, limit=limit, offset=offset), "list")

    async def update(
        self,
        id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        ttl: float | None = None,
    ) -> MemoryItem:
        """Change a memory; re-embeds when the content changes. ``None`` leaves a field
        unchanged (``ttl`` sets a new expiry from now).

        Raises:
            NotFoundError: no memory with that id.
            InvalidInputError: a bad value; nothing was changed.
        """
        return await self._run(
            update(self._ctx, id, content=content, importance=importance, tags=tags, ttl=ttl),
            "update",
        )

    async def forget(self, id: str) -> bool:
        """Delete a memory. Returns ``False`` when it did not exist.

        Raises:
            InvalidInputError: ``id`` is not a well-formed memory id.
        """
        return await self._run(forget(self._ctx, id), "forget")

    async def forget_by_scope(self, scope: Scope, tags: Sequence[str] | None = None) -> int:
        """Delete every memory of a scope (all its sessions unless ``scope.session_id``
        is set), optionally only those carrying all ``tags``. Returns how many.

        Raises:
            InvalidInputError: bad scope or tags.
        """
        if not isinstance(scope, Scope):
            raise InvalidInputError("scope must be a Scope", field="scope")
        flt = scope_filter(scope, check_tags(tags), session=scope.session_id or False)
        return await self._run(forget_matching(self._ctx, flt), "forget_by_scope")

    async def stats(self) -> MemoryStats:
        """Item count and counters (``{name}:__mem_stats``)."""
        return await self._run(stats(self._ctx), "stats")

    def current_config(self) -> LiveConfig:
        """The configuration in force (a copy)."""
        c = self._ctx.config
        return LiveConfig(c.threshold, c.weights, c.half_life_seconds, c.max_items_per_scope)

    async def refresh_config(self) -> LiveConfig:
        """Re-read ``{name}:__mem_config`` now; invalid values are logged and ignored."""
        return await self._run(refresh_config(self._ctx), "refresh_config")

    async def close(self) -> None:
        """Release the store (idempotent); closes the client only if the store created it."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            await close_async_client(self._client)

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        backend = self._ctx.backend.name if self._ctx.backend else "not ensured"
        return f"{type(self).__name__}(name={self.name!r}, backend={backend!r})"


def _inputs(items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[MemoryInput]:
    out = []
    for item in items:
        if isinstance(item, MemoryInput):
            out.append(item)
        elif isinstance(item, Mapping):
            try:
                out.append(MemoryInput(**item))
            except TypeError as exc:
                raise InvalidInputError(f"bad memory item: {exc}", field="items") from exc
        else:
            raise InvalidInputError("each item must be a MemoryInput or a mapping", field="items")
    return out


__all__ = ["MemoryStore"]
