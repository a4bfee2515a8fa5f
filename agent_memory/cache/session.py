"""Session (thread) state store with a sliding TTL.

A thread is one hash, ``{name}:session:{thread_id}``, one field per state key, so
``get_all`` is one ``HGETALL`` and ``destroy_thread`` one ``UNLINK``: nothing ever
SCANs. Values are any JSON value and are stored JSON-encoded (a ``str`` value ``"x"`` is
stored as ``"\\"x\\""``); a field written by someone else that is not valid JSON is
returned as its text. Every read or write refreshes the thread's TTL (``PEXPIRE`` in
the same pipeline); ``ttl=None`` keeps threads forever.

Counters: ``session:reads`` (get, get_all) and ``session:writes`` (set, delete,
destroy_thread), sent in the operation's own pipeline.

Every method raises :class:`~agent_memory.errors.ServerUnavailableError`,
:class:`~agent_memory.errors.OperationTimeoutError` or
:class:`~agent_memory.errors.ServerResponseError` when the server fails, and
:class:`~agent_memory.errors.InvalidInputError` for an empty or non-string thread id or
key (nothing is written then).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import AsyncTier, SyncTier, TierCore
from agent_memory.cache.keys import check_text, plain, ttl_ms
from agent_memory.cache.stats import CacheStats, batch_with_stats, raise_first_error
from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation

DEFAULT_SESSION_TTL = 86_400.0


def _decode(raw: Any) -> Any:
    text = replies.text(raw)
    try:
        return json.loads(text)
    except ValueError:
        return text


class SessionCore:
    """The operations of the session store (no I/O)."""

    def __init__(self, name: str, ttl: float | None) -> None:
        self.tier = TierCore(name)
        self.ttl_ms = ttl_ms(ttl)

    def _key(self, thread_id: str) -> str:
        return self.tier.layout.session(check_text(thread_id, field="thread_id"))

    def _access(self, key: str, command: Command, counter: str | None) -> Operation[Any]:
        commands = [command]
        if self.ttl_ms is not None:
            commands.append(Command(("PEXPIRE", key, self.ttl_ms)))
        counts = {counter: 1} if counter else None
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, commands, counts)
        raise_first_error(got)
        return got[0]

    def get(self, thread_id: str, key: str) -> Operation[Any]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        raw = yield from self._access(hkey, Command(("HGET", hkey, field)), "session:reads")
        return None if raw is None else _decode(raw)

    def set(self, thread_id: str, key: str, value: Any) -> Operation[None]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        encoded = json.dumps(plain(value, "value"), ensure_ascii=False, allow_nan=False)
        yield from self._access(hkey, Command(("HSET", hkey, field, encoded)), "session:writes")

    def get_all(self, thread_id: str) -> Operation[dict[str, Any]]:
        hkey = self._key(thread_id)
        raw = yield from self._access(hkey, Command(("HGETALL", hkey)), "session:reads")
        return {field: _decode(value) for field, value in replies.pairs(raw).items()}

    def delete(self, thread_id: str, key: str) -> Operation[bool]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        raw = yield from self._access(hkey, Command(("HDEL", hkey, field)), "session:writes")
        return replies.integer(raw) > 0

    def destroy_thread(self, thread_id: str) -> Operation[int]:
        hkey = self._key(thread_id)
        commands: Sequence[Command] = [Command(("HLEN", hkey)), Command(("UNLINK", hkey))]
        got = yield from batch_with_stats(
            self.tier.layout, self.tier.buffer, commands, {"session:writes": 1}
        )
        raise_first_error(got)
        return replies.integer(got[0])

    def touch(self, thread_id: str) -> Operation[bool]:
        hkey = self._key(thread_id)
        command = (
            Command(("PEXPIRE", hkey, self.ttl_ms))
            if self.ttl_ms is not None
            else Command(("EXISTS", hkey))
        )
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [command])
        raise_first_error(got)
        return replies.integer(got[0]) > 0


class SessionStore(AsyncTier):
    """Asyncio per-thread state store (standalone or cluster). No I/O in the constructor.

    Args:
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client.
        name: the cache name (key prefix).
        ttl: sliding lifetime of a thread in seconds, refreshed by every access
            (default one day; ``None``: no expiry).

    Raises:
        InvalidInputError: a blocking client, a bad name or TTL.
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
        InvalidInputError for a non-JSON value."""
        await self._run(self._core.set(thread_id, key, value))

    async def get_all(self, thread_id: str) -> dict[str, Any]:
        """Every key of the thread in one round trip (``{}`` when absent); refreshes the TTL."""
        return await self._run(self._core.get_all(thread_id))

    async def delete(self, thread_id: str, key: str) -> bool:
        """Remove ``key``; True if it existed. Refreshes the TTL."""
        return await self._run(self._core.delete(thread_id, key))

    async def destroy_thread(self, thread_id: str) -> int:
        """Delete the whole thread in one round trip; returns how many keys it had."""
        return await self._run(self._core.destroy_thread(thread_id))

    async def touch(self, thread_id: str) -> bool:
        """Refresh the thread's TTL; True if the thread exists."""
        return await self._run(self._core.touch(thread_id))

    async def stats(self) -> CacheStats:
        """Flush buffered counters and read ``{name}:__stats``."""
        return await self._run(self._core.tier.stats())

    async def flush_stats(self) -> None:
        """Send buffered counters now."""
        await self._run(self._core.tier.flush_stats())


class SyncSessionStore(SyncTier):
    """Blocking twin of :class:`SessionStore` (``valkey`` / ``redis`` clients). Same
    arguments and errors; raises InvalidInputError for an asyncio client."""

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

    def get(self, thread_id: str, key: str) -> Any:
        """See :meth:`SessionStore.get`."""
        return self._run(self._core.get(thread_id, key))

    def set(self, thread_id: str, key: str, value: Any) -> None:
        """See :meth:`SessionStore.set`."""
        self._run(self._core.set(thread_id, key, value))

    def get_all(self, thread_id: str) -> dict[str, Any]:
        """See :meth:`SessionStore.get_all`."""
        return self._run(self._core.get_all(thread_id))

    def delete(self, thread_id: str, key: str) -> bool:
        """See :meth:`SessionStore.delete`."""
        return self._run(self._core.delete(thread_id, key))

    def destroy_thread(self, thread_id: str) -> int:
        """See :meth:`SessionStore.destroy_thread`."""
        return self._run(self._core.destroy_thread(thread_id))

    def touch(self, thread_id: str) -> bool:
        """See :meth:`SessionStore.touch`."""
        return self._run(self._core.touch(thread_id))

    def stats(self) -> CacheStats:
        """See :meth:`SessionStore.stats`."""
        return self._run(self._core.tier.stats())

    def flush_stats(self) -> None:
        """See :meth:`SessionStore.flush_stats`."""
        self._run(self._core.tier.flush_stats())
