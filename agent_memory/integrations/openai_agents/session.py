"""An OpenAI Agents SDK ``Session`` on Valkey / Redis (the ``openai-agents`` extra).

>>> session = AgentMemorySession("user-42", client=aclient, name="my_agent")
>>> result = await Runner.run(agent, "Hi", session=session)

The conversation of session ``session_id`` is the list ``{name}:oai_session:{session_id}``
(one JSON item per element, oldest first; see :mod:`.ops`). Session ids are any non-empty
text up to 1024 characters, used verbatim: two different ids are two different keys, and
the same id under another ``name`` is another conversation. Each call is one round trip
of single-key commands (atomic, cluster-safe); ``ttl`` gives every session a sliding
lifetime refreshed by each read and write (``None``, the default: kept until cleared, as
the SDK's SQLite and Redis sessions keep theirs).

The SDK's ``Session`` protocol is asyncio-only, so this class takes a
``valkey.asyncio`` / ``redis.asyncio`` client (standalone or cluster), or builds one with
:meth:`AgentMemorySession.from_url`. Constructing one does no I/O: make one per
conversation over a shared client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from agents import SessionSettings, TResponseInputItem
from agents.memory.session_settings import coerce_session_settings
from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import AsyncTier, TierCore
from agent_memory.cache.keys import check_name, check_text, ttl_ms
from agent_memory.core.client_factory import (
    client_from_url,
    close_async_client,
    released_on_failure,
)
from agent_memory.core.clients import is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.errors import InvalidInputError, StoreClosedError
from agent_memory.integrations._keys import check_name_for_segment
from agent_memory.integrations.openai_agents import ops
from agent_memory.integrations.openai_agents.items import encode_items

if TYPE_CHECKING:
    from agents.memory import Session


class _Core:
    __slots__ = ("tier",)

    def __init__(self, name: str) -> None:
        self.tier = TierCore(name)


class _Runner(AsyncTier):
    """Runs the session operations: one span, one latency observation, mapped errors."""

    __slots__ = ("_core",)

    def __init__(self, client: Any, name: str, registry: CollectorRegistry | None) -> None:
        super().__init__(client, name, "session", registry)
        self._core = _Core(name)

    @property
    def tier(self) -> TierCore:
        return self._core.tier

    async def run(self, op: Operation[T]) -> T:
        return await self._run(op)


def _settings(value: object) -> SessionSettings:
    if value is None:
        return SessionSettings()
    if isinstance(value, SessionSettings):
        return value
    if isinstance(value, Mapping):
        try:  # the SDK's own coercion: unknown fields are rejected, as its sessions do
            return coerce_session_settings(dict(value))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"invalid session_settings: {exc}", field="session_settings"
            ) from None
    raise InvalidInputError(
        "session_settings must be a SessionSettings, a dict or None", field="session_settings"
    )


def _limit(value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise InvalidInputError(f"limit must be an int or None, got {value!r}", field="limit")


async def _settle(coro: Coroutine[Any, Any, T]) -> T:
    """Await a mutation to its outcome even when the caller is cancelled meanwhile, then
    re-raise the cancellation (the SDK's sessions do the same): a cancelled ``add_items``
    either wrote every item or none, and the caller's cancellation is never lost."""
    task = asyncio.ensure_future(coro)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller sees
        raise cancelled
    return task.result()


class AgentMemorySession:
    """The Agents SDK ``Session`` of one conversation (see the module doc).

    Implements the SDK's ``agents.memory.Session`` protocol (``isinstance`` holds).

    Args:
        session_id: the conversation id: non-empty text, used verbatim in the key.
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client (standalone or cluster).
        name: the cache name (key prefix), the ``name`` of the application's tiers.
        ttl: sliding lifetime of the session in seconds (``None``: no expiry).
        session_settings: the SDK's ``SessionSettings`` (or a dict of its fields);
            ``limit`` is the default of :meth:`get_items`.
        registry: a ``prometheus_client.CollectorRegistry`` for the tier's metrics.

    Raises:
        InvalidInputError: a blocking client (the protocol is async) or something that
            is not a client, a bad session id, name, TTL or settings.
    """

    session_id: str
    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        *,
        client: Any,
        name: str,
        ttl: float | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.session_id = check_text(session_id, field="session_id")
        self.session_settings = _settings(session_settings)
        self._name = check_name_for_segment(check_name(name), ops.SEGMENT)
        self._ttl_ms = ttl_ms(ttl)
        if client is None or not is_async_client(client):
            raise InvalidInputError(
                "AgentMemorySession needs an asyncio client (valkey.asyncio / redis.asyncio): "
                "the Agents SDK's Session protocol is async",
                field="client",
            )
        self._runner = _Runner(client, self._name, registry)
        self._owned = False
        self._closed = False

    @classmethod
    def from_url(
        cls,
        url: str,
        session_id: str,
        *,
        name: str,
        ttl: float | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        registry: CollectorRegistry | None = None,
        **client_options: Any,
    ) -> AgentMemorySession:
        """A session with its own asyncio client for ``url`` (closed by :meth:`close`).
        To serve many conversations, share one client instead.

        Raises:
            InvalidInputError: a bad URL, client option, session id, name, TTL or settings.
        """
        # the arguments it can check before a client exists
        check_text(session_id, field="session_id")
        check_name_for_segment(check_name(name), ops.SEGMENT)
        ttl_ms(ttl)
        _settings(session_settings)
        client = client_from_url(url, asyncio=True, **client_options)
        with released_on_failure(client):  # e.g. a bad registry
            session = cls(
                session_id, client=client, name=name, ttl=ttl,
                session_settings=session_settings, registry=registry,
            )  # fmt: skip
        session._owned = True
        return session

    @property
    def name(self) -> str:
        """The cache name (key prefix)."""
        return self._name

    @property
    def client(self) -> Any:
        """The asyncio client."""
        return self._runner.client

    @property
    def key(self) -> str:
        """The list holding this session's items."""
        return ops.session_key(self._name, check_text(self.session_id, field="session_id"))

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this AgentMemorySession was closed")

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's latest ``limit`` items, oldest first (all of them when ``limit``
        and ``session_settings.limit`` are ``None``; none when the limit is ``<= 0``).

        Raises:
            InvalidInputError: ``limit`` is not an int or None, or ``session_settings``
                is not a ``SessionSettings``, a dict of its fields or None.
            StoreClosedError: :meth:`close` closed the client this session created.
            AgentMemoryError: a failure of the server (unavailable, timeout, a key of
                another type...).
        """
        self._check_open()
        wanted = _limit(limit)
        if wanted is None:
            # read as the SDK's sessions read the public attribute (resolve_session_limit):
            # a caller may have assigned a dict of its fields, or None
            wanted = _limit(_settings(self.session_settings).limit)
        tier, key = self._runner.tier, self.key
        items = await self._runner.run(ops.get_items(tier, key, wanted, self._ttl_ms))
        return cast("list[TResponseInputItem]", items)

    async def add_items(self, items: Sequence[TResponseInputItem]) -> None:
        """Append ``items`` atomically, in one round trip (none for an empty list).

        Raises:
            InvalidInputError: not a list of dicts, or an item that is not JSON
                (nothing is written).
            StoreClosedError: :meth:`close` closed the client this session created.
            AgentMemoryError: a failure of the server.
        """
        self._check_open()
        encoded = encode_items(items)
        if encoded:
            op = ops.add_items(self._runner.tier, self.key, encoded, self._ttl_ms)
            await _settle(self._runner.run(op))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the most recent item (``None`` when the session is empty).

        Raises:
            StoreClosedError: :meth:`close` closed the client this session created.
            AgentMemoryError: a failure of the server.
        """
        self._check_open()
        op = ops.pop_item(self._runner.tier, self.key, self._ttl_ms)
        return cast("TResponseInputItem | None", await _settle(self._runner.run(op)))

    async def clear_session(self) -> None:
        """Delete every item of the session.

        Raises:
            StoreClosedError: :meth:`close` closed the client this session created.
            AgentMemoryError: a failure of the server.
        """
        self._check_open()
        await _settle(self._runner.run(ops.clear_session(self._runner.tier, self.key)))

    async def close(self) -> None:
        """Close the client if :meth:`from_url` created it (idempotent); the session is
        unusable afterwards. An injected client is left open, and the session usable."""
        if self._owned and not self._closed:
            self._closed = True
            await close_async_client(self._runner.client)

    async def aclose(self) -> None:
        """Same as :meth:`close`."""
        await self.close()

    async def __aenter__(self) -> AgentMemorySession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AgentMemorySession(session_id={self.session_id!r}, name={self._name!r})"


if TYPE_CHECKING:  # the protocol is structural: this line makes mypy check it
    _protocol_check: type[Session] = AgentMemorySession


__all__ = ["AgentMemorySession"]
