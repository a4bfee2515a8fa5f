"""``AgentMemoryConversationStore``: pydantic-ai's ``ConversationStore`` surface
(construction, client, lifecycle, input checks, counting what reads skip); the
operations are :mod:`.ops` (see the package docstring)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_name, check_text
from agent_memory.core.client_factory import client_from_url, released_on_failure
from agent_memory.core.clients import is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.errors import InvalidInputError, StoreClosedError
from agent_memory.integrations._keys import check_name_for_segment
from agent_memory.integrations._runners import Runners
from agent_memory.integrations.pydantic_ai.codec import encode_record
from agent_memory.integrations.pydantic_ai.conversation_store.checks import (
    check_entry_id,
    check_limit,
    check_record,
    check_revision,
    check_scope,
    encoded_entries,
)
from agent_memory.integrations.pydantic_ai.conversation_store.layout import SEGMENT, Layout
from agent_memory.integrations.pydantic_ai.conversation_store.ops import (
    drop_record,
    list_records,
    load_entry,
    load_history,
    load_record,
    store_record,
)

# The logger of the module this package was, so logging configurations keep working.
logger = logging.getLogger("agent_memory.integrations.pydantic_ai.conversation_store")

#: The event counting index entries dropped because their record is gone (the name the
#: memory store gives the registry entries it drops for the same reason).
GHOST_ENTRIES = "ghost_entries"

_OWNER = "AgentMemoryConversationStore"


# -- the store -----------------------------------------------------------------------------


class _Core:
    __slots__ = ("tier",)

    def __init__(self, name: str) -> None:
        self.tier = TierCore(name)


class AgentMemoryConversationStore(ConversationStore):
    """pydantic-ai's ``ConversationStore`` on Valkey / Redis (see the module doc).

    Use it as any ``ConversationStore``: ``load``, ``save``, ``branch``, ``fork``,
    ``list_conversations`` and ``delete`` behave as ``InMemoryConversationStore``'s do,
    across processes and with optimistic concurrency on the server.

    Args:
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client, or a blocking ``valkey``
            / ``redis`` one (then run in a worker thread); standalone or cluster. It is
            left open.
        name: the cache name (key prefix): the same conversation id under another name
            is another conversation. It must not contain ``:pai_conv`` followed by ``:``
            or at its end (its keys could be another name's).
        registry: a ``prometheus_client.CollectorRegistry`` for the store's metrics.

    Every method raises :class:`~agent_memory.errors.InvalidInputError` for a bad id,
    scope, limit or record (nothing is written), pydantic-ai's ``ConversationConflict``
    / ``UserError`` where ``InMemoryConversationStore`` does, a ``KeyError``
    (:class:`~agent_memory.errors.NotFoundError`) for a missing entry, and an
    :class:`~agent_memory.errors.AgentMemoryError` for a failure of the server
    (unavailable, timeout, :class:`~agent_memory.errors.WrongTypeError` for a key of
    another type, :class:`~agent_memory.errors.ReplyParseError` for an unreadable record).

    Raises:
        InvalidInputError: something that is not a client, or a bad name.
    """

    def __init__(
        self, *, client: Any, name: str, registry: CollectorRegistry | None = None
    ) -> None:
        # the name must not let two stores share a key (see check_name_for_segment)
        self._name = check_name_for_segment(check_name(name), SEGMENT, hex_keys=False)
        if client is None or not hasattr(client, "execute_command"):
            raise InvalidInputError(
                "client must be a valkey / redis client (asyncio or blocking)", field="client"
            )
        asynchronous = is_async_client(client)
        self._runners = Runners(
            None if asynchronous else client,
            client if asynchronous else None,
            name=self._name,
            tier="session",
            core=_Core(self._name),
            owner=_OWNER,
            registry=registry,
        )
        self._layout = Layout(self._name)
        self._closed = False
        self._skipped = 0
        self._lock = threading.Lock()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        name: str,
        registry: CollectorRegistry | None = None,
        **client_options: Any,
    ) -> AgentMemoryConversationStore:
        """A store with its own asyncio client for ``url`` (no I/O yet), closed by
        :meth:`close`. To serve many stores, share one client instead.

        Raises:
            InvalidInputError: a bad URL, client option or name.
        """
        check_name_for_segment(check_name(name), SEGMENT, hex_keys=False)  # before a client exists
        client = client_from_url(url, asyncio=True, **client_options)
        with released_on_failure(client):  # e.g. a bad registry
            store = cls(client=client, name=name, registry=registry)
        store._runners.owned = True
        return store

    @property
    def name(self) -> str:
        """The cache name (key prefix)."""
        return self._name

    @property
    def client(self) -> Any:
        """The client the store runs on."""
        return self._runners.async_client or self._runners.client

    @property
    def layout(self) -> Layout:
        """The store's keys."""
        return self._layout

    @property
    def skipped(self) -> int:
        """How many corrupt entries and records this store's reads have skipped so far."""
        return self._skipped

    async def _run(self, make: Callable[[], Operation[T]]) -> T:
        if self._closed:
            raise StoreClosedError("this AgentMemoryConversationStore was closed")
        return await self._runners.arun(make)

    def _note_skipped(self, skipped: int, what: str) -> None:
        if skipped:
            with self._lock:
                self._skipped += skipped
            logger.warning(
                "skipped %d corrupt %s of conversation store %s", skipped, what, self._name
            )
            self._runners.note_corrupt(skipped)

    def _note_dropped(self, dropped: int) -> None:
        if dropped:
            logger.info(
                "conversation store %s: dropped %d index entr(y/ies) naming no stored record "
                "(deleted or evicted outside the store)",
                self._name, dropped,
            )  # fmt: skip
            self._runners.note_event(GHOST_ENTRIES, dropped)

    # -- the storage primitives -------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The record of a conversation, or ``None`` if the store doesn't have it.

        Raises:
            InvalidInputError: not a non-empty conversation id.
            ReplyParseError: the stored record cannot be read.
            AgentMemoryError: a failure of the server.
        """
        cid = check_text(conversation_id, field="conversation_id")
        tier, layout = self._runners.tier, self._layout
        return await self._run(lambda: load_record(tier, layout, cid))

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        """The records of ``scope`` (all when ``None``), newest ``updated_at`` first, at
        most ``limit``; unreadable ones are skipped, logged and counted, and index entries
        whose record is gone are dropped from the index, logged and counted
        (``ghost_entries``).

        Raises:
            InvalidInputError: a scope that is not text, a limit that is not a
                non-negative int.
            AgentMemoryError: a failure of the server.
        """
        wanted, most = check_scope(scope), check_limit(limit)
        if most == 0:
            return []
        tier, layout = self._runners.tier, self._layout
        records, skipped, dropped = await self._run(
            lambda: list_records(tier, layout, wanted, most)
        )
        self._note_skipped(skipped, "record(s)")
        self._note_dropped(dropped)
        return records

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Store ``record`` and the entries its history adds, if the stored record's
        revision is ``expected_revision`` (``None``: no record stored).

        Raises:
            ConversationConflict: another revision is stored, a record exists when
                ``expected_revision`` is ``None``, or ``record.head_id`` names an entry
                neither the store nor ``new_entries`` has; nothing is kept.
            InvalidInputError: a bad record, entry or revision, an entry that is its own
                parent or points at a later new entry (its history would loop), an entry
                id stored with another message, or a parent neither stored nor an
                earlier new entry; nothing is written.
            AgentMemoryError: a failure of the server.
        """
        checked = check_record(record)
        expected = (
            None
            if expected_revision is None
            else check_revision(expected_revision, "expected_revision")
        )
        entries = encoded_entries(new_entries)
        encoded = encode_record(checked)
        tier, layout = self._runners.tier, self._layout
        stored = await self._run(
            lambda: store_record(tier, layout, checked, encoded, entries, expected)
        )
        if not stored:
            raise ConversationConflict(checked.conversation_id)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete a conversation's record, and the entries no remaining record reaches.

        Raises:
            ConversationConflict: no record with ``expected_revision`` is stored.
            InvalidInputError: a bad conversation id or revision.
            AgentMemoryError: a failure of the server.
        """
        cid = check_text(conversation_id, field="conversation_id")
        expected = check_revision(expected_revision, "expected_revision")
        tier, layout = self._runners.tier, self._layout
        deleted = await self._run(lambda: drop_record(tier, layout, cid, expected))
        if not deleted:
            raise ConversationConflict(cid)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """The entry with this id.

        Raises:
            NotFoundError: (a ``KeyError``) not stored.
            ReplyParseError: stored, but its message cannot be read.
            InvalidInputError: not an entry id.
            AgentMemoryError: a failure of the server.
        """
        checked = check_entry_id(entry_id, "entry_id")
        tier, layout = self._runners.tier, self._layout
        return await self._run(lambda: load_entry(tier, layout, checked))

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[ConversationEntry]:
        """The entries from the first one up to ``head_id``, in order, or the last
        ``limit`` of them, in two round trips; corrupt ones are skipped, logged and
        counted.

        Raises:
            NotFoundError: (a ``KeyError``) an entry of the history is not stored.
            ReplyParseError: the stored links from ``head_id`` loop (changed by another
                writer: this store never writes one); the walk stops, nothing is read.
            InvalidInputError: a bad entry id or limit.
            AgentMemoryError: a failure of the server.
        """
        most = check_limit(limit)
        if head_id is None or most == 0:
            return []
        head = check_entry_id(head_id, "head_id")
        tier, layout = self._runners.tier, self._layout
        entries, skipped = await self._run(lambda: load_history(tier, layout, head, most))
        self._note_skipped(skipped, "entr(y/ies)")
        return entries

    # -- lifecycle ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close the client if :meth:`from_url` created it (idempotent); the store is
        unusable afterwards. An injected client is left open, and the store usable."""
        if self._runners.owned and not self._closed:
            self._closed = True
            await self._runners.aclose()

    async def __aenter__(self) -> AgentMemoryConversationStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AgentMemoryConversationStore(name={self._name!r})"


__all__ = ["AgentMemoryConversationStore"]
