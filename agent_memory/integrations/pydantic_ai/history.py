"""A pydantic-ai conversation's message history on Valkey / Redis (the ``pydantic-ai`` extra).

>>> history = AgentMemoryMessageHistory("user-42", client=aclient, name="my_agent")
>>> result = await agent.run("Hi", message_history=await history.load())
>>> await history.append(result.new_messages())

The messages of conversation ``conversation_id`` are the list
``{name}:pai_history:{conversation_id}`` (one JSON message per element, oldest first; see
:mod:`.ops` and :mod:`.codec`). Conversation ids are any non-empty text up to 1024
characters, used verbatim: two different ids are two different keys, and the same id
under another ``name`` is another conversation. Each call is one round trip of
single-key commands (atomic, cluster-safe; a ``load(limit=n)`` whose newest ``n``
elements hold corrupt ones takes one more per doubling of its window); ``ttl`` gives every conversation a sliding
lifetime refreshed by each load and append (``None``, the default: kept until cleared).

The client is a ``valkey.asyncio`` / ``redis.asyncio`` one (the async methods run on it;
the ``*_sync`` ones raise :class:`CapabilityError`) or a blocking ``valkey`` / ``redis``
one (the ``*_sync`` methods, for ``agent.run_sync``, run on it; the async ones run it in
a worker thread), standalone or cluster. Constructing one does no I/O: make one per
conversation over a shared client.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry
from pydantic_ai.messages import ModelMessage

from agent_memory.cache._tier import AsyncTier, SyncTier, TierCore, export_events
from agent_memory.cache.keys import check_name, check_text, ttl_ms
from agent_memory.core.client_factory import (
    client_from_url,
    close_async_client,
    close_sync_client,
    released_on_failure,
)
from agent_memory.core.clients import is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.errors import CapabilityError, InvalidInputError, StoreClosedError
from agent_memory.integrations._keys import check_name_for_segment
from agent_memory.integrations.pydantic_ai import ops
from agent_memory.integrations.pydantic_ai.codec import encode_messages

logger = logging.getLogger(__name__)


class _Core:
    __slots__ = ("tier",)

    def __init__(self, name: str) -> None:
        self.tier = TierCore(name)


class _AsyncRunner(AsyncTier):
    """Runs operations on an asyncio client: one span, one latency observation, mapped
    errors."""

    __slots__ = ("_core",)

    def __init__(self, client: Any, core: _Core, name: str, registry: CollectorRegistry | None):
        super().__init__(client, name, "session", registry)
        self._core = core

    async def run(self, op: Operation[T]) -> T:
        return await self._run(op)


class _SyncRunner(SyncTier):
    """Runs operations on a blocking client (same telemetry and errors)."""

    __slots__ = ("_core",)

    def __init__(self, client: Any, core: _Core, name: str, registry: CollectorRegistry | None):
        super().__init__(client, name, "session", registry)
        self._core = core

    def run(self, op: Operation[T]) -> T:
        return self._run(op)


def _limit(value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise InvalidInputError(
        f"limit must be a non-negative int or None, got {value!r}", field="limit"
    )


class AgentMemoryMessageHistory:
    """The stored message history of one pydantic-ai conversation (see the module doc).

    Args:
        conversation_id: the conversation id: non-empty text, used verbatim in the key.
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client, or a blocking
            ``valkey`` / ``redis`` one (standalone or cluster).
        name: the cache name (key prefix), the ``name`` of the application's tiers.
        ttl: sliding lifetime of the conversation in seconds (``None``: no expiry).
        registry: a ``prometheus_client.CollectorRegistry`` for the tier's metrics.

    Raises:
        InvalidInputError: something that is not a client, a bad conversation id, name or
            TTL.
    """

    def __init__(
        self,
        conversation_id: str,
        *,
        client: Any,
        name: str,
        ttl: float | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._conversation_id = check_text(conversation_id, field="conversation_id")
        self._name = check_name_for_segment(check_name(name), ops.SEGMENT)
        self._ttl_ms = ttl_ms(ttl)
        if client is None or not hasattr(client, "execute_command"):
            raise InvalidInputError(
                "client must be a valkey / redis client (asyncio or blocking)", field="client"
            )
        self._core = _Core(self._name)
        self._async = is_async_client(client)
        self._runner: _AsyncRunner | _SyncRunner = (
            _AsyncRunner(client, self._core, self._name, registry)
            if self._async
            else _SyncRunner(client, self._core, self._name, registry)
        )
        self._owned = False
        self._closed = False
        self._skipped = 0
        self._lock = threading.Lock()

    @classmethod
    def from_url(
        cls,
        url: str,
        conversation_id: str,
        *,
        name: str,
        ttl: float | None = None,
        blocking: bool = False,
        registry: CollectorRegistry | None = None,
        **client_options: Any,
    ) -> AgentMemoryMessageHistory:
        """A history with its own client for ``url`` (an asyncio one, or a blocking one
        with ``blocking=True``), closed by :meth:`close` / :meth:`close_sync`. To serve
        many conversations, share one client instead.

        Raises:
            InvalidInputError: a bad URL, client option, conversation id, name or TTL.
        """
        check_text(conversation_id, field="conversation_id")  # before a client exists
        check_name_for_segment(check_name(name), ops.SEGMENT)
        ttl_ms(ttl)
        client = client_from_url(url, asyncio=not blocking, **client_options)
        with released_on_failure(client):  # e.g. a bad registry
            history = cls(conversation_id, client=client, name=name, ttl=ttl, registry=registry)
        history._owned = True
        return history

    @property
    def conversation_id(self) -> str:
        """The conversation this history belongs to."""
        return self._conversation_id

    @property
    def name(self) -> str:
        """The cache name (key prefix)."""
        return self._name

    @property
    def key(self) -> str:
        """The list holding this conversation's messages."""
        return ops.history_key(self._name, self._conversation_id)

    @property
    def client(self) -> Any:
        """The client the history runs on."""
        return self._runner.client

    @property
    def skipped(self) -> int:
        """How many corrupt stored elements loads of this object have skipped so far."""
        return self._skipped

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this AgentMemoryMessageHistory was closed")

    def _note(self, loaded: tuple[list[ModelMessage], int]) -> list[ModelMessage]:
        messages, skipped = loaded
        if skipped:
            with self._lock:
                self._skipped += skipped
            logger.warning("skipped %d corrupt element(s) of message history %s", skipped, self.key)
            self._core.tier.buffer.note("corrupt_entries", skipped)
            export_events(self._runner)
        return messages

    def _run_sync(self, op: Operation[T]) -> T:
        self._check_open()
        if not isinstance(self._runner, _SyncRunner):
            op.close()
            raise CapabilityError(
                "this AgentMemoryMessageHistory has an asyncio client: use load / append / "
                "clear, or give it a blocking client for the *_sync methods"
            )
        return self._runner.run(op)

    async def _run(self, op: Operation[T]) -> T:
        self._check_open()
        if isinstance(self._runner, _SyncRunner):
            return await asyncio.to_thread(self._runner.run, op)
        return await self._runner.run(op)

    async def load(self, *, limit: int | None = None) -> list[ModelMessage]:
        """The conversation's messages, oldest first, for ``agent.run(...,
        message_history=...)`` (``[]`` for a new conversation). Corrupt stored elements
        are skipped, logged and counted in :attr:`skipped`.

        Args:
            limit: only the latest ``limit`` messages (``None``: all). The window can
                start in the middle of a turn; pydantic-ai repairs such a history before
                it is sent.

        Raises:
            InvalidInputError: ``limit`` is not a non-negative int or None.
            StoreClosedError: :meth:`close` closed the client this history created.
            AgentMemoryError: a failure of the server (unavailable, timeout, a key of
                another type...).
        """
        op = ops.load(self._core.tier, self.key, _limit(limit), self._ttl_ms)
        return self._note(await self._run(op))

    async def append(self, messages: Sequence[ModelMessage]) -> None:
        """Append ``messages`` (typically ``result.new_messages()``) atomically, in one
        round trip (none for an empty list).

        Raises:
            InvalidInputError: not a list of ``ModelRequest`` / ``ModelResponse``, or one
                that cannot be serialised (nothing is written).
            StoreClosedError: :meth:`close` closed the client this history created.
            AgentMemoryError: a failure of the server.
        """
        encoded = encode_messages(messages)
        if encoded:
            await self._run(ops.append(self._core.tier, self.key, encoded, self._ttl_ms))

    async def clear(self) -> None:
        """Delete every message of the conversation.

        Raises:
            StoreClosedError: :meth:`close` closed the client this history created.
            AgentMemoryError: a failure of the server.
        """
        await self._run(ops.clear(self._core.tier, self.key))

    def load_sync(self, *, limit: int | None = None) -> list[ModelMessage]:
        """Blocking :meth:`load` (for ``agent.run_sync``); same errors, and
        :class:`CapabilityError` with an asyncio client."""
        op = ops.load(self._core.tier, self.key, _limit(limit), self._ttl_ms)
        return self._note(self._run_sync(op))

    def append_sync(self, messages: Sequence[ModelMessage]) -> None:
        """Blocking :meth:`append`; same errors, and :class:`CapabilityError` with an
        asyncio client."""
        encoded = encode_messages(messages)
        if encoded:
            self._run_sync(ops.append(self._core.tier, self.key, encoded, self._ttl_ms))

    def clear_sync(self) -> None:
        """Blocking :meth:`clear`; same errors, and :class:`CapabilityError` with an
        asyncio client."""
        self._run_sync(ops.clear(self._core.tier, self.key))

    async def close(self) -> None:
        """Close the client if :meth:`from_url` created it (idempotent); the history is
        unusable afterwards. An injected client is left open, and the history usable."""
        if self._owned and not self._closed:
            self._closed = True
            if self._async:
                await close_async_client(self._runner.client)
            else:
                await asyncio.to_thread(close_sync_client, self._runner.client)

    def close_sync(self) -> None:
        """Blocking :meth:`close` (for a history made with ``blocking=True``)."""
        if self._owned and not self._closed:
            if self._async:
                raise CapabilityError("this history has an asyncio client: await close()")
            self._closed = True
            close_sync_client(self._runner.client)

    async def __aenter__(self) -> AgentMemoryMessageHistory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __enter__(self) -> AgentMemoryMessageHistory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close_sync()

    def __repr__(self) -> str:
        return (
            f"AgentMemoryMessageHistory(conversation_id={self._conversation_id!r}, "
            f"name={self._name!r})"
        )


__all__ = ["AgentMemoryMessageHistory"]
