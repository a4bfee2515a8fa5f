"""A LangChain ``BaseChatMessageHistory`` on agent-memory's session tier (the
``langchain`` extra).

>>> history = AgentMemoryChatMessageHistory("user-42", client=client, name="my_agent")
>>> RunnableWithMessageHistory(chain, lambda sid: AgentMemoryChatMessageHistory(
...     sid, client=client, async_client=async_client, name="my_agent"))

The history of session ``session_id`` is one field (``key``, default ``"messages"``) of
the session tier's thread hash ``{name}:session:{session_id}``: a JSON array of
``message_to_dict`` objects, oldest first. So it is also
``SessionStore.get(session_id, "messages")``, it lives beside the state an application
keeps in the same thread, and it shares that thread's sliding TTL (``ttl``, default one
day, refreshed by every read and write; ``None``: kept until deleted).

* ``messages`` / ``aget_messages``: one round trip (``HGET`` + ``PEXPIRE``).
* ``add_messages`` / ``aadd_messages``: one round trip; a server-side script appends
  to the array atomically, so concurrent writers (processes, replicas of a service) lose
  no message. Adding no message sends nothing.
* ``clear`` / ``aclear``: deletes the field alone (the thread's other keys stay).
* Assigning ``history.messages = [...]`` replaces the whole history (one round trip).

Session ids are any non-empty text (up to 1024 characters) and are used verbatim in the
key, like the session tier's thread ids: the same id in another ``name`` is another
history. So a ``name`` holding ``:session`` followed by ``:`` or at its end is refused
(with it, name ``a:session:b`` and session ``c`` would share the key of name ``a`` and
session ``b:session:c``). Reads and writes count as ``session:reads`` /
``session:writes`` in ``{name}:__stats``. Cluster-safe: every command touches the one
thread key.

An element of the array that is not a LangChain message (another writer's, or one of a
message type this ``langchain-core`` does not know) is *corrupt*: reads skip it, log it
and count it (``corrupt_entries`` of the tier's metrics, and :attr:`skipped
<AgentMemoryChatMessageHistory.skipped>`); appends leave it in place. A message whose
text holds a lone surrogate is stored with JSON escapes (by appends and by assigning
``messages``) and reads back equal. A field that holds something other than a JSON
array is not guessed at: reads and appends raise ``ReplyParseError`` naming it, and
leave it as it is until ``clear()`` or an assignment of ``messages`` replaces it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from prometheus_client import CollectorRegistry

from agent_memory.cache.keys import check_name, check_text, plain, ttl_ms
from agent_memory.cache.session import DEFAULT_SESSION_TTL, SessionCore
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core import replies
from agent_memory.core.client_factory import released_on_failure
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.integrations._keys import check_name_for_segment
from agent_memory.integrations._runners import Runners, clients_from_url

logger = logging.getLogger(__name__)

DEFAULT_KEY = "messages"
#: The key segment of the session tier's threads: ``{name}:session:{session_id}``.
SEGMENT = "session"

# KEYS = [thread hash]; ARGV = [field, JSON array of the new messages, TTL ms or ""].
# Appends at the text level (no decoding): returns 1, or -1 when the field holds
# something other than a JSON array (then nothing is written).
APPEND_MESSAGES = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
local added = ARGV[2]
local merged
if (not current) or string.match(current, '^%s*%[%s*%]%s*$') then
  merged = added
else
  local head = string.match(current, '^%s*(%[.*)%]%s*$')
  if not head then return -1 end
  merged = head .. ',' .. string.sub(added, 2)
end
redis.call('HSET', KEYS[1], ARGV[1], merged)
if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
"""


def encode_messages(messages: Sequence[BaseMessage]) -> str:
    """The JSON array stored for ``messages`` (pure): UTF-8 text, non-ASCII kept, except
    that messages holding a lone surrogate are written with ASCII escapes (which read
    back as the same text).

    Raises:
        InvalidInputError: not a sequence of ``BaseMessage``, or content that is not JSON.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages must be a list of BaseMessage", field="messages")
    dicts = []
    for message in messages:
        if not isinstance(message, BaseMessage):
            raise InvalidInputError(
                f"messages holds a {type(message).__name__}, not a BaseMessage",
                field="messages",
            )
        dicts.append(message_to_dict(message))
    data = plain(dicts, "messages")
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it as a JSON escape
        text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    return text


def decode_message(element: Any) -> BaseMessage | None:
    """The message one (JSON-decoded) element of the array holds, or ``None`` when the
    element is corrupt: not a ``message_to_dict`` object this ``langchain-core`` can
    read (pure)."""
    try:
        return messages_from_dict([element])[0]
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        return None


def decode_messages(stored: Any, *, session_id: str, key: str) -> tuple[list[BaseMessage], int]:
    """The messages of the stored (JSON-decoded) field, oldest first, and how many of
    its elements were corrupt (skipped); ``([], 0)`` when the field is absent (pure).

    Raises:
        ReplyParseError: the field holds something other than a JSON array.
    """
    if stored is None:
        return [], 0
    if not isinstance(stored, list):
        raise ReplyParseError(
            f"session {session_id!r} field {key!r} does not hold a list of LangChain "
            f"messages (a {type(stored).__name__}, not a JSON array)"
        )
    messages = []
    for element in stored:
        message = decode_message(element)
        if message is not None:
            messages.append(message)
    return messages, len(stored) - len(messages)


def _append(core: SessionCore, session_id: str, key: str, payload: str) -> Operation[None]:
    hkey = core.tier.layout.session(session_id)
    ttl = "" if core.ttl_ms is None else str(core.ttl_ms)
    command = Command(("EVAL", APPEND_MESSAGES, "1", hkey, key, payload, ttl))
    got = yield from batch_with_stats(
        core.tier.layout, core.tier.buffer, [command], {"session:writes": 1}
    )
    raise_first_error(got)
    if replies.integer(got[0]) < 0:
        raise ReplyParseError(
            f"session {session_id!r} field {key!r} does not hold a JSON array: not appending to it"
        )
    core.tier.note_stored(len(payload.encode("utf-8")))


def _put(core: SessionCore, session_id: str, key: str, payload: str) -> Operation[None]:
    """Replace the field with ``payload`` (the text :func:`encode_messages` made)."""
    hkey = core.tier.layout.session(session_id)
    # the refresh leaves a key of another type (HSET refused) as it is
    commands = [Command(("HSET", hkey, key, payload)), core.refresh(hkey)]
    got = yield from batch_with_stats(
        core.tier.layout, core.tier.buffer, commands, {"session:writes": 1}
    )
    raise_first_error(got)
    core.tier.note_stored(len(payload.encode("utf-8")))


class AgentMemoryChatMessageHistory(BaseChatMessageHistory):
    """The chat history of one session, on the session tier (see the module doc).

    The constructor does no I/O: build one per session (``RunnableWithMessageHistory``'s
    factory) over shared clients.

    Args:
        session_id: the session (thread) id: non-empty text, used verbatim in the key.
        client: a blocking ``valkey``/``redis`` client (standalone or cluster), serving the
            blocking methods (and the async ones in a worker thread when
            ``async_client`` is not given).
        async_client: a ``valkey.asyncio``/``redis.asyncio`` client, serving the async
            methods.
        name: the cache name (key prefix), the ``name`` of the application's tiers.
        key: the thread field holding the messages.
        ttl: sliding lifetime of the thread in seconds (``None``: no expiry).
        registry: a ``prometheus_client.CollectorRegistry`` for the tier's metrics.

    Raises:
        InvalidInputError: no client or one of the wrong kind, a bad session id, name
            (one holding ``:session`` followed by ``:`` or at its end included), key or
            TTL.
    """

    def __init__(
        self,
        session_id: str,
        *,
        client: Any = None,
        async_client: Any = None,
        name: str,
        key: str = DEFAULT_KEY,
        ttl: float | None = DEFAULT_SESSION_TTL,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__()
        self._session_id = check_text(session_id, field="session_id")
        self._key = check_text(key, field="key")
        self._core = SessionCore(name, ttl)
        check_name_for_segment(self._core.tier.layout.name, SEGMENT)
        self._skipped = 0
        self._lock = threading.Lock()
        self._runners = Runners(
            client,
            async_client,
            name=name,
            tier="session",
            core=self._core,
            owner=type(self).__name__,
            registry=registry,
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        session_id: str,
        *,
        name: str,
        key: str = DEFAULT_KEY,
        ttl: float | None = DEFAULT_SESSION_TTL,
        **client_options: Any,
    ) -> AgentMemoryChatMessageHistory:
        """A history with its own blocking and asyncio clients for ``url`` (closed by
        :meth:`close` / :meth:`aclose`). To serve many sessions, share clients instead.

        Raises:
            InvalidInputError: a bad URL, client option, session id, name, key or TTL.
        """
        check_text(session_id, field="session_id")  # before a client exists
        check_name_for_segment(check_name(name), SEGMENT)
        check_text(key, field="key")
        ttl_ms(ttl)
        client, async_client = clients_from_url(url, **client_options)
        with released_on_failure(client, async_client):
            result = cls(
                session_id, client=client, async_client=async_client, name=name, key=key, ttl=ttl
            )
        result._runners.owned = True
        return result

    @property
    def session_id(self) -> str:
        """The session this history belongs to."""
        return self._session_id

    @property
    def key(self) -> str:
        """The thread field holding the messages."""
        return self._key

    @property
    def skipped(self) -> int:
        """How many corrupt stored elements reads of this object have skipped so far."""
        return self._skipped

    def close(self) -> None:
        """Close the blocking client if :meth:`from_url` created it (idempotent)."""
        self._runners.close()

    async def aclose(self) -> None:
        """Close both clients if :meth:`from_url` created them (idempotent)."""
        await self._runners.aclose()

    def _read(self) -> Operation[list[BaseMessage]]:
        stored = yield from self._core.get(self._session_id, self._key)
        messages, skipped = decode_messages(stored, session_id=self._session_id, key=self._key)
        if skipped:
            with self._lock:
                self._skipped += skipped
            logger.warning(
                "skipped %d corrupt element(s) of chat history %s field %r",
                skipped, self._core.tier.layout.session(self._session_id), self._key,
            )  # fmt: skip
            self._core.tier.buffer.note("corrupt_entries", skipped)
        return messages

    def _replace(self, messages: Sequence[BaseMessage]) -> Operation[None]:
        payload = encode_messages(messages)
        yield from _put(self._core, self._session_id, self._key, payload)

    def _clear(self) -> Operation[None]:
        yield from self._core.delete(self._session_id, self._key)

    @property
    def messages(self) -> list[BaseMessage]:
        """The messages of the session, oldest first (``[]`` when it has none).

        Assigning a list replaces the stored history. Elements that are not LangChain
        messages (another writer's) are skipped, logged and counted (:attr:`skipped`,
        ``corrupt_entries``).

        Raises:
            CapabilityError: only an asyncio client was given.
            ReplyParseError: the field holds something other than a JSON array.
            AgentMemoryError: a failure of the server (unavailable, timeout, ...).
        """
        return self._runners.run(self._read)

    @messages.setter
    def messages(self, messages: Sequence[BaseMessage]) -> None:
        self._runners.run(lambda: self._replace(messages))

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages` (same errors, but never CapabilityError)."""
        return await self._runners.arun(self._read)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` atomically, in one round trip (none for an empty list).

        Raises:
            CapabilityError: only an asyncio client was given.
            InvalidInputError: not a list of ``BaseMessage``, or content that is not JSON.
            ReplyParseError: the field holds something other than a JSON array.
            AgentMemoryError: a failure of the server.
        """
        payload = encode_messages(messages)
        if payload != "[]":
            self._runners.run(lambda: _append(self._core, self._session_id, self._key, payload))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages` (same errors, but never CapabilityError)."""
        payload = encode_messages(messages)
        if payload != "[]":
            await self._runners.arun(
                lambda: _append(self._core, self._session_id, self._key, payload)
            )

    def clear(self) -> None:
        """Delete the session's messages (the thread's other keys stay).

        Raises:
            CapabilityError: only an asyncio client was given.
            AgentMemoryError: a failure of the server.
        """
        self._runners.run(self._clear)

    async def aclear(self) -> None:
        """Async :meth:`clear` (same errors, but never CapabilityError)."""
        await self._runners.arun(self._clear)


__all__ = [
    "APPEND_MESSAGES",
    "DEFAULT_KEY",
    "SEGMENT",
    "AgentMemoryChatMessageHistory",
    "decode_message",
    "decode_messages",
    "encode_messages",
]
