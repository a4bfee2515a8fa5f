"""The blocking and asyncio runners of the chat store (no LlamaIndex import).

Each operation is built once (a generator of :mod:`agent_memory.core.effects`) and run
by the cache-tier runners the library's tiers use: one span, one latency observation
and the ``{name}:__stats`` counters per operation, client errors mapped to
:mod:`agent_memory.errors`. The blocking methods run on the blocking client; the async
ones on the asyncio client, or on the blocking one in a worker thread when that is the
only one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import AsyncTier, SyncTier, TierCore
from agent_memory.core.clients import close_async_client, close_sync_client, is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.errors import CapabilityError, InvalidInputError


class _Core:
    __slots__ = ("tier",)

    def __init__(self, name: str) -> None:
        self.tier = TierCore(name)


class _Sync(SyncTier):
    __slots__ = ("_core",)

    def __init__(self, client: Any, core: _Core, registry: CollectorRegistry | None) -> None:
        super().__init__(client, core.tier.layout.name, "session", registry)
        self._core = core

    def run(self, op: Operation[T]) -> T:
        return self._run(op)


class _Async(AsyncTier):
    __slots__ = ("_core",)

    def __init__(self, client: Any, core: _Core, registry: CollectorRegistry | None) -> None:
        super().__init__(client, core.tier.layout.name, "session", registry)
        self._core = core

    async def run(self, op: Operation[T]) -> T:
        return await self._run(op)


class Runners:
    """A blocking and an asyncio runner over one cache name.

    Args:
        client: a blocking ``valkey`` / ``redis`` client, or ``None``.
        async_client: a ``valkey.asyncio`` / ``redis.asyncio`` client, or ``None``.
        name: the cache name (key prefix, metrics label), already validated.
        owner: the adapter's class name, for messages.
        registry: a ``prometheus_client.CollectorRegistry`` for the tier's metrics.

    Raises:
        InvalidInputError: no client, or a client of the wrong kind.
    """

    __slots__ = ("_async", "_owner", "_sync", "async_client", "client", "core", "owned")

    def __init__(
        self,
        client: Any,
        async_client: Any,
        *,
        name: str,
        owner: str,
        registry: CollectorRegistry | None = None,
    ) -> None:
        if client is None and async_client is None:
            raise InvalidInputError(
                f"{owner} needs a blocking client (client=), an asyncio client "
                "(async_client=) or both",
                field="client",
            )
        for value, want_async, field in (
            (client, False, "client"),
            (async_client, True, "async_client"),
        ):
            if value is not None and (
                not hasattr(value, "execute_command") or is_async_client(value) != want_async
            ):
                kind = (
                    "a valkey.asyncio / redis.asyncio"
                    if want_async
                    else "a blocking valkey / redis"
                )
                raise InvalidInputError(f"{owner}: {field}= must be {kind} client", field=field)
        self.core = _Core(name)
        self.client = client
        self.async_client = async_client
        self.owned = False
        self._owner = owner
        self._sync = None if client is None else _Sync(client, self.core, registry)
        self._async = None if async_client is None else _Async(async_client, self.core, registry)

    @property
    def tier(self) -> TierCore:
        """The operations' cache-tier state."""
        return self.core.tier

    def run(self, make: Callable[[], Operation[T]]) -> T:
        """Run the operation ``make()`` builds on the blocking client.

        Raises:
            CapabilityError: only an asyncio client was given.
        """
        if self._sync is None:
            raise CapabilityError(
                f"this {self._owner} has only an asyncio client: use its async methods "
                "or pass a blocking client as client="
            )
        return self._sync.run(make())

    async def arun(self, make: Callable[[], Operation[T]]) -> T:
        """Run the operation ``make()`` builds on the asyncio client (on the blocking one
        in a worker thread when it is the only one)."""
        if self._async is None:
            return await asyncio.to_thread(self.run, make)
        return await self._async.run(make())

    def close(self) -> None:
        """Close the blocking client if it was created for this object."""
        if self.owned and self.client is not None:
            close_sync_client(self.client)

    async def aclose(self) -> None:
        """Close both clients if they were created for this object."""
        if self.owned and self.async_client is not None:
            await close_async_client(self.async_client)
        if self.owned and self.client is not None:
            await asyncio.to_thread(close_sync_client, self.client)


__all__ = ["Runners"]
