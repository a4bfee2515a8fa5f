"""The sync and async runners shared by the adapters whose frameworks have blocking and
async methods (LangChain, LlamaIndex); no framework import.

An adapter builds each operation once (a generator of :mod:`agent_memory.core.effects`)
and hands it to :class:`Runners`: the blocking methods run it on the blocking client, the
``a``-prefixed ones on the asyncio client, through the same cache-tier runners the
library's tiers use (one span, one latency observation and the ``{name}:__stats``
counters per operation; client errors mapped to :mod:`agent_memory.errors`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import AsyncTier, SyncTier, TierCore, export_events
from agent_memory.core.client_factory import (
    client_from_url,
    close_async_client,
    close_sync_client,
    released_on_failure,
)
from agent_memory.core.clients import is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.errors import CapabilityError, InvalidInputError


class _SyncRunner(SyncTier):
    __slots__ = ("_core",)

    def __init__(
        self, client: Any, name: str, tier: str, core: Any, registry: CollectorRegistry | None
    ) -> None:
        super().__init__(client, name, tier, registry)
        self._core = core

    def run(self, op: Operation[T]) -> T:
        return self._run(op)


class _AsyncRunner(AsyncTier):
    __slots__ = ("_core",)

    def __init__(
        self, client: Any, name: str, tier: str, core: Any, registry: CollectorRegistry | None
    ) -> None:
        super().__init__(client, name, tier, registry)
        self._core = core

    async def run(self, op: Operation[T]) -> T:
        return await self._run(op)


def check_clients(client: Any, async_client: Any, *, owner: str) -> None:
    """Validate the pair of clients an adapter was given.

    Raises:
        InvalidInputError: neither given, or one of the wrong kind.
    """
    if client is None and async_client is None:
        raise InvalidInputError(
            f"{owner} needs a blocking client (client=), an asyncio client (async_client=) or both",
            field="client",
        )
    for value, field in ((client, "client"), (async_client, "async_client")):
        if value is not None and not hasattr(value, "execute_command"):
            raise InvalidInputError(
                f"{owner}: {field}= must be a valkey or redis client, got {type(value).__name__}",
                field=field,
            )
    if client is not None and is_async_client(client):
        raise InvalidInputError(
            f"{owner}: client= must be a blocking valkey/redis client; pass an asyncio "
            "one as async_client=",
            field="client",
        )
    if async_client is not None and not is_async_client(async_client):
        raise InvalidInputError(
            f"{owner}: async_client= must be a valkey.asyncio/redis.asyncio client; pass a "
            "blocking one as client=",
            field="async_client",
        )


class Runners:
    """A blocking and an asyncio runner over one operation core.

    Args:
        client: a blocking ``valkey``/``redis`` client (standalone or cluster), or ``None``.
        async_client: an asyncio client, or ``None``.
        name: the cache name (metrics label).
        tier: the tier label of spans and metrics.
        core: the object holding the operations' state; its ``tier`` is a ``TierCore``.
        owner: the adapter's class name, for messages.
        registry: a ``prometheus_client.CollectorRegistry``; ``None`` records no metrics.
        owned: close both clients in :meth:`close` / :meth:`aclose` (settable).

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
        tier: str,
        core: Any,
        owner: str,
        registry: CollectorRegistry | None = None,
        owned: bool = False,
    ) -> None:
        check_clients(client, async_client, owner=owner)
        if not isinstance(getattr(core, "tier", None), TierCore):
            raise InvalidInputError("core.tier must be a TierCore", field="core")
        self.client = client
        self.async_client = async_client
        self.core = core
        self._owner = owner
        self.owned = owned
        self._sync = None if client is None else _SyncRunner(client, name, tier, core, registry)
        self._async = (
            None if async_client is None else _AsyncRunner(async_client, name, tier, core, registry)
        )

    @property
    def tier(self) -> TierCore:
        """The operations' cache-tier state (``core.tier``)."""
        tier: TierCore = self.core.tier
        return tier

    def note_corrupt(self, amount: int) -> None:
        """Count ``amount`` corrupt entries an operation skipped (``corrupt_entries``),
        in the metrics at once."""
        self.note_event("corrupt_entries", amount)

    def note_event(self, event: str, amount: int) -> None:
        """Count ``amount`` occurrences of ``event`` an operation met (in
        ``agent_memory_events``), in the metrics at once."""
        self.tier.buffer.note(event, amount)
        runner = self._sync if self._sync is not None else self._async
        if runner is not None:
            export_events(runner)

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
        in a worker thread when only that one was given)."""
        if self._async is None:
            return await asyncio.to_thread(self.run, make)
        return await self._async.run(make())

    def close(self) -> None:
        """Close the blocking client if this object created it (idempotent)."""
        if self.owned and self.client is not None:
            close_sync_client(self.client)

    async def aclose(self) -> None:
        """Close both clients if this object created them (idempotent)."""
        if self.owned and self.async_client is not None:
            await close_async_client(self.async_client)
        self.close()


def clients_from_url(url: str, **options: Any) -> tuple[Any, Any]:
    """A blocking and an asyncio client for ``url`` (no I/O yet).

    Raises:
        InvalidInputError: a bad URL or client option.
    """
    blocking = client_from_url(url, asyncio=False, **options)
    with released_on_failure(blocking):
        return blocking, client_from_url(url, asyncio=True, **options)
