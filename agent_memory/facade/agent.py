"""``AgentMemory``: long-term memory and the cache tiers over one client and one name.

``sync_agent.py`` is generated from this file by ``scripts/unasync.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.cache import CacheStats, EmbeddingCache, LlmCache, SessionStore, ToolCache
from agent_memory.cache._tier import close_tier
from agent_memory.cache.session import DEFAULT_SESSION_TTL
from agent_memory.core.checks import check_ttl_seconds
from agent_memory.core.client_factory import (
    client_from_url,
    close_async_client,
    release_unused_client,
)
from agent_memory.core.clients import AsyncExecutor
from agent_memory.core.effects import Operation
from agent_memory.core.runner import run_async
from agent_memory.embedded.server import EmbeddedServer, open_embedded
from agent_memory.errors import AgentMemoryError, InvalidInputError, StoreClosedError
from agent_memory.facade import discovery as protocol
from agent_memory.facade.heartbeat import AsyncHeartbeat
from agent_memory.facade.opening import Opening
from agent_memory.facade.options import cache_options, check_flag, check_interval, tier_options
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.ops.ensure import IndexStatus
from agent_memory.store.ops.read import MemoryStats
from agent_memory.store.validation import check_name
from agent_memory.telemetry import Telemetry

logger = logging.getLogger(__name__)

_ASYNC = True


@dataclass(frozen=True, slots=True)
class AgentStats:
    """Counters of every tier: the memory store's and the caches' (``{name}:__stats``)."""

    memory: MemoryStats
    cache: CacheStats


class AgentMemory:
    """Long-term memory (``.memory``) plus LLM, tool and session caches (``.llm``,
    ``.tool``, ``.session``) sharing one asyncio client and one name, announced to the
    BetterDB Monitor dashboard.

    Args:
        client: a ``valkey.asyncio.Valkey`` or ``redis.asyncio.Redis`` client.
        name: the name shared by every tier (key prefix).
        embed: the embedder of the memory store (sync or async ``text -> vector``).
        memory: keyword arguments for :class:`MemoryStore` (``max_items_per_scope``...).
        cache: per-tier keyword arguments, e.g. ``{"llm": {"ttl": 3600}, "tool": {...},
            "session": {...}}``.
        registry: Prometheus registry for every tier's metrics (``None``: no metrics).
        discovery: write the Monitor discovery markers and heartbeats.
        embedding_cache: cache embeddings in ``.embeddings`` (keyed by the embedder's
            ``id`` and the text, for ``embedding_cache_ttl`` seconds) so re-remembering or
            re-querying a text costs no embedding call; calls saved are counted in
            ``{name}:__stats`` (``embedding:hits``). The embedder must have an ``id``
            (a str naming the model and its settings; the built-in embedders have one).
        embedding_cache_ttl: seconds a cached embedding lives, in (0, 10 years], or
            ``None`` for no expiry; checked even when ``embedding_cache`` is off.
        heartbeat_interval: seconds between heartbeats, at most 30: a heartbeat expires
            60 s after it is written, so a longer interval (or a late beat) would show
            the instance as gone between beats.

    Raises:
        InvalidInputError: a bad argument (``embedding_cache=True`` for an embedder
            without an ``id`` included).
    """

    def __init__(
        self,
        client: Any,
        name: str,
        embed: Callable[[str], Any],
        *,
        memory: Mapping[str, Any] | None = None,
        cache: Mapping[str, Mapping[str, Any]] | None = None,
        registry: CollectorRegistry | None = None,
        discovery: bool = True,
        heartbeat_interval: float = protocol.HEARTBEAT_INTERVAL_SECONDS,
        embedding_cache: bool = False,
        embedding_cache_ttl: float | None = 7 * 86400.0,
    ) -> None:
        per_tier = cache_options(cache)
        heartbeat_interval = check_interval(
            heartbeat_interval, "heartbeat_interval", maximum=protocol.MAX_HEARTBEAT_INTERVAL
        )
        discovery = check_flag(discovery, "discovery")
        # Checked even with the cache off, so a bad value never passes silently.
        embedding_ttl = check_ttl_seconds(embedding_cache_ttl, field="embedding_cache_ttl")
        memory_options = tier_options(memory, "memory", MemoryStore.__init__)
        tiers = {
            tier: tier_options(per_tier.get(tier), f"cache[{tier!r}]", cls.__init__)
            for tier, cls in (("llm", LlmCache), ("tool", ToolCache), ("session", SessionStore))
        }
        self.embeddings: EmbeddingCache | None = None
        if check_flag(embedding_cache, "embedding_cache"):
            embedder_id = _embedder_id(embed)
            self.embeddings = EmbeddingCache(client, name, ttl=embedding_ttl, registry=registry)
            embed, memory_options = _cached_embedder(
                self.embeddings, embed, embedder_id, memory_options
            )
        self.memory = MemoryStore(client, name, embed, registry=registry, **memory_options)
        self.llm = LlmCache(client, name, registry=registry, **tiers["llm"])
        self.tool = ToolCache(client, name, registry=registry, **tiers["tool"])
        self.session = SessionStore(client, name, registry=registry, **tiers["session"])
        self._name = name
        self._cache_options = tiers
        self._client = client
        self._executor = AsyncExecutor(client)
        self._telemetry = Telemetry(name, kind="memory", registry=registry)
        self._discovery = discovery
        self._started_at = protocol.now_iso()
        self._tool_policies: list[str] = []
        self._stamp: str | None = None  # of the heartbeats this object wrote last
        self._heartbeat = AsyncHeartbeat(self._beat, heartbeat_interval, self._beat_failed)
        self._initialized = False
        self._closed = False
        self._owns_client = False
        self._server: EmbeddedServer | None = None
        self._status: IndexStatus | None = None

    @classmethod
    def from_url(
        cls, url: str, *, name: str, embed: Callable[[str], Any], **kwargs: Any
    ) -> AgentMemory:
        """Create with its own client for ``url`` (closed by :meth:`close`, or at once
        when the constructor refuses its arguments).

        ``client_*`` keyword arguments go to the client, the rest to the constructor.

        Raises:
            InvalidInputError: unsupported URL scheme or bad argument.
        """
        client_options = {k[7:]: v for k, v in kwargs.items() if k.startswith("client_")}
        options = {k: v for k, v in kwargs.items() if not k.startswith("client_")}
        client = client_from_url(url, asyncio=_ASYNC, **client_options)
        try:
            agent = cls(client, name, embed, **options)
        except BaseException:
            release_unused_client(client)
            raise
        agent._owns_client = True
        return agent

    @classmethod
    def embedded(
        cls,
        path: str = "./agent-memory-data",
        *,
        name: str,
        embed: Callable[[str], Any],
        **kwargs: Any,
    ) -> Opening[AgentMemory]:
        """Start (or reuse) a private server persisting to ``path`` and connect to it.

        The server is the ``valkey-server``/``redis-server`` on PATH or the one of the
        ``embedded`` extra, with the search module when available (otherwise the
        portable backend serves recall). It is stopped by :meth:`close` or at exit if
        this process started it; a second process opening ``path`` reuses it.

        The async facade returns an opening that starts nothing before it is
        awaited: as an async context manager it also initializes and closes, and
        awaiting it only opens. The server's start blocks for up to seconds, so the
        opening runs it in the loop's default thread pool, off the event loop. The
        blocking facade opens at once and returns the opened object.

        Raises:
            InvalidInputError: a bad argument (``name`` at once; a ``path`` that is not
                a usable folder, or a refused option, when opening: a server started
                for it is stopped again).
            CapabilityError: no server binary available.
            ServerUnavailableError: the server failed to start.
        """
        check_name(name)
        return Opening(partial(cls._open_embedded, path, name=name, embed=embed, **kwargs))

    @classmethod
    def _open_embedded(
        cls, path: str, *, name: str, embed: Callable[[str], Any], **kwargs: Any
    ) -> AgentMemory:
        server = open_embedded(path)
        try:
            agent = cls.from_url(server.url, name=name, embed=embed, **kwargs)
        except BaseException:
            server.stop()
            raise
        agent._server = server
        return agent

    @property
    def name(self) -> str:
        """The shared name."""
        return self._name

    def _markers(self) -> dict[str, tuple[str, dict[str, Any]]]:
        config = self.memory.current_config()
        backend = self._status.backend if self._status else None
        markers = {
            f"{self._name}:mem": (
                protocol.MEMORY_TYPE,
                protocol.memory_marker(
                    self._name, started_at=self._started_at, backend=backend,
                    threshold=config.threshold,
                ),
            ),
        }  # fmt: skip
        tiers = {  # each tier's TTL in force: the caller's, else the tier's default
            tier: self._cache_options.get(tier, {}).get("ttl", default)
            for tier, default in (("llm", None), ("tool", None), ("session", DEFAULT_SESSION_TTL))
        }
        markers[self._name] = (
            protocol.CACHE_TYPE,
            protocol.cache_marker(
                self._name, started_at=self._started_at, tiers=tiers,
                tool_policies=self._tool_policies, has_cost_table=True,
                uses_default_cost_table="prices" not in self._cache_options.get("llm", {}),
            ),
        )  # fmt: skip
        return markers

    async def initialize(self) -> IndexStatus:
        """Create or check the memory index and announce every tier to Monitor.

        Idempotent. Starts the heartbeat (a background task) when ``discovery`` is on.

        Raises:
            IndexMismatchError: the index holds vectors of another width.
            InvalidInputError: the discovery field is taken by another kind of instance.
            ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
        """
        self._status = await self.memory.ensure_index()
        if self._discovery and not self._initialized:
            self._tool_policies = await self._tool_policy_names()
            self._stamp = await run_async(
                protocol.register(self._markers(), unreadable=self._unreadable), self._executor
            )
            # Set before the heartbeat starts: a close() from here on withdraws what
            # register wrote.
            self._initialized = True
            # start() refuses once close() stopped the heartbeat: closed while
            # registering, or (blocking twin) by another thread since that check.
            if self._closed or not self._heartbeat.start():
                await self._withdraw()
                raise StoreClosedError(f"agent {self._name!r} was closed during initialize")
        self._initialized = True
        return self._status

    async def _beat(self) -> None:
        self._tool_policies = await self._tool_policy_names()
        self._stamp = await run_async(protocol.heartbeat(self._markers()), self._executor)
        await self.memory.stats()  # refreshes the items gauge from the server

    async def _tool_policy_names(self) -> list[str]:
        """The tools with a policy, for the marker; unreadable: the list it had."""
        op = protocol.tool_policy_names(
            self._name, unreadable=self._unreadable, previous=self._tool_policies
        )
        return await run_async(op, self._executor)

    def _unreadable(self, what: str, why: str) -> None:
        """Another writer's damage in the shared discovery keys: logged and counted
        (``discovery_unreadable``), the value skipped or replaced."""
        logger.warning("discovery of %s: %s is unreadable (%s); ignored", self._name, what, why)
        self._telemetry.count("discovery_unreadable")

    def _beat_failed(self, exc: Exception) -> None:
        logger.warning("discovery heartbeat of %s failed: %s", self._name, exc)
        self._telemetry.count("heartbeat_failures")

    async def stats(self) -> AgentStats:
        """Counters of the memory store and of the cache tiers (every tier's buffered
        counters are sent first, so none lags behind)."""
        memory = await self.memory.stats()
        for tier in (self.tool, self.session, self.embeddings):
            if tier is not None:
                await tier.flush_stats()
        cache = await self.llm.stats()
        return AgentStats(memory=memory, cache=cache)

    async def close(self) -> None:
        """Stop the heartbeat, delete it, release the memory store and the cache tiers
        (idempotent): every later operation of ``.memory``, ``.llm``, ``.tool``,
        ``.session`` or ``.embeddings`` raises StoreClosedError.

        Closes the client only if this object created it, and stops the embedded server
        only if this process started it (the async facade waits for that in a worker
        thread, off the event loop). A beat in flight is waited for first (as long as
        its commands take, bounded by the client's timeouts), so no late beat announces
        the closed agent again. A failure to delete the heartbeat is logged: it expires
        by itself within 60 s.
        """
        if self._closed:
            return
        self._closed = True
        # Whatever interrupts the first steps (a cancellation, a failure), the finally
        # clauses release the store, the client and the server: a second close() is a
        # no-op, so this one must not leave them open.
        try:
            await self._heartbeat.stop()
            if self._initialized and self._discovery:
                await run_async(self._unregister(), self._executor)
        except AgentMemoryError as exc:
            self._beat_failed(exc)
        finally:
            await self._release()

    async def _release(self) -> None:
        """Send the buffered counters, then release the tiers, the store, the client and
        the server, each whatever the step before it raised (a cancellation included).
        A released tier raises StoreClosedError: used after close() it would reopen the
        client this object closed (when it owns it), which nothing would release."""
        try:
            await self._flush_counters()
        finally:
            try:
                for tier in (self.llm, self.tool, self.session, self.embeddings):
                    if tier is not None:
                        close_tier(tier, repr(self))
                await self.memory.close()
                if self._owns_client:
                    await close_async_client(self._client)
            finally:
                if self._server is not None:
                    await self._server.stop_async()

    def _unregister(self) -> Operation[None]:
        """Withdraw the heartbeats this object wrote (not another's of the same name)."""
        return protocol.unregister([f"{self._name}:mem", self._name], self._stamp)

    async def _withdraw(self) -> None:
        """Undo a registration that a close() overtook: delete the markers it wrote and
        close again the connection it reopened on a client this object owns."""
        try:
            await run_async(self._unregister(), self._executor)
        except AgentMemoryError as exc:
            self._beat_failed(exc)
        finally:
            if self._owns_client:
                await close_async_client(self._client)

    async def _flush_counters(self) -> None:
        """Send the tiers' buffered counters before the client goes (best-effort)."""
        for tier in (self.llm, self.tool, self.session, self.embeddings):
            if tier is None:
                continue
            try:
                await tier.flush_stats()
            except AgentMemoryError as exc:
                logger.warning("%s: sending buffered counters at close failed: %s", self._name, exc)
                self._telemetry.count("stats_flush_failures")

    async def __aenter__(self) -> AgentMemory:
        try:
            await self.initialize()
        except BaseException:
            await self.close()  # no ``__aexit__`` follows a failed ``__aenter__``
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r})"


class _CachedEmbedder:
    """The store's embedder routed through the embedding cache, with the embedder's
    ``id``, ``dim`` and ``recommended_threshold``. ``dim`` is read from the embedder
    only when the store asks (off the event loop, under the async store): an HTTP
    embedder without a declared width answers it with a probe request."""

    def __init__(self, embed: Callable[[str], Any], cached: Callable[..., Any], id: str) -> None:
        self._embed = embed
        self._cached = cached
        self.id = id
        threshold = getattr(embed, "recommended_threshold", None)
        if threshold is not None:
            self.recommended_threshold = threshold

    async def __call__(self, text: Any) -> Any:
        return await self._cached(text)

    @property
    def dim(self) -> Any:
        """The wrapped embedder's ``dim`` (``None`` when it has none)."""
        return getattr(self._embed, "dim", None)


def _embedder_id(embed: Callable[[str], Any]) -> str:
    """The ``id`` that keys the embedder's vectors in the embedding cache.

    Raises:
        InvalidInputError: the embedder has no ``id`` (a non-empty str). A name guessed
            from its type or function would be shared by different embedders (every
            ``functools.partial``, every function called ``embed``), which would then
            be handed each other's vectors.
    """
    embedder_id = getattr(embed, "id", None)
    if not isinstance(embedder_id, str) or not embedder_id:
        raise InvalidInputError(
            f"embedding_cache=True needs an embedder with an 'id': a str naming the model "
            f"and every setting that changes its vectors (the built-in embedders have "
            f"one), which keys the cached vectors; the embedder given ({type(embed).__name__}) "
            f"{'has none' if embedder_id is None else f'has id {embedder_id!r:.40}'}. "
            "Set one (for a function: embed.id = 'my-model-v1') or leave the cache off",
            field="embedding_cache",
        )
    return embedder_id


def _cached_embedder(
    cache: EmbeddingCache,
    embed: Callable[[str], Any],
    embedder_id: str,
    options: dict[str, Any],
) -> tuple[Callable[[str], Any], dict[str, Any]]:
    """Route the store's embedder (and its batch twin) through the embedding cache."""
    cached = _CachedEmbedder(embed, cache.wrap(embed, embedder_id=embedder_id), embedder_id)
    many = options.get("embed_many") or getattr(embed, "embed_many", None)
    if callable(many):
        options = {**options, "embed_many": cache.wrap(many, embedder_id=embedder_id, batched=True)}
    return cached, options
