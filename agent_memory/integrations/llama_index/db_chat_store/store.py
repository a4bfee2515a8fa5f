"""``AgentMemoryDBChatStore``: LlamaIndex's ``AsyncDBChatStore`` surface (construction,
clients, the event loop each call runs in, argument checks, counting what reads skip);
the operations are :mod:`.ops` (see the package docstring)."""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypeVar

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_text, ttl_ms
from agent_memory.core.client_factory import released_on_failure
from agent_memory.core.effects import Operation
from agent_memory.errors import CapabilityError
from agent_memory.integrations._runners import Runners, clients_from_url
from agent_memory.integrations.llama_index import ops
from agent_memory.integrations.llama_index.codec import encode_message, encode_messages
from agent_memory.integrations.llama_index.db_chat_store.checks import (
    check_id,
    check_non_negative,
    check_status,
    check_status_filter,
)
from agent_memory.integrations.llama_index.db_chat_store.layout import (
    MAX_ID,
    chat_key,
    check_store_name,
)
from agent_memory.integrations.llama_index.db_chat_store.ops import (
    add,
    count,
    delete,
    read,
    take_id,
    take_oldest,
)

# The logger of the module this package was, so logging configurations keep working.
logger = logging.getLogger("agent_memory.integrations.llama_index.db_chat_store")

_OWNER = "AgentMemoryDBChatStore"

T = TypeVar("T")


# -- the store -----------------------------------------------------------------------------


class AgentMemoryDBChatStore(AsyncDBChatStore):
    """LlamaIndex's ``AsyncDBChatStore`` (the short-term queue of ``Memory``), one Valkey
    sorted set per key (see the module doc).

    Args:
        client: a blocking ``valkey`` / ``redis`` client (standalone or cluster), or
            ``None``; the async methods run it in a worker thread when no
            ``async_client`` is given.
        async_client: a ``valkey.asyncio`` / ``redis.asyncio`` client, or ``None``. It
            serves the event loop the store first runs in; calls from any other loop
            (LlamaIndex's blocking wrappers, ``Memory.put``, ``Memory.get``,
            ``Memory.from_defaults(chat_history=...)``, each run a loop of their own) use
            the blocking client in a worker thread, and raise
            :class:`~agent_memory.errors.CapabilityError` without one.
        name: the cache name (key prefix), the ``name`` of the application's tiers;
            it must not contain ``:li_db``.
        ttl: sliding lifetime of each chat in seconds (``None``: no expiry).
        registry: a ``prometheus_client.CollectorRegistry`` for the tier's metrics.

    Every method raises :class:`~agent_memory.errors.InvalidInputError` for a bad key,
    message, status, count or id (nothing is written then) and an
    :class:`~agent_memory.errors.AgentMemoryError` for a failure of the server
    (unavailable, timeout, a key of another type...).

    Raises:
        InvalidInputError: no client or one of the wrong kind, a bad name or TTL.
    """

    name: str = Field(description="The cache name (key prefix).")
    ttl: float | None = Field(default=None, description="Sliding lifetime in seconds.")

    _runners: Runners = PrivateAttr()
    _ttl_ms: int | None = PrivateAttr(default=None)
    _skipped: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _home_loop: weakref.ref[asyncio.AbstractEventLoop] | None = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        name: str,
        client: Any = None,
        async_client: Any = None,
        ttl: float | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        checked = check_store_name(name)
        expiry = ttl_ms(ttl)
        runners = Runners(
            client,
            async_client,
            name=checked,
            tier="session",
            core=SimpleNamespace(tier=TierCore(checked)),
            owner=_OWNER,
            registry=registry,
        )
        super().__init__(name=checked, ttl=ttl)  # type: ignore[call-arg]  # pydantic fields
        self._runners = runners
        self._ttl_ms = expiry

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        name: str,
        ttl: float | None = None,
        registry: CollectorRegistry | None = None,
        **client_options: Any,
    ) -> AgentMemoryDBChatStore:
        """A chat store with its own blocking and asyncio clients for ``url`` (no I/O
        yet), closed by :meth:`close` / :meth:`aclose`.

        Raises:
            InvalidInputError: a bad URL, client option, name or TTL.
        """
        check_store_name(name)
        ttl_ms(ttl)
        client, async_client = clients_from_url(url, **client_options)
        with released_on_failure(client, async_client):  # e.g. a bad registry
            store = cls(
                name=name, client=client, async_client=async_client, ttl=ttl, registry=registry
            )
        store._runners.owned = True
        return store

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises with."""
        return _OWNER

    @property
    def skipped(self) -> int:
        """How many corrupt stored entries this store's reads and deletes have skipped."""
        return self._skipped

    def chat_key(self, key: str) -> str:
        """The sorted set holding chat ``key`` (pure).

        Raises:
            InvalidInputError: a key that is not non-empty text up to 1024 characters.
        """
        return chat_key(self.name, check_text(key, field="key"))

    def _note(self, taken: tuple[T, int], key: str) -> T:
        """What an operation returned, once its corrupt entries are logged and counted."""
        value, skipped = taken
        if skipped:
            with self._lock:
                self._skipped += skipped
            logger.warning("skipped %d corrupt entr(y/ies) of chat %s", skipped, key)
            self._runners.note_corrupt(skipped)
        return value

    def _in_home_loop(self) -> bool:
        """Whether the running event loop is the one the asyncio client first ran in.

        An asyncio client's connections belong to the loop that opened them, and
        LlamaIndex's blocking wrappers (``Memory.put`` ...) run each call in a new loop.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._home_loop is None:
                self._home_loop = weakref.ref(loop)
            return self._home_loop() is loop

    async def _arun(self, make: Callable[[], Operation[T]]) -> T:
        """Run an operation on the asyncio client in its home loop, else on the blocking
        client in a worker thread.

        Raises:
            CapabilityError: another loop than the asyncio client's, and no blocking
                client.
        """
        runners = self._runners
        if runners.async_client is None or self._in_home_loop():
            return await runners.arun(make)
        if runners.client is None:
            raise CapabilityError(
                f"this {_OWNER} has only an asyncio client, which serves the event loop it "
                "first ran in; pass a blocking client as client= for calls from other "
                "loops (LlamaIndex's blocking wrappers such as Memory.put run each call "
                "in a loop of their own)"
            )
        return await asyncio.to_thread(runners.run, make)

    # -- reads ---------------------------------------------------------------------------

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """Chat ``key``'s messages of ``status`` (``None``: every status), oldest first,
        skipping ``offset`` and returning at most ``limit``; corrupt entries are skipped,
        logged and counted in :attr:`skipped`.

        Raises:
            InvalidInputError: a bad key or status, a ``limit`` or ``offset`` that is not
                an int >= 0.
            AgentMemoryError: a failure of the server.
        """
        k, wanted = self.chat_key(key), check_status_filter(status)
        start = 0 if offset is None else check_non_negative(offset, "offset")
        most = -1 if limit is None else check_non_negative(limit, "limit")
        got = await self._arun(
            lambda: read(self._runners.tier, k, wanted, start, most, self._ttl_ms)
        )
        return self._note(got, k)

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        """How many messages of ``status`` (``None``: every status) chat ``key`` stores
        (corrupt entries included).

        Raises:
            InvalidInputError: a bad key or status.
            AgentMemoryError: a failure of the server.
        """
        k, wanted = self.chat_key(key), check_status_filter(status)
        return await self._arun(lambda: count(self._runners.tier, k, wanted, self._ttl_ms))

    async def get_keys(self) -> list[str]:
        """Every key of this ``name`` that holds messages, sorted (``SCAN`` on every
        primary); a key that is not UTF-8 (another writer's) is skipped, logged and
        counted in :attr:`skipped`.

        Raises:
            AgentMemoryError: a failure of the server.
        """
        prefix = chat_key(self.name, "")
        return self._note(await self._arun(lambda: ops.keys_under(prefix)), prefix + "*")

    # -- writes --------------------------------------------------------------------------

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append ``message`` to chat ``key`` with ``status`` (one script: it takes the
        next id).

        Raises:
            InvalidInputError: a bad key or status, not a ``ChatMessage``.
            AgentMemoryError: a failure of the server.
        """
        await self._add(key, [encode_message(message)], status, replace=False)

    async def add_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Append ``messages`` in order, atomically (no message: nothing happens).

        Raises:
            InvalidInputError: a bad key or status, not a list of ``ChatMessage``.
            AgentMemoryError: a failure of the server.
        """
        await self._add(key, encode_messages(messages), status, replace=False)

    async def set_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Replace every message of chat ``key``, whatever its status, with ``messages``
        of ``status``, atomically (no message: the chat is deleted); ids restart at 1.

        Raises:
            InvalidInputError: a bad key or status, not a list of ``ChatMessage``.
            AgentMemoryError: a failure of the server.
        """
        await self._add(key, encode_messages(messages), status, replace=True)

    async def _add(self, key: str, encoded: list[bytes], status: object, *, replace: bool) -> None:
        k, wanted = self.chat_key(key), check_status(status)
        if not encoded and not replace:
            return  # nothing to add (bad input was still refused above)
        await self._arun(
            lambda: add(self._runners.tier, k, encoded, wanted, self._ttl_ms, replace=replace)
        )

    # -- deletes -------------------------------------------------------------------------

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message whose id is ``idx`` (either status) and return it; ``None``
        when chat ``key`` has no such message (or it was corrupt: skipped and counted).

        Raises:
            InvalidInputError: a bad key, an ``idx`` that is not an int.
            AgentMemoryError: a failure of the server.
        """
        k, wanted = self.chat_key(key), check_id(idx)
        if not 0 < wanted < MAX_ID:
            return None  # no message has such an id
        taken = await self._arun(lambda: take_id(self._runners.tier, k, wanted, self._ttl_ms))
        return self._note(taken, k)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete chat ``key``'s messages of ``status`` (``None``: the whole chat).

        Raises:
            InvalidInputError: a bad key or status.
            AgentMemoryError: a failure of the server.
        """
        k, wanted = self.chat_key(key), check_status_filter(status)
        await self._arun(lambda: delete(self._runners.tier, k, wanted, self._ttl_ms))

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the ``n`` oldest ACTIVE messages of chat ``key``, atomically; they,
        oldest first (corrupt entries among them are deleted, skipped and counted).

        Raises:
            InvalidInputError: a bad key, an ``n`` that is not an int >= 0.
            AgentMemoryError: a failure of the server.
        """
        return await self._take_oldest(key, n, archive=False)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Archive the ``n`` oldest ACTIVE messages of chat ``key``, atomically; they,
        oldest first (corrupt entries among them are archived, skipped and counted).

        Raises:
            InvalidInputError: a bad key, an ``n`` that is not an int >= 0.
            AgentMemoryError: a failure of the server.
        """
        return await self._take_oldest(key, n, archive=True)

    async def _take_oldest(self, key: str, n: object, *, archive: bool) -> list[ChatMessage]:
        k, most = self.chat_key(key), check_non_negative(n, "n")
        taken = await self._arun(
            lambda: take_oldest(self._runners.tier, k, most, self._ttl_ms, archive=archive)
        )
        return self._note(taken, k)

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the blocking client if :meth:`from_url` created it; an injected client
        is left open. (Use :meth:`aclose` for both clients.)"""
        self._runners.close()

    async def aclose(self) -> None:
        """Close both clients if :meth:`from_url` created them; injected ones are left
        open. Called from another event loop than the asyncio client's, it closes the
        blocking client only: the asyncio client's connections belong to their loop
        (usually finished by then) and go with the client."""
        if self._runners.async_client is not None and not self._in_home_loop():
            self._runners.close()
            return
        await self._runners.aclose()


__all__ = ["AgentMemoryDBChatStore"]
