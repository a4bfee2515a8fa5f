"""CrewAI's memory ``StorageBackend`` on agent-memory (the ``crewai`` extra).

>>> storage = AgentMemoryStorage(SyncMemoryStore(client, "crew_memory", embed),
...                              scope=Scope(namespace="acme", agent_id="research-crew"))
>>> memory = Memory(storage=storage, embedder=CrewAIEmbedder(embed), llm=llm)
>>> crew = Crew(agents=[...], tasks=[...], memory=memory)

CrewAI's unified ``Memory`` calls its storage synchronously, from its own worker threads
(background saves, parallel searches), so the storage runs on a blocking
:class:`~agent_memory.SyncMemoryStore`; the protocol's three async methods (``asave``,
``asearch``, ``adelete``) run on ``async_store`` when one is given, else on the blocking
store in a worker thread. Both run the same operations (:mod:`.ops`, :mod:`.calls`).

CrewAI computes the embeddings (``Memory(embedder=...)``) and the storage keeps them as
given; it re-embeds, with the store's embedder, only a record that arrives without one
(``Memory.update`` of a record read back, which carries none). So give the store and the
``Memory`` the same model: :class:`~.embedder.CrewAIEmbedder` wraps one of this library's
embedders for CrewAI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.integrations.crewai import ops
from agent_memory.integrations.crewai.calls import Plan, T, run_async, run_sync
from agent_memory.integrations.crewai.layout import Binding, check_record
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.sync_store import SyncMemoryStore

_SYNC_NOTE = (
    "CrewAI's Memory calls its storage synchronously from worker threads: pass a "
    "SyncMemoryStore (and the asyncio MemoryStore, if any, as async_store)"
)


class AgentMemoryStorage:
    """CrewAI's ``StorageBackend`` protocol (``crewai.memory.storage.backend``) on a
    memory store, confined to one scope (see :mod:`agent_memory.integrations.crewai`).

    Args:
        store: the blocking :class:`~agent_memory.SyncMemoryStore` every method runs on
            (its index is ensured on the first save or search). Never closed by this
            object unless :meth:`from_url` created it.
        scope: the :class:`~agent_memory.Scope` every record is written to and read
            from: ``namespace`` is the tenant, ``agent_id`` / ``thread_id`` narrow it
            further (``None`` is a value of its own here, not "any"); no ``session_id``.
        async_store: the asyncio :class:`~agent_memory.MemoryStore` of the same store
            (same name and server) for ``asave`` / ``asearch`` / ``adelete``; without
            it they run the blocking store in a worker thread.
        ttl: seconds each saved record lives (``None``: until deleted).

    Raises:
        InvalidInputError: a ``store`` that is not a ``SyncMemoryStore`` (an asyncio
            ``MemoryStore`` included), an ``async_store`` that is not a ``MemoryStore``
            of the same name, a ``scope`` that is not a ``Scope`` or has a
            ``session_id``, or a bad ``ttl``.
    """

    def __init__(
        self,
        store: SyncMemoryStore,
        *,
        scope: Scope,
        async_store: MemoryStore | None = None,
        ttl: float | None = None,
    ) -> None:
        if isinstance(store, MemoryStore) or not isinstance(store, SyncMemoryStore):
            raise InvalidInputError(f"AgentMemoryStorage: {_SYNC_NOTE}", field="store")
        if async_store is not None and (
            not isinstance(async_store, MemoryStore) or async_store.name != store.name
        ):
            raise InvalidInputError(
                "async_store must be the asyncio MemoryStore of the same store (same name)",
                field="async_store",
            )
        self._binding = Binding(scope, ttl)
        self._store = store
        self._async_store = async_store
        self._dim = ops.Dimension()
        self._owned = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        name: str,
        embed: Callable[[str], Any],
        scope: Scope,
        ttl: float | None = None,
        **store_options: Any,
    ) -> AgentMemoryStorage:
        """A storage on its own ``SyncMemoryStore`` for ``url`` (``store_options`` as
        :meth:`SyncMemoryStore.from_url <agent_memory.SyncMemoryStore.from_url>`), closed
        by :meth:`close` (which CrewAI's ``Memory.close()`` calls).

        Raises:
            InvalidInputError: a bad URL, store option, scope or TTL.
        """
        Binding(scope, ttl)  # checked before a client exists
        store = SyncMemoryStore.from_url(url, name=name, embed=embed, **store_options)
        try:
            storage = cls(store, scope=scope, ttl=ttl)
        except BaseException:
            store.close()
            raise
        storage._owned = True
        return storage

    @property
    def scope(self) -> Scope:
        """The scope every record is written to and read from."""
        return self._binding.scope

    @property
    def store(self) -> SyncMemoryStore:
        """The blocking store the methods run on."""
        return self._store

    def _run(self, plan: Plan[T]) -> T:
        return run_sync(self._store, plan)

    async def _arun(self, plan: Plan[T]) -> T:
        if self._async_store is None:
            return await asyncio.to_thread(run_sync, self._store, plan)
        return await run_async(self._async_store, plan)

    def save(self, records: list[Any]) -> None:
        """Store CrewAI ``MemoryRecord`` objects in one round trip, all or none (a known
        id is replaced).

        Raises:
            InvalidInputError: not a list of ``MemoryRecord``, or one the store refuses
                (blank or oversized content, metadata that is not JSON, a scope deeper
                than 63 levels with its categories, a zero-length embedding...).
            EmbeddingDimensionMismatchError: (CrewAI's) an embedding whose length is not
                the store's dimension.
            AgentMemoryError: a failure of the server or the embedder.
        """
        self._run(ops.save(self._binding, self._dim, records))

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[Any, float]]:
        """The ``limit`` records nearest to ``query_embedding`` at or below
        ``scope_prefix`` (a path boundary: ``/app`` never matches ``/apple``), in any of
        ``categories``, passing every ``metadata_filter`` pair (``metadata.get(key) ==
        value``, as CrewAI's backends compare: ``None`` matches a missing key); best
        first, each with its cosine similarity clipped to [0, 1] (at least
        ``min_score``); at most 1000 of them, whatever the ``limit``. With a
        ``metadata_filter`` only the 1000 nearest records are filtered.

        Raises:
            InvalidInputError: a bad embedding, prefix, category list, filter, ``limit``
                (an int >= 1) or ``min_score``.
            EmbeddingDimensionMismatchError: (CrewAI's) a query of the wrong length.
            AgentMemoryError: a failure of the server.
        """
        return self._run(
            ops.search(self._binding, self._dim, query_embedding, scope_prefix, categories,
                       metadata_filter, limit, min_score)
        )  # fmt: skip

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: Any = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Delete the records at or below ``scope_prefix`` that pass every other given
        filter (any of ``categories``, one of ``record_ids``, created before
        ``older_than``, every ``metadata_filter`` pair; an empty list is no filter);
        returns how many were deleted. Without filters: one ``forget_by_scope``; with
        ``record_ids``: one ``get_many``; otherwise the records under the prefix are read
        (``list`` pages of 10,000). The matching ones are then read again and each is
        deleted only while it still passes the filters and is unchanged since that read:
        one another client updated meanwhile is deleted only if it still matches.

        Raises:
            InvalidInputError: a bad prefix, list, datetime or filter.
            AgentMemoryError: a failure of the server.
        """
        return self._run(
            ops.delete(self._binding, scope_prefix, categories, record_ids, older_than,
                       metadata_filter)
        )  # fmt: skip

    def update(self, record: Any) -> None:
        """Replace the record with ``record.id`` (stored anew if there is none); a record
        without an embedding is re-embedded by the store's embedder.

        Raises:
            InvalidInputError, EmbeddingDimensionMismatchError, AgentMemoryError: as
                :meth:`save`.
        """
        self._run(ops.save(self._binding, self._dim, [check_record(record, "record")]))

    def get_record(self, record_id: str) -> Any:
        """The ``MemoryRecord`` with this id (without its embedding), or ``None``.

        Raises:
            InvalidInputError: ``record_id`` is not a ``str``.
            AgentMemoryError: a failure of the server.
        """
        return self._run(ops.get_record(self._binding, record_id))

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[Any]:
        """Records at or below ``scope_prefix``, newest first (by ``created_at``).

        Raises:
            InvalidInputError: a bad prefix, or ``limit`` / ``offset`` below 0.
            AgentMemoryError: a failure of the server.
        """
        return self._run(ops.list_records(self._binding, scope_prefix, limit, offset))

    def get_scope_info(self, scope: str) -> Any:
        """CrewAI's ``ScopeInfo``: records at or below ``scope``, their categories and
        dates, and the immediate child scopes.

        Raises:
            InvalidInputError: a bad scope path.
            AgentMemoryError: a failure of the server.
        """
        return self._run(ops.scope_info(self._binding, scope))

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scopes of ``parent`` that hold records, sorted.

        Raises:
            InvalidInputError: a bad scope path.
            AgentMemoryError: a failure of the server.
        """
        return self._run(ops.list_scopes(self._binding, parent))

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """Records per category at or below ``scope_prefix``.

        Raises:
            InvalidInputError: a bad prefix.
            AgentMemoryError: a failure of the server.
        """
        return self._run(ops.list_categories(self._binding, scope_prefix))

    def count(self, scope_prefix: str | None = None) -> int:
        """How many records lie at or below ``scope_prefix``.

        Raises:
            InvalidInputError: a bad prefix.
            AgentMemoryError: a failure of the server.
        """
        return self._run(ops.count(self._binding, scope_prefix))

    def reset(self, scope_prefix: str | None = None) -> None:
        """Delete every record at or below ``scope_prefix`` (``None``: every record of
        this storage's scope, nothing else of the store).

        Raises:
            InvalidInputError: a bad prefix.
            AgentMemoryError: a failure of the server.
        """
        self._run(ops.reset(self._binding, scope_prefix))

    async def asave(self, records: list[Any]) -> None:
        """:meth:`save` on the asyncio store (or in a worker thread); same errors."""
        await self._arun(ops.save(self._binding, self._dim, records))

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[Any, float]]:
        """:meth:`search` on the asyncio store (or in a worker thread); same errors."""
        return await self._arun(
            ops.search(self._binding, self._dim, query_embedding, scope_prefix, categories,
                       metadata_filter, limit, min_score)
        )  # fmt: skip

    async def adelete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: Any = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """:meth:`delete` on the asyncio store (or in a worker thread); same errors."""
        return await self._arun(
            ops.delete(self._binding, scope_prefix, categories, record_ids, older_than,
                       metadata_filter)
        )  # fmt: skip

    def close(self) -> None:
        """Close the store if :meth:`from_url` created it (idempotent); CrewAI's
        ``Memory.close()`` calls this. An injected store is left open."""
        if self._owned:
            self._owned = False
            self._store.close()

    def __repr__(self) -> str:
        return f"AgentMemoryStorage(store={self._store.name!r}, scope={self._binding.scope!r})"


__all__ = ["AgentMemoryStorage"]
