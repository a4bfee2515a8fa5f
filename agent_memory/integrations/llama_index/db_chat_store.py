"""LlamaIndex's ``AsyncDBChatStore`` on Valkey / Redis: the short-term queue of ``Memory``.

>>> chat_store = AgentMemoryDBChatStore(client=client, async_client=aclient, name="my_agent")
>>> memory = Memory.from_defaults(session_id="user-42", chat_store=chat_store)

The messages of chat ``key`` (``Memory``'s ``session_id``) are one sorted set,
``{name}:li_db:{key}``. Each message is the member ``<id>:<ChatMessage JSON>`` (JSON by
:mod:`.codec`), scored ``+id`` while it is ACTIVE and ``-id`` once ARCHIVED. ``id`` is
the message's id in its chat: one more than the largest id the chat holds when the
message is added (SQLite's rowid rule), so ids follow the order of addition. Hence:

* the ACTIVE queue, oldest first, is the scores above 0 ascending, the archive the
  scores below 0 descending: reading one status is one ``ZRANGE ... BYSCORE LIMIT``,
  counting it one ``ZCOUNT``, whatever the size of the archive;
* every status at once (``status=None``) is the two ranges merged by id, in a script;
* archiving negates scores and keeps members: ``archive_oldest_messages`` is one script.

Every method is one round trip on one key (plus the cache's stats counters, and a
``PEXPIRE`` when ``ttl`` is set: a sliding lifetime refreshed by each read and write), so
each is atomic and cluster-safe: multi-step changes are single-key scripts
(:mod:`.scripts`). ``get_keys`` walks the keyspace with ``SCAN`` on every primary: a
maintenance call.

Semantics are ``SQLAlchemyChatStore``'s: a status filter, then ``offset`` and ``limit``,
oldest first; ``status=None`` is every status; ``delete_oldest_messages`` and
``archive_oldest_messages`` take the oldest ACTIVE messages and return them; ``idx`` of
``delete_message`` is a message id (``None`` when the chat has none such). Differences:
bad input raises :class:`~agent_memory.errors.InvalidInputError` where SQLite accepts it
(an empty key; a negative ``limit``, ``offset`` or ``n``, which SQLite reads as "no
limit"; a status that is not a ``MessageStatus``); ``add_messages(key, [])`` does nothing
(SQL fails); ids count per chat, not per table; ``count_messages`` counts stored entries,
corrupt ones included, while reads skip them (logged and counted in :attr:`skipped`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, TypeVar

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_name, check_text, ttl_ms
from agent_memory.core.effects import Command, Operation
from agent_memory.errors import CapabilityError, InvalidInputError, ReplyParseError
from agent_memory.integrations._list_log import READS, WRITES, decode_entries, log_key
from agent_memory.integrations._runners import Runners, clients_from_url
from agent_memory.integrations.llama_index import ops, scripts
from agent_memory.integrations.llama_index.codec import (
    decode_message,
    encode_message,
    encode_messages,
)

logger = logging.getLogger(__name__)

_OWNER = "AgentMemoryDBChatStore"

#: The key segment of the DB chat stores: ``{name}:li_db:{key}``.
SEGMENT = "li_db"

#: Ids are exact scores only below 2**53; a count or id past it means the same as it (no
#: chat holds that many messages).
_MAX = 2**53

#: The sign of a status's scores.
_SIGN = {MessageStatus.ACTIVE: 1, MessageStatus.ARCHIVED: -1}

#: Messages read back and how many stored entries were corrupt (skipped).
Read = tuple[list[ChatMessage], int]

T = TypeVar("T")


# -- layout (pure) -------------------------------------------------------------------------


def chat_key(name: str, key: str) -> str:
    """The sorted set holding chat ``key`` of cache name ``name`` (pure)."""
    return log_key(name, SEGMENT, key)


def decode_entry(raw: object) -> ChatMessage | None:
    """The message a member ``<id>:<JSON>`` holds, or ``None`` when it is corrupt (pure)."""
    if isinstance(raw, (bytearray, memoryview)):
        raw = bytes(raw)
    if isinstance(raw, bytes):
        head, sep, body = raw.partition(b":")
        well_formed = bool(sep) and head.isdigit()
        return decode_message(body) if well_formed else None
    if isinstance(raw, str):
        text_head, text_sep, text_body = raw.partition(":")
        well_formed = bool(text_sep) and text_head.isascii() and text_head.isdigit()
        return decode_message(text_body) if well_formed else None
    return None


def _range(key: str, status: MessageStatus, offset: int, count: int) -> Command:
    """One status's members, oldest first, from ``offset`` on (``count`` -1: all)."""
    if status is MessageStatus.ACTIVE:
        return Command(("ZRANGE", key, "(0", "+inf", "BYSCORE", "LIMIT", offset, count))
    # archived scores are -id: the oldest is the one nearest to 0
    return Command(("ZRANGE", key, "(0", "-inf", "BYSCORE", "REV", "LIMIT", offset, count))


def _count(key: str, status: MessageStatus | None) -> Command:
    if status is None:
        return Command(("ZCARD", key))
    if status is MessageStatus.ACTIVE:
        return Command(("ZCOUNT", key, "(0", "+inf"))
    return Command(("ZCOUNT", key, "-inf", "(0"))


# -- operations (generators, no I/O) -------------------------------------------------------


def read(
    tier: TierCore,
    key: str,
    status: MessageStatus | None,
    offset: int,
    count: int,
    ttl_ms: int | None,
) -> Operation[Read]:
    """The valid messages of ``status`` (``None``: all), oldest first, from ``offset``
    on, at most ``count`` (-1: all), and how many corrupt entries were skipped.

    Raises:
        ReplyParseError: the reply is not a list.
    """
    if status is None:
        args = (offset, count)
        raw = yield from ops.script_on_key(tier, key, scripts.DB_GET_ALL, args, ttl_ms, READS)
    else:
        raw = yield from ops.on_key(tier, key, _range(key, status, offset, count), ttl_ms, READS)
    return decode_entries(raw, decode_entry)


def count(
    tier: TierCore, key: str, status: MessageStatus | None, ttl_ms: int | None
) -> Operation[int]:
    """How many entries of ``status`` (``None``: all) the chat stores.

    Raises:
        ReplyParseError: the reply is not an integer.
    """
    raw = yield from ops.on_key(tier, key, _count(key, status), ttl_ms, READS)
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise ReplyParseError(f"a count of chat {key} replied with {raw!r}")
    return raw


def add(
    tier: TierCore,
    key: str,
    encoded: Sequence[bytes],
    status: MessageStatus,
    ttl_ms: int | None,
    *,
    replace: bool,
) -> Operation[None]:
    """Append encoded messages with ``status`` (after deleting every message of the
    chat when ``replace``), atomically, each with the next id."""
    source = scripts.DB_SET if replace else scripts.DB_ADD
    args = (_SIGN[status], *encoded)
    yield from ops.script_on_key(tier, key, source, args, ttl_ms, WRITES)
    tier.note_stored(sum(map(len, encoded)))


def take_oldest(
    tier: TierCore, key: str, n: int, ttl_ms: int | None, *, archive: bool
) -> Operation[Read]:
    """Archive (or delete) the ``n`` oldest ACTIVE entries; their valid messages, oldest
    first, and how many of them were corrupt.

    Raises:
        ReplyParseError: the reply is not a list.
    """
    args = (n, int(archive))
    raw = yield from ops.script_on_key(tier, key, scripts.DB_TAKE_OLDEST, args, ttl_ms, WRITES)
    return decode_entries(raw, decode_entry)


def take_id(
    tier: TierCore, key: str, idx: int, ttl_ms: int | None
) -> Operation[tuple[ChatMessage | None, int]]:
    """Delete message ``idx`` (either status); it (``None`` when there was none or it was
    corrupt) and ``1`` when it was corrupt."""
    raw = yield from ops.script_on_key(tier, key, scripts.DB_TAKE_ID, (idx,), ttl_ms, WRITES)
    if raw is None:
        return None, 0
    message = decode_entry(raw)
    return message, int(message is None)


def delete(
    tier: TierCore, key: str, status: MessageStatus | None, ttl_ms: int | None
) -> Operation[None]:
    """Delete the chat's messages of ``status`` (``None``: the whole chat)."""
    if status is None:
        yield from ops.on_key(tier, key, Command(("UNLINK", key)), None, WRITES)
        return
    low, high = ("(0", "+inf") if status is MessageStatus.ACTIVE else ("-inf", "(0")
    yield from ops.on_key(tier, key, Command(("ZREMRANGEBYSCORE", key, low, high)), ttl_ms, WRITES)


# -- arguments (pure) ----------------------------------------------------------------------


def _status(value: object) -> MessageStatus:
    if isinstance(value, MessageStatus):
        return value
    raise InvalidInputError(f"status must be a MessageStatus, got {value!r}", field="status")


def _status_filter(value: object) -> MessageStatus | None:
    return None if value is None else _status(value)


def _non_negative(value: object, field: str) -> int:
    """A count argument (``limit``, ``offset``, ``n``): an int >= 0, capped at 2**53."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return min(value, _MAX)
    raise InvalidInputError(f"{field} must be an int >= 0, got {value!r}", field=field)


def _id(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidInputError(f"idx must be an int (a message id), got {value!r}", field="idx")


def _check_store_name(name: object) -> str:
    """A cache name in which ``:li_db`` cannot occur, so that no two (name, key) pairs
    share a sorted set and a name's ``SCAN`` prefix matches only its own chats.

    Raises:
        InvalidInputError: a bad cache name, or one containing ``:li_db``.
    """
    checked = check_name(name)
    if f":{SEGMENT}" in checked:
        raise InvalidInputError(
            f"name must not contain ':{SEGMENT}' (its chats' keys would be another "
            f"name's), got {checked!r}",
            field="name",
        )
    return checked


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
        checked = _check_store_name(name)
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
        _check_store_name(name)
        ttl_ms(ttl)
        client, async_client = clients_from_url(url, **client_options)
        store = cls(name=name, client=client, async_client=async_client, ttl=ttl, registry=registry)
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
        k, wanted = self.chat_key(key), _status_filter(status)
        start = 0 if offset is None else _non_negative(offset, "offset")
        most = -1 if limit is None else _non_negative(limit, "limit")
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
        k, wanted = self.chat_key(key), _status_filter(status)
        return await self._arun(lambda: count(self._runners.tier, k, wanted, self._ttl_ms))

    async def get_keys(self) -> list[str]:
        """Every key of this ``name`` that holds messages, sorted (``SCAN`` on every
        primary).

        Raises:
            AgentMemoryError: a failure of the server.
        """
        prefix = chat_key(self.name, "")
        return await self._arun(lambda: ops.keys_under(prefix))

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
        k, wanted = self.chat_key(key), _status(status)
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
        k, wanted = self.chat_key(key), _id(idx)
        if not 0 < wanted < _MAX:
            return None  # no message has such an id
        taken = await self._arun(lambda: take_id(self._runners.tier, k, wanted, self._ttl_ms))
        return self._note(taken, k)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete chat ``key``'s messages of ``status`` (``None``: the whole chat).

        Raises:
            InvalidInputError: a bad key or status.
            AgentMemoryError: a failure of the server.
        """
        k, wanted = self.chat_key(key), _status_filter(status)
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
        k, most = self.chat_key(key), _non_negative(n, "n")
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


__all__ = ["SEGMENT", "AgentMemoryDBChatStore", "chat_key", "decode_entry"]
