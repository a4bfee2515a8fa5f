"""What every async and sync cache-tier facade shares: client checks, runners, stats."""

from __future__ import annotations

from typing import Any

from agent_memory.cache.keys import KeyLayout
from agent_memory.cache.stats import CacheStats, StatsBuffer, flush_op, stats_op
from agent_memory.core.clients import AsyncExecutor, SyncExecutor, is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.core.runner import run_async, run_sync
from agent_memory.errors import InvalidInputError


class TierCore:
    """State shared by the operations of one tier (no I/O)."""

    def __init__(self, name: str) -> None:
        self.layout = KeyLayout(name)
        self.buffer = StatsBuffer()

    def stats(self) -> Operation[CacheStats]:
        return stats_op(self.layout, self.buffer)

    def flush_stats(self) -> Operation[None]:
        return flush_op(self.layout, self.buffer)


def _check_client(client: Any, *, want_async: bool, cls: str) -> None:
    if is_async_client(client) != want_async:
        kind, other = ("an asyncio", "Sync" + cls) if want_async else ("a blocking", cls[4:])
        raise InvalidInputError(
            f"{cls} needs {kind} client (valkey.asyncio / redis.asyncio for the async "
            f"classes, valkey / redis for the Sync ones); use {other} instead",
            field="client",
        )


class AsyncTier:
    """Base of the asyncio facades."""

    __slots__ = ("_executor", "client")

    def __init__(self, client: Any) -> None:
        _check_client(client, want_async=True, cls=type(self).__name__)
        self.client = client
        self._executor = AsyncExecutor(client)

    async def _run(self, op: Operation[T]) -> T:
        return await run_async(op, self._executor)


class SyncTier:
    """Base of the blocking facades."""

    __slots__ = ("_executor", "client")

    def __init__(self, client: Any) -> None:
        _check_client(client, want_async=False, cls=type(self).__name__)
        self.client = client
        self._executor = SyncExecutor(client)

    def _run(self, op: Operation[T]) -> T:
        return run_sync(op, self._executor)
