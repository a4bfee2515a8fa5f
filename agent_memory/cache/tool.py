"""Tool result cache facades (asyncio and blocking) over :mod:`agent_memory.cache.tool_core`.

Every method raises :class:`~agent_memory.errors.ServerUnavailableError`,
:class:`~agent_memory.errors.OperationTimeoutError` or
:class:`~agent_memory.errors.ServerResponseError` when the server fails; the errors
listed per method come on top.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import AsyncTier, SyncTier
from agent_memory.cache.stats import CacheStats
from agent_memory.cache.tool_core import ToolCacheResult, ToolCore, ToolEffectiveness, ToolPolicy


class ToolCache(AsyncTier):
    """Asyncio tool result cache (standalone or cluster clients). No I/O in the constructor.

    Args:
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client.
        name: the cache name (key prefix).
        ttl: default entry lifetime in seconds (``None``: no expiry).
        policy_refresh: seconds between re-reads of ``{name}:__tool_policies``.
        clock: time source in seconds.

    Raises:
        InvalidInputError: a blocking client, a bad name, TTL or refresh interval.
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
        Raises InvalidInputError for an empty tool name or non-JSON args."""
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
        """Read the policy of ``tool`` from the server (``None`` when it has none). Raises
        InvalidInputError (tool name)."""
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


class SyncToolCache(SyncTier):
    """Blocking twin of :class:`ToolCache` (``valkey`` / ``redis`` clients). Same
    arguments and errors; raises InvalidInputError for an asyncio client."""

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

    def check(self, tool: str, args: Any) -> ToolCacheResult:
        """See :meth:`ToolCache.check`."""
        return self._run(self._core.check(tool, args))

    def store(self, tool: str, args: Any, result: Any, *, ttl: float | None = None) -> str:
        """See :meth:`ToolCache.store`."""
        return self._run(self._core.store(tool, args, result, ttl))

    def set_policy(self, tool: str, *, ttl: float) -> None:
        """See :meth:`ToolCache.set_policy`."""
        self._run(self._core.set_policy(tool, ttl))

    def get_policy(self, tool: str) -> ToolPolicy | None:
        """See :meth:`ToolCache.get_policy`."""
        return self._run(self._core.get_policy(tool))

    def delete_policy(self, tool: str) -> bool:
        """See :meth:`ToolCache.delete_policy`."""
        return self._run(self._core.delete_policy(tool))

    def invalidate(self, tool: str, args: Any) -> bool:
        """See :meth:`ToolCache.invalidate`."""
        return self._run(self._core.invalidate(tool, args))

    def invalidate_by_tool(self, tool: str) -> int:
        """See :meth:`ToolCache.invalidate_by_tool`."""
        return self._run(self._core.invalidate_by_tool(tool))

    def tool_effectiveness(self) -> list[ToolEffectiveness]:
        """See :meth:`ToolCache.tool_effectiveness`."""
        return self._run(self._core.tool_effectiveness())

    def stats(self) -> CacheStats:
        """See :meth:`ToolCache.stats`."""
        return self._run(self._core.tier.stats())

    def flush_stats(self) -> None:
        """See :meth:`ToolCache.flush_stats`."""
        self._run(self._core.tier.flush_stats())
