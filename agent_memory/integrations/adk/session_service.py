"""``AgentMemorySessionService``: ADK sessions, events and state in Valkey or Redis."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from typing_extensions import override

from agent_memory.core.checks import check_ttl_seconds
from agent_memory.core.client_factory import (
    client_from_url,
    close_async_client,
    released_on_failure,
)
from agent_memory.core.clients import AsyncExecutor, is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.core.runner import run_async
from agent_memory.errors import InvalidInputError, StoreClosedError
from agent_memory.integrations.adk import codec, session_ops
from agent_memory.integrations.adk.layout import DEFAULT_NAME, Layout, check_id, check_name

STALE_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)


class AgentMemorySessionService(BaseSessionService):
    """An ADK session service on any Valkey or Redis (no module), standalone or cluster.

    Semantics are ``InMemorySessionService``'s: ``app:`` state is shared by every
    user of an app, ``user:`` state by every session of one ``(app_name, user_id)``,
    other keys belong to one session and ``temp:`` keys are never stored (they stay on
    the caller's session object for the rest of the invocation). Sessions are owned by
    ``(app_name, user_id)``: the same session id under another user or app is another
    session, and no call for one pair reads or writes another pair's keys (the key
    layout is in :mod:`agent_memory.integrations.adk.layout`). Session ids are
    stripped of surrounding spaces, as ADK does.

    Like ADK's database services, ``append_event`` refuses a stale session object
    (``StaleSessionError``): one whose session was appended to by someone else since it
    was read, i.e. the stored update time is later than its ``last_update_time`` and
    the stored last event is not its last event. Appending the same event again (same
    id, same content) is a no-op, as in ``InMemorySessionService``.

    Args:
        client: a ``valkey.asyncio`` or ``redis.asyncio`` client (standalone or
            cluster; RESP2 or RESP3; ``decode_responses`` on or off). Never closed
            unless :meth:`from_url` created it.
        name: the key prefix (``{name}:adk:...``); services with different names share
            nothing.
        ttl: seconds a session (its events and state), a user's ``user:`` state and an
            app's ``app:`` state (and list of users) live after their last read or
            write, a read or write of a session counting for its user's and its app's
            keys (at most ten years); ``None`` (the default): kept until deleted.
        clock: ``() -> seconds since the epoch`` for creation times (tests).

    Raises:
        InvalidInputError: no asyncio client, a bad name, or a TTL that is not a finite
            number of seconds in (0, ten years].
    """

    def __init__(
        self,
        client: Any,
        *,
        name: str = DEFAULT_NAME,
        ttl: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if client is None or not is_async_client(client):
            raise InvalidInputError(
                "client must be a valkey.asyncio / redis.asyncio client", field="client"
            )
        seconds = check_ttl_seconds(ttl)
        if clock is not None and not callable(clock):
            raise InvalidInputError("clock must be callable or None", field="clock")
        self._layout = Layout(check_name(name))
        self._ttl_ms = 0 if seconds is None else max(1, math.ceil(seconds * 1000))
        self._clock = clock or time.time
        self._executor = AsyncExecutor(client)
        self._owned = False
        self._closed = False

    @classmethod
    def from_url(
        cls, url: str, *, name: str = DEFAULT_NAME, ttl: float | None = None, **client_options: Any
    ) -> AgentMemorySessionService:
        """A service with its own asyncio client for ``url``, closed by :meth:`close`.

        Raises:
            InvalidInputError: a bad URL, client option, name or TTL.
        """
        check_name(name), check_ttl_seconds(ttl)  # before a client exists to be closed
        client = client_from_url(url, asyncio=True, **client_options)
        with released_on_failure(client):
            service = cls(client, name=name, ttl=ttl)
        service._owned = True
        return service

    @property
    def name(self) -> str:
        """The key prefix."""
        return self._layout.name

    async def close(self) -> None:
        """Close the client if :meth:`from_url` created it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._owned:
            await close_async_client(self._executor.client)

    async def __aenter__(self) -> AgentMemorySessionService:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _run(self, op: Operation[T]) -> T:
        if self._closed:
            op.close()
            raise StoreClosedError("this AgentMemorySessionService is closed")
        return await run_async(op, self._executor)

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session (a random UUID id unless ``session_id`` is given).

        ``app:`` and ``user:`` keys of ``state`` update the shared states, ``temp:``
        keys are dropped; the returned session carries the merged state. One round
        trip (two with ``app:`` keys).

        Raises:
            AlreadyExistsError: (ADK's) the user already has a session with that id.
            InvalidInputError: a bad app name, user id or session id, or a state value
                with no JSON form; nothing was written.
            AgentMemoryError: the server failed (unavailable, timeout, error reply).
        """
        app, user = check_id(app_name, "app_name"), check_id(user_id, "user_id")
        sid = session_id.strip() if isinstance(session_id, str) else session_id
        sid = check_id(sid, "session_id") if sid else str(uuid.uuid4())
        op = session_ops.create(self._layout, app, user, sid, state, self._clock(), self._ttl_ms)
        session = await self._run(op)
        if session is None:
            raise AlreadyExistsError(f"Session with id {sid} already exists.")
        return session

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with merged state and its events (filtered by ``config``:
        the last ``num_recent_events``, then those from ``after_timestamp`` on), or
        ``None``. One round trip.

        Raises:
            InvalidInputError: a bad app name, user id, session id or config (an
                ``after_timestamp`` that is NaN).
            ReplyParseError: a stored event or state value is unreadable.
            AgentMemoryError: the server failed.
        """
        app, user = check_id(app_name, "app_name"), check_id(user_id, "user_id")
        sid = check_id(
            session_id.strip() if isinstance(session_id, str) else session_id, "session_id"
        )
        if config is not None and not isinstance(config, GetSessionConfig):
            raise InvalidInputError(
                f"config must be a GetSessionConfig or None, got {type(config).__name__}",
                field="config",
            )
        after = None if config is None else config.after_timestamp
        if after is not None and math.isnan(after):
            raise InvalidInputError("config.after_timestamp must not be NaN", field="config")
        return await self._run(session_ops.get(self._layout, app, user, sid, config, self._ttl_ms))

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The sessions of a user (of every user of the app when ``user_id`` is
        ``None``), without events, with merged state, oldest update first.

        Raises:
            InvalidInputError: a bad app name or user id.
            AgentMemoryError: the server failed.
        """
        app = check_id(app_name, "app_name")
        user = None if user_id is None else check_id(user_id, "user_id")
        sessions = await self._run(session_ops.list_sessions(self._layout, app, user))
        return ListSessionsResponse(sessions=sessions)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session and its events (nothing happens when there is none); the
        ``app:`` and ``user:`` states stay. One round trip.

        Raises:
            InvalidInputError: a bad app name, user id or session id.
            AgentMemoryError: the server failed.
        """
        app, user = check_id(app_name, "app_name"), check_id(user_id, "user_id")
        sid = check_id(
            session_id.strip() if isinstance(session_id, str) else session_id, "session_id"
        )
        await self._run(session_ops.delete(self._layout, app, user, sid))

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The ``user:`` state of ``(app_name, user_id)``, keys without the prefix.

        Raises:
            InvalidInputError: a bad app name or user id.
            AgentMemoryError: the server failed.
        """
        app, user = check_id(app_name, "app_name"), check_id(user_id, "user_id")
        return await self._run(session_ops.user_state(self._layout, app, user))

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        """Store ``event`` and its state delta, then apply both to ``session``.

        Partial events are returned untouched. ``temp:`` keys of the delta reach only
        ``session.state``; the stored event and the returned one carry no ``temp:``
        key. One round trip (two when the delta has ``app:`` keys, which are written
        once the event is stored). ``session.last_update_time`` becomes the event's
        timestamp.

        Raises:
            SessionNotFoundError: (ADK's) the session does not exist.
            StaleSessionError: (ADK's) the session was appended to since ``session``
                was read; nothing was written.
            InvalidInputError: not a Session / Event, an event timestamp that is not
                finite, or a state value with no JSON form; nothing was written.
            AgentMemoryError: the server failed.
        """
        if not isinstance(session, Session) or not isinstance(event, Event):
            raise InvalidInputError("append_event needs an ADK Session and Event", field="event")
        if event.partial:
            return event
        if not math.isfinite(event.timestamp):  # stored as JSON null: an unreadable event
            raise InvalidInputError(
                f"event timestamp must be a finite number of seconds, got {event.timestamp!r}",
                field="event",
            )
        stored = codec.persisted_event(event)
        op = session_ops.append(
            self._layout, session, event.id, codec.encode_event(stored), event.timestamp,
            stored.actions.state_delta if stored.actions else None, self._ttl_ms,
        )  # fmt: skip
        status, _ = await self._run(op)
        if status == session_ops.MISSING:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        if status == session_ops.STALE:
            raise StaleSessionError(STALE_MESSAGE)
        if status == session_ops.DUPLICATE and any(
            e == event for e in session.events if e.id == event.id
        ):
            return event
        await super().append_event(session=session, event=event)
        session.last_update_time = event.timestamp
        return event


__all__ = ["AgentMemorySessionService"]
