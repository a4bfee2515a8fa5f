"""``AgentMemoryStore``: the LangGraph ``BaseStore`` surface (construction, clients,
the sync and async runners); the operations are :mod:`.plans`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agent_memory.errors import CapabilityError, InvalidInputError
from agent_memory.integrations._optional import require

require("langgraph.store.base", extra="langgraph", package="langgraph")

from langgraph.store.base import BaseStore, Op, Result, TTLConfig  # noqa: E402

from agent_memory.integrations.langgraph.checks import check_config  # noqa: E402
from agent_memory.integrations.langgraph.plans import (  # noqa: E402
    OperationPlans,
    check_uncapped,
)
from agent_memory.integrations.langgraph.values import MAX_CONTENT_BYTES  # noqa: E402
from agent_memory.schema.types import Scope  # noqa: E402
from agent_memory.store.memory_store import MemoryStore  # noqa: E402
from agent_memory.store.sync_store import SyncMemoryStore  # noqa: E402


class AgentMemoryStore(OperationPlans, BaseStore):
    """LangGraph ``BaseStore`` over agent-memory stores (see the module docstring).

    Args:
        store: a :class:`SyncMemoryStore`, serving ``batch`` (and ``abatch`` in a worker
            thread when ``async_store`` is not given).
        async_store: a :class:`MemoryStore`, serving ``abatch``.
        memory_namespace: the agent-memory namespace holding every item of this store
            (the tenant boundary; ``None``: the default namespace).
        index_fields: JSON paths of the value to embed (LangGraph path syntax), ``"$"``
            for the whole value; ``put(..., index=[...])`` overrides them per item.
        ttl: LangGraph ``TTLConfig`` (``default_ttl`` and ``refresh_on_read`` are used;
            the server expires items itself, so ``sweep_interval_minutes`` is ignored).
        importance: importance of the memories written (agent-memory ranking).
        clock: ``() -> seconds since the epoch`` for ``created_at`` / ``updated_at``
            (microsecond resolution; injected for tests).

    Raises:
        InvalidInputError: neither store given, a store of the wrong kind or with
            ``max_items_per_scope`` (every item shares one scope: the cap would evict
            items), a bad ``index_fields``, ``ttl`` or ``importance``.

    Items are written without deduplication whatever the store's ``dedupe`` setting
    (two keys may hold equal values), and a semantic ``search`` ranks by cosine
    similarity alone, as LangGraph's own stores do. A store with ``forgetting`` hides
    the items it would forget from ``search`` and ``list_namespaces`` (``get`` still
    returns them).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: SyncMemoryStore | None = None,
        *,
        async_store: MemoryStore | None = None,
        memory_namespace: str | None = None,
        index_fields: Sequence[str] = ("$",),
        ttl: TTLConfig | None = None,
        importance: float = 0.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if store is None and async_store is None:
            raise InvalidInputError("give a SyncMemoryStore, a MemoryStore or both", field="store")
        if store is not None and not isinstance(store, SyncMemoryStore):
            raise InvalidInputError("store must be a SyncMemoryStore", field="store")
        if async_store is not None and not isinstance(async_store, MemoryStore):
            raise InvalidInputError("async_store must be a MemoryStore", field="async_store")
        if isinstance(index_fields, str) or not all(isinstance(f, str) and f for f in index_fields):
            raise InvalidInputError(
                "index_fields must be a list of JSON paths", field="index_fields"
            )
        check_config(ttl, importance)
        self._scope = Scope(namespace=memory_namespace)
        self._store = store
        self._async_store = async_store
        self._fields = tuple(index_fields)
        self._importance = float(importance)
        served = store if store is not None else async_store
        assert served is not None  # one of them was given (checked above)
        for given in (store, async_store):
            check_uncapped(given)
        # the store's limit on the text embedded, and its counter of unreadable records
        # (both stores of from_url share the settings)
        self._served = served
        self._content_limit = min(MAX_CONTENT_BYTES, served.max_content_bytes)
        self._owned = False
        self._clock = clock
        self.ttl_config = ttl

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        name: str,
        embed: Any,
        memory_namespace: str | None = None,
        index_fields: Sequence[str] = ("$",),
        ttl: TTLConfig | None = None,
        **store_options: Any,
    ) -> AgentMemoryStore:
        """A store with its own sync and async clients for ``url`` (closed by
        :meth:`close` / :meth:`aclose`). ``store_options`` go to both stores.

        Raises:
            InvalidInputError: a bad URL or option.
        """
        sync_store = SyncMemoryStore.from_url(url, name=name, embed=embed, **store_options)
        try:
            async_store = MemoryStore.from_url(url, name=name, embed=embed, **store_options)
            result = cls(
                sync_store,
                async_store=async_store,
                memory_namespace=memory_namespace,
                index_fields=index_fields,
                ttl=ttl,
            )
        except BaseException:  # a bad TTL, index_fields...: nothing else closes them
            sync_store.close()  # (the asyncio store's client opened no connection)
            raise
        result._owned = True
        return result

    @property
    def memory_namespace(self) -> str | None:
        """The agent-memory namespace holding the items."""
        return self._scope.namespace

    @property
    def sync_store(self) -> SyncMemoryStore | None:
        """The store serving ``batch``."""
        return self._store

    @property
    def async_store(self) -> MemoryStore | None:
        """The store serving ``abatch``."""
        return self._async_store

    def close(self) -> None:
        """Close the sync store if :meth:`from_url` created it (idempotent)."""
        if self._owned and self._store is not None:
            self._store.close()

    async def aclose(self) -> None:
        """Close both stores if :meth:`from_url` created them (idempotent)."""
        if self._owned and self._async_store is not None:
            await self._async_store.close()
        self.close()

    # -- runners ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph operations in order on the sync store.

        Raises:
            CapabilityError: only an async store was given.
            InvalidInputError: a bad namespace, filter or value.
            AgentMemoryError: a failure of the store.
        """
        store = self._store
        if store is None:
            raise CapabilityError(
                "this AgentMemoryStore has only an async MemoryStore: use the async methods "
                "(aget, aput, asearch, ...) or pass a SyncMemoryStore"
            )
        plan = self._plan(list(ops))
        try:
            call = next(plan)
            while True:
                method, args, kwargs = call
                call = plan.send(getattr(store, method)(*args, **kwargs))
        except StopIteration as stop:
            results: list[Result] = stop.value
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph operations in order on the async store (or the sync store in a
        worker thread when no async store was given).

        Raises:
            InvalidInputError: a bad namespace, filter or value.
            AgentMemoryError: a failure of the store.
        """
        store = self._async_store
        if store is None:
            return await asyncio.to_thread(self.batch, list(ops))
        plan = self._plan(list(ops))
        try:
            call = next(plan)
            while True:
                method, args, kwargs = call
                call = plan.send(await getattr(store, method)(*args, **kwargs))
        except StopIteration as stop:
            results: list[Result] = stop.value
            return results


__all__ = ["AgentMemoryStore"]
