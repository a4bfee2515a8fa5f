"""``AgentMemoryMemoryService``: ADK's long-term memory on a :class:`MemoryStore`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from typing_extensions import override

from agent_memory.core.clients import AsyncExecutor
from agent_memory.core.effects import Operation, T, command, execute_batch
from agent_memory.core.replies import integer, raise_first_error
from agent_memory.core.runner import run_async
from agent_memory.errors import InvalidInputError
from agent_memory.integrations.adk import memory_mapping as mapping
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.ops.write import MemoryInput
from agent_memory.store.validation import check_id, check_importance, check_threshold

logger = logging.getLogger(__name__)

_PAGE = 10_000  # the most memories one listing of a session's memories returns


class AgentMemoryMemoryService(BaseMemoryService):
    """ADK's ``BaseMemoryService`` over an agent-memory :class:`MemoryStore`.

    Each event with text becomes one memory (its text parts joined), in the scope
    ``Scope(namespace=app_name, agent_id=user_id, thread_id=session_id)``, with the
    event's author, timestamp, id and role in its metadata and an id derived from
    ``(app, user, session, event id)``: adding a session again re-writes the same
    memories rather than duplicating them, and deletes those of its events that are no
    longer in it (as ADK's ``InMemoryMemoryService`` replaces a session's events). ``search_memory`` is the store's hybrid
    recall restricted to ``(namespace=app_name, agent_id=user_id)``, so one
    ``(app, user)`` never sees another's memories (see
    :mod:`agent_memory.integrations.adk.memory_mapping`).

    A memory of an event that ``delete_memory`` removed stays deleted: its id joins
    the ``(app, user)``'s set of forgotten event memories
    (``{store}:adk_forgotten:{<digest of app, user>}``), and adding the session (or
    its events) again skips it, at the cost of one ``SMISMEMBER`` per add. An
    explicit ``add_memory`` is a deliberate write and is never skipped. An add that
    has already read the set when a concurrent delete lands may still write the
    memory back once.

    Args:
        store: an asyncio :class:`MemoryStore` (its ``ensure_index`` is called on first
            use); the service never closes it.
        k: the most memories a search returns (ADK's in-memory service returns 10).
        threshold: the recall threshold (``None``: the store's default).
        importance: importance of the memories written (0..1).

    Raises:
        InvalidInputError: not a MemoryStore, or a bad ``k`` / ``threshold`` /
            ``importance``.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        k: int = 10,
        threshold: float | None = None,
        importance: float = 0.5,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise InvalidInputError("store must be an (asyncio) MemoryStore", field="store")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInputError("k must be an int in 1..1000", field="k")
        self._store = store
        self._k = k
        self._threshold = None if threshold is None else check_threshold(threshold)
        self._importance = check_importance(importance)
        self._ensured = False
        self._executor = AsyncExecutor(store.client)

    @property
    def store(self) -> MemoryStore:
        """The underlying store."""
        return self._store

    async def _ready(self) -> MemoryStore:
        if not self._ensured:
            await self._store.ensure_index()
            self._ensured = True
        return self._store

    async def _write(self, items: list[MemoryInput]) -> list[str]:
        """The ids the memories were stored under (with the store's ``dedupe``, an
        equal memory's already in the scope)."""
        if not items:
            return []
        store = await self._ready()
        return await store.remember_many(items)

    async def _run(self, op: Operation[T]) -> T:
        return await run_async(op, self._executor)

    def _forgotten_key(self, app_name: str, user_id: str) -> str:
        return mapping.forgotten_key(self._store.name, app_name, user_id)

    def _options(self, custom_metadata: Mapping[str, object] | None) -> dict[str, Any]:
        return {"importance": self._importance, **mapping.options(custom_metadata)}

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        """Store every event of ``session`` that has text, one memory each, replacing
        what the session stored before, as ADK's ``InMemoryMemoryService`` does: the
        memories of this session's thread (written by this service) whose event is no
        longer in it, a rewound session's say, are deleted once the session's memories
        are written. One embedding batch and pipelined writes, then one listing of the
        session's memories and, when some are stale, one batch deleting them. A session
        without an id is only added (its memories have no thread to replace).

        Raises:
            InvalidInputError: not a Session, or a bad app name / user id.
            AgentMemoryError: the embedder or the server failed (before the stale
                memories are deleted: the session's earlier memories stay).
        """
        if not isinstance(session, Session):
            raise InvalidInputError("session must be an ADK Session", field="session")
        app_name, user_id = session.app_name, session.user_id
        written = await self._add_events(app_name, user_id, session.events, session.id, None)
        if session.id:
            await self._forget_all_but(mapping.scope_of(app_name, user_id, session.id), written)

    async def _forget_all_but(self, scope: Scope, kept: set[str]) -> None:
        """Delete the memories this service wrote in ``scope`` whose ids are not ``kept``."""
        store = await self._ready()
        stale: list[str] = []
        offset, total = 0, 1
        while offset < total:
            page = await store.list(scope, limit=_PAGE, offset=offset, include_suppressed=True)
            stale += [i.id for i in page.items if i.source == mapping.SOURCE and i.id not in kept]
            offset, total = offset + _PAGE, page.total
        if stale:
            await store.forget_many(stale)

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store the events that have text (a delta: nothing else is touched).

        ``custom_metadata`` may carry ``ttl`` (seconds), ``importance`` and ``tags``;
        other keys are ignored. Without ``session_id`` (``None`` or ``""``) the memories
        have no thread. An event's text over the store's ``max_content_bytes`` (32 KiB
        by default) is cut to it at a character boundary, logged and counted
        (``truncated_contents``), and the other events are stored as they are.

        Raises:
            InvalidInputError: a bad app name, user id, event or option; nothing was
                written.
            AgentMemoryError: the embedder or the server failed.
        """
        await self._add_events(app_name, user_id, events, session_id, custom_metadata)

    async def _add_events(
        self,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None,
        custom_metadata: Mapping[str, object] | None,
    ) -> set[str]:
        """Store the events that have text; returns the ids their memories are stored
        under (an event whose memory ``delete_memory`` removed is not written)."""
        mapping.scope_of(app_name, user_id, session_id or None)
        if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
            raise InvalidInputError("events must be a sequence of ADK Events", field="events")
        opts = self._options(custom_metadata)
        items, cut, cleaned = [], 0, 0
        for event in events:
            if not isinstance(event, Event):
                raise InvalidInputError("events must be ADK Event objects", field="events")
            item, was_cut, was_cleaned = mapping.event_input(
                app_name, user_id, session_id or "", event, opts,
                max_bytes=self._store.max_content_bytes,
            )  # fmt: skip
            if item is not None:
                items.append(item)
                cut += was_cut
                cleaned += was_cleaned
        if items:
            key = self._forgotten_key(app_name, user_id)
            forgotten = await self._run(_members(key, [i.id or "" for i in items]))
            items = [i for i, gone in zip(items, forgotten, strict=True) if not gone]
        if cut:
            self._store.report_truncated("ADK event text(s)", cut)
        if cleaned:
            logger.warning(
                "%d ADK event text(s) held control characters or lone surrogates the store "
                "refuses: remembered with spaces / U+FFFD instead",
                cleaned,
            )
        return set(await self._write(items))

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store explicit memory entries (their text parts); an entry with an ``id``
        overwrites the memory stored under that id for this ``(app, user)``.

        Raises:
            InvalidInputError: a bad app name, user id, entry (no text) or option;
                nothing was written.
            AgentMemoryError: the embedder or the server failed.
        """
        mapping.scope_of(app_name, user_id)
        if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
            raise InvalidInputError("memories must be a sequence of MemoryEntry", field="memories")
        opts = self._options(custom_metadata)
        await self._write([mapping.entry_input(app_name, user_id, m, opts) for m in memories])

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The ``k`` memories of ``(app_name, user_id)`` most relevant to ``query``,
        best first (the store's recall: hybrid relevance, recency, importance, gated
        by the threshold). An empty query finds nothing. A memory whose metadata
        ``timestamp`` is no usable time (written by another writer) is returned with
        its creation time, and reported to the store (logged, ``corrupt_records``).

        Raises:
            InvalidInputError: a bad app name, user id or query.
            AgentMemoryError: the embedder or the server failed.
        """
        scope = mapping.scope_of(app_name, user_id)
        if not isinstance(query, str):
            raise InvalidInputError("query must be a str", field="query")
        if not query.strip():
            return SearchMemoryResponse()
        store = await self._ready()
        hits = await store.recall(query, scope=scope, k=self._k, threshold=self._threshold)
        memories = []
        for hit in hits:
            entry, problem = mapping.entry_of(hit.item)
            if problem is not None:  # another writer's metadata: logged and counted
                store.report_corrupt_record(hit.item.id, problem)
            memories.append(entry)
        return SearchMemoryResponse(memories=memories)

    @override
    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Delete one memory by the id ``search_memory`` returned. Nothing happens when
        ``memory_id`` is empty, unknown or belongs to another ``(app, user)``.

        Raises:
            InvalidInputError: a bad app name or user id, or a malformed id.
            AgentMemoryError: the server failed.
        """
        scope = mapping.scope_of(app_name, user_id)
        if not memory_id:
            return
        check_id(memory_id)
        store = await self._ready()
        item = await store.get(memory_id)
        if item is None or item.scope.namespace != scope.namespace:
            return
        if item.scope.agent_id != scope.agent_id:
            return
        if "event_id" in item.metadata:  # an event's memory: never re-added from its session
            await self._run(_remember_forgotten(self._forgotten_key(app_name, user_id), memory_id))
        await store.forget(memory_id)


def _members(key: str, ids: list[str]) -> Operation[list[bool]]:
    """Whether each of ``ids`` is in the set ``key`` (one ``SMISMEMBER``)."""
    replies = yield from execute_batch([command("SMISMEMBER", key, *ids)])
    raise_first_error(replies)
    return [integer(flag) == 1 for flag in replies[0]]


def _remember_forgotten(key: str, memory_id: str) -> Operation[None]:
    replies = yield from execute_batch([command("SADD", key, memory_id)])
    raise_first_error(replies)


__all__ = ["AgentMemoryMemoryService"]
