"""LlamaIndex's ``BaseChatStore`` on Valkey / Redis (the ``llama-index`` extra).

>>> chat_store = AgentMemoryChatStore(client=client, async_client=aclient, name="my_agent")
>>> memory = ChatMemoryBuffer.from_defaults(chat_store=chat_store, chat_store_key="user-42")

The messages of chat ``key`` are the list ``{name}:li_chat:{key}`` (one JSON
``ChatMessage`` per element, oldest first; see :mod:`.ops` and :mod:`.codec`). Keys are
any non-empty text up to 1024 characters, used verbatim: two different keys are two
different lists, and the same key under another ``name`` is another chat. Every call is
one round trip of single-key commands: appends are one ``RPUSH``, ``set_messages``,
inserts and deletes by index one script, so each is atomic and cluster-safe. ``ttl``
gives every chat a sliding lifetime refreshed by each read and write (``None``, the
default: kept until deleted).

Semantics are ``SimpleChatStore``'s, with two differences that follow from keeping a
chat as a list: a chat with no messages does not exist (``set_messages(key, [])``
deletes it, so ``get_keys`` omits it and ``delete_messages`` returns ``None``), and an
index below ``-len`` gives ``None`` instead of ``IndexError``. ``get_keys`` walks the
keyspace with ``SCAN`` on every primary: a maintenance call, not for a hot path.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store.base import BaseChatStore
from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_name, check_text, ttl_ms
from agent_memory.core.client_factory import released_on_failure
from agent_memory.errors import InvalidInputError
from agent_memory.integrations._keys import check_name_for_segment
from agent_memory.integrations._runners import Runners, clients_from_url
from agent_memory.integrations.llama_index import ops
from agent_memory.integrations.llama_index.codec import encode_message, encode_messages

logger = logging.getLogger(__name__)

_OWNER = "AgentMemoryChatStore"


def _index(value: object, field: str = "idx") -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidInputError(f"{field} must be an int, got {value!r}", field=field)


class _Core:
    """The operations' state the runners carry: the session tier's keys of ``name``."""

    __slots__ = ("tier",)

    def __init__(self, name: str) -> None:
        self.tier = TierCore(name)


class AgentMemoryChatStore(BaseChatStore):
    """The chat messages of many keys, one Valkey list each (see the module doc).

    Args:
        client: a blocking ``valkey`` / ``redis`` client (standalone or cluster) for the
            blocking methods, or ``None``.
        async_client: a ``valkey.asyncio`` / ``redis.asyncio`` client for the async
            methods, or ``None`` (they then run the blocking client in a worker thread).
        name: the cache name (key prefix), the ``name`` of the application's tiers.
        ttl: sliding lifetime of each chat in seconds (``None``: no expiry).
        registry: a ``prometheus_client.CollectorRegistry`` for the tier's metrics.

    The blocking methods raise :class:`~agent_memory.errors.CapabilityError` when only
    an asyncio client was given. Every method raises
    :class:`~agent_memory.errors.InvalidInputError` for a bad key, message or index
    (nothing is written then) and an :class:`~agent_memory.errors.AgentMemoryError`
    for a failure of the server (unavailable, timeout, a key of another type...).

    Raises:
        InvalidInputError: no client or one of the wrong kind, a bad name or TTL.
    """

    name: str = Field(description="The cache name (key prefix).")
    ttl: float | None = Field(default=None, description="Sliding lifetime in seconds.")

    _runners: Runners = PrivateAttr()
    _ttl_ms: int | None = PrivateAttr(default=None)
    _skipped: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(
        self,
        *,
        name: str,
        client: Any = None,
        async_client: Any = None,
        ttl: float | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        checked = check_name_for_segment(check_name(name), ops.SEGMENT)
        expiry = ttl_ms(ttl)
        runners = Runners(
            client,
            async_client,
            name=checked,
            tier="session",
            core=_Core(checked),
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
    ) -> AgentMemoryChatStore:
        """A chat store with its own blocking and asyncio clients for ``url`` (no I/O
        yet), closed by :meth:`close` / :meth:`aclose`.

        Raises:
            InvalidInputError: a bad URL, client option, name or TTL.
        """
        check_name_for_segment(check_name(name), ops.SEGMENT)
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
        """How many corrupt stored elements this store's reads and deletes have skipped."""
        return self._skipped

    def chat_key(self, key: str) -> str:
        """The list holding chat ``key`` (pure).

        Raises:
            InvalidInputError: a key that is not non-empty text.
        """
        return ops.chat_key(self.name, check_text(key, field="key"))

    def _note(self, skipped: int, key: str) -> None:
        if skipped:
            with self._lock:
                self._skipped += skipped
            logger.warning("skipped %d corrupt element(s) of chat %s", skipped, key)
            self._runners.note_corrupt(skipped)

    def _got(self, read: ops.Read, key: str) -> list[ChatMessage]:
        messages, skipped = read
        self._note(skipped, key)
        return messages

    def _taken(self, taken: tuple[Any, int], key: str) -> Any:
        value, skipped = taken
        self._note(skipped, key)
        return value

    # -- blocking ------------------------------------------------------------------------

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace chat ``key``'s messages with ``messages``, atomically (an empty list
        deletes the chat)."""
        k, encoded = self.chat_key(key), encode_messages(messages)
        self._runners.run(lambda: ops.replace(self._runners.tier, k, encoded, self._ttl_ms))

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Chat ``key``'s messages, oldest first (``[]`` for an unknown key); corrupt
        elements are skipped, logged and counted in :attr:`skipped`."""
        k = self.chat_key(key)
        return self._got(self._runners.run(lambda: ops.get(self._runners.tier, k, self._ttl_ms)), k)

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` (one ``RPUSH``), or insert it before position ``idx``
        (``list.insert`` rules: negative from the end, past either end clamps)."""
        k, encoded = self.chat_key(key), encode_message(message)
        if idx is None:
            self._runners.run(lambda: ops.append(self._runners.tier, k, [encoded], self._ttl_ms))
            return
        i = _index(idx)
        self._runners.run(lambda: ops.insert(self._runners.tier, k, i, encoded, self._ttl_ms))

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete chat ``key``; its messages, or ``None`` when it had none."""
        k = self.chat_key(key)
        return self._taken(self._runners.run(lambda: ops.take_all(self._runners.tier, k)), k)  # type: ignore[no-any-return]

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at position ``idx`` (negative: from the end); it, or
        ``None`` when the index is out of range."""
        k, i = self.chat_key(key), _index(idx)
        op = lambda: ops.take_at(self._runners.tier, k, i, self._ttl_ms)  # noqa: E731
        return self._taken(self._runners.run(op), k)  # type: ignore[no-any-return]

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Remove and return the newest message (``None`` for an empty chat)."""
        k = self.chat_key(key)
        popped = self._runners.run(lambda: ops.pop_last(self._runners.tier, k, self._ttl_ms))
        return self._taken(popped, k)  # type: ignore[no-any-return]

    def get_keys(self) -> list[str]:
        """Every key of this ``name`` that holds messages, sorted (``SCAN`` on every
        primary); a key that is not UTF-8 (another writer's) is skipped, logged and
        counted in :attr:`skipped`."""
        found = self._runners.run(lambda: ops.list_keys(self.name))
        return self._taken(found, ops.chat_key(self.name, "*"))  # type: ignore[no-any-return]

    # -- asyncio -------------------------------------------------------------------------

    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Async :meth:`set_messages`."""
        k, encoded = self.chat_key(key), encode_messages(messages)
        await self._runners.arun(lambda: ops.replace(self._runners.tier, k, encoded, self._ttl_ms))

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        """Async :meth:`get_messages`."""
        k = self.chat_key(key)
        read = await self._runners.arun(lambda: ops.get(self._runners.tier, k, self._ttl_ms))
        return self._got(read, k)

    async def async_add_message(
        self, key: str, message: ChatMessage, idx: int | None = None
    ) -> None:
        """Async :meth:`add_message`."""
        k, encoded = self.chat_key(key), encode_message(message)
        if idx is None:
            op = lambda: ops.append(self._runners.tier, k, [encoded], self._ttl_ms)  # noqa: E731
            await self._runners.arun(op)
            return
        i = _index(idx)
        await self._runners.arun(
            lambda: ops.insert(self._runners.tier, k, i, encoded, self._ttl_ms)
        )

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        """Async :meth:`delete_messages`."""
        k = self.chat_key(key)
        taken = await self._runners.arun(lambda: ops.take_all(self._runners.tier, k))
        return self._taken(taken, k)  # type: ignore[no-any-return]

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Async :meth:`delete_message`."""
        k, i = self.chat_key(key), _index(idx)
        taken = await self._runners.arun(
            lambda: ops.take_at(self._runners.tier, k, i, self._ttl_ms)
        )
        return self._taken(taken, k)  # type: ignore[no-any-return]

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        """Async :meth:`delete_last_message`."""
        k = self.chat_key(key)
        popped = await self._runners.arun(lambda: ops.pop_last(self._runners.tier, k, self._ttl_ms))
        return self._taken(popped, k)  # type: ignore[no-any-return]

    async def aget_keys(self) -> list[str]:
        """Async :meth:`get_keys`."""
        found = await self._runners.arun(lambda: ops.list_keys(self.name))
        return self._taken(found, ops.chat_key(self.name, "*"))  # type: ignore[no-any-return]

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the blocking client if :meth:`from_url` created it; an injected client
        is left open. (Use :meth:`aclose` for both clients.)"""
        self._runners.close()

    async def aclose(self) -> None:
        """Close both clients if :meth:`from_url` created them; injected ones are left
        open."""
        await self._runners.aclose()


__all__ = ["AgentMemoryChatStore"]
