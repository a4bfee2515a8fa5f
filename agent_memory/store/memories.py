"""The asyncio store's methods on memories themselves: remember, recall, read, update
and forget (a group of :class:`~agent_memory.store.memory_store.MemoryStore`'s methods).

``sync_memories.py`` is generated from this file by ``scripts/unasync.py``: edit this
file, then run ``python scripts/unasync.py``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Operation, T
from agent_memory.errors import InvalidInputError
from agent_memory.schema.filters import scope_filter
from agent_memory.schema.types import (
    Durability,
    ListResult,
    MemoryItem,
    RecallResult,
    RecallWeights,
    Scope,
)
from agent_memory.store.arguments import memory_inputs
from agent_memory.store.ops.expiry import expire_many
from agent_memory.store.ops.forget import forget, forget_judged, forget_many, forget_matching
from agent_memory.store.ops.read import get, get_many, list_items
from agent_memory.store.ops.recall import make_request, recall_by_vector, recall_text
from agent_memory.store.ops.update import update
from agent_memory.store.ops.write import MemoryInput, remember_many
from agent_memory.store.validation import (
    check_k,
    check_scope,
    check_tags,
    check_text,
    require_scope,
)
from agent_memory.telemetry.core import AttributeValue


class MemoryMethods:
    """Remember, recall, read, update and forget memories."""

    # Provided by the store class that combines the method groups (MemoryStore).
    _ctx: StoreContext
    if TYPE_CHECKING:

        async def _run(
            self, op: Operation[T], operation: str, **attributes: AttributeValue
        ) -> T: ...

    async def remember(
        self,
        content: str,
        *,
        importance: float = 0.5,
        tags: Sequence[str] = (),
        ttl: float | None = None,
        scope: Scope | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        durability: Durability = "shared",
        subject: str | None = None,
        date: str | None = None,
        dedupe: bool | None = None,
        labels: Mapping[str, Sequence[str]] | None = None,
    ) -> str:
        """Store one memory and return its id.

        Args:
            content: the text (non-empty, at most ``max_content_bytes`` UTF-8 bytes).
            importance: 0..1, used in ranking and eviction.
            tags: free strings; a recall with ``tags`` needs all of them.
            ttl: seconds until the memory expires; set atomically with the write.
            scope: namespace / agent / thread / session of the memory.
            source, subject, date: provenance fields (BetterDB layout).
            metadata: JSON-serialisable mapping kept with the memory.
            durability: ``"shared"`` (default) or ``"session"`` (visible only to recalls
                with the same ``scope.session_id``).
            dedupe: when a memory of the same exact scope lies within
                ``dedupe_distance``, refresh it (recency, access count, importance =
                max) and return its id instead of storing a copy. ``None``: the store's
                default.
            labels: ``{key: [values]}`` (normalised; checked against the store's
                ``label_policy``).

        Raises:
            InvalidInputError: a bad argument, or the embedder returned a bad vector;
                nothing was written.
            ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
        """
        item = MemoryInput(
            content=content, importance=importance, tags=tags, ttl=ttl, scope=scope,
            source=source, subject=subject, date=date, metadata=metadata, durability=durability,
            labels=labels,
        )  # fmt: skip
        ids = await self._run(
            remember_many(self._ctx, [item], dedupe=self._dedupe(dedupe)), "remember"
        )
        return ids[0]

    async def remember_many(
        self, items: Iterable[MemoryInput | Mapping[str, Any]], *, dedupe: bool | None = None
    ) -> list[str]:
        """Store many memories: one embedding batch, one pipelined round trip per chunk.

        Each item is a :class:`MemoryInput` or a mapping of ``remember`` arguments.
        Every item is validated before anything is written. With ``dedupe``, duplicates
        within the batch collapse too (later ones return the first one's id). Items that
        give the same ``id`` store only the last of them (each returns that id), as if
        each had been written in turn.

        Raises:
            InvalidInputError: any item is invalid; nothing was written.
        """
        return await self._run(
            remember_many(self._ctx, memory_inputs(items), dedupe=self._dedupe(dedupe)),
            "remember_many",
        )

    def _dedupe(self, dedupe: bool | None) -> bool:
        return self._ctx.settings.dedupe if dedupe is None else bool(dedupe)

    async def recall(
        self,
        query: str,
        *,
        scope: Scope | None = None,
        k: int = 8,
        tags: Sequence[str] | None = None,
        threshold: float | None = None,
        weights: RecallWeights | None = None,
        reinforce: bool = True,
        labels: Mapping[str, Sequence[str]] | None = None,
    ) -> RecallResult:
        """The ``k`` most relevant memories for ``query``, best first.

        Only memories within ``threshold`` cosine distance are returned; they are ordered
        by the composite score. With ``scope.session_id`` the shared pool and that
        session are searched separately and merged. ``reinforce`` bumps the returned
        memories' ``last_accessed_at`` and ``access_count`` in one round trip (each
        returned memory's exposure count is bumped either way). ``labels={key:
        [values]}`` filters: a memory must carry one of the values of every key. The
        filter (scope, tags, labels) must fit a search query's 4,992 bytes
        (:data:`~agent_memory.search.query.MAX_FILTER_BYTES`: any scope and 64 tags, and
        about 100 label values, or 40 beside 64 tags). The result's ``selection_id``
        names this recall for :meth:`complete`.

        Raises:
            InvalidInputError: a bad argument (a filter longer than that included) or a
                bad query vector from the embedder.
            ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
        """
        check_text(query, field="query", max_bytes=self._ctx.settings.max_content_bytes)
        request = make_request(
            self._ctx, scope=scope, k=k, tags=tags, threshold=threshold, weights=weights,
            reinforce=reinforce, labels=labels,
        )  # fmt: skip
        return await self._run(recall_text(self._ctx, request, query), "recall", k=k)

    async def recall_by_vector(
        self,
        vector: Sequence[float],
        *,
        scope: Scope | None = None,
        k: int = 8,
        tags: Sequence[str] | None = None,
        threshold: float | None = None,
        weights: RecallWeights | None = None,
        reinforce: bool = True,
        labels: Mapping[str, Sequence[str]] | None = None,
    ) -> RecallResult:
        """Like :meth:`recall` with a precomputed query vector (scaled to unit length).

        Raises:
            InvalidInputError: wrong dimension, NaN/inf or zero vector, bad argument (a
                filter too long for a search query included).
        """
        request = make_request(
            self._ctx, scope=scope, k=k, tags=tags, threshold=threshold, weights=weights,
            reinforce=reinforce, labels=labels,
        )  # fmt: skip
        return await self._run(
            recall_by_vector(self._ctx, request, vector), "recall_by_vector", k=k
        )

    async def get(self, id: str) -> MemoryItem | None:
        """The memory with this id, or ``None`` if there is none (or it expired).

        Raises:
            InvalidInputError: ``id`` is not a well-formed memory id.
        """
        return await self._run(get(self._ctx, id), "get")

    async def get_many(self, ids: Iterable[str]) -> list[MemoryItem | None]:
        """The memories with these ids, in their order (``None`` for one there is not),
        read in one round trip.

        Raises:
            InvalidInputError: ``ids`` is not a list of well-formed memory ids.
        """
        return await self._run(get_many(self._ctx, ids), "get_many")

    async def expire_many(self, ttls: Mapping[str, float]) -> list[str]:
        """Set each memory's expiry to ``ttls[id]`` seconds from now (as ``update(id,
        ttl=...)`` does), in two round trips for all; returns the ids that existed.

        Raises:
            InvalidInputError: ``ttls`` is not a mapping of memory ids to TTLs in
                seconds; nothing was changed.
        """
        return await self._run(expire_many(self._ctx, ttls), "expire_many")

    async def list(
        self,
        scope: Scope | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        include_suppressed: bool = False,
    ) -> ListResult:
        """A page of memories of a scope, newest first, with the total that match.

        Without ``scope.session_id`` only shared memories are listed; with it, that
        session's memories. Memories suppressed by forgetting are left out unless
        ``include_suppressed``.

        Raises:
            InvalidInputError: bad scope, tags, limit or offset.
        """
        check_k(limit, field="limit", maximum=10_000)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError("offset must be an int >= 0", field="offset")
        check_scope(scope)
        flt = scope_filter(scope, check_tags(tags), session=(scope or Scope()).session_id)
        return await self._run(
            list_items(
                self._ctx, flt, limit=limit, offset=offset, include_suppressed=include_suppressed
            ),
            "list",
        )

    async def update(
        self,
        id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        ttl: float | None = None,
    ) -> MemoryItem:
        """Change a memory; re-embeds when the content changes. ``None`` leaves a field
        unchanged (``ttl`` sets a new expiry from now).

        Raises:
            NotFoundError: no memory with that id.
            InvalidInputError: a bad value; nothing was changed.
        """
        return await self._run(
            update(self._ctx, id, content=content, importance=importance, tags=tags, ttl=ttl),
            "update",
        )

    async def forget(self, id: str) -> bool:
        """Delete a memory. Returns ``False`` when it did not exist.

        Raises:
            InvalidInputError: ``id`` is not a well-formed memory id.
        """
        return await self._run(forget(self._ctx, id), "forget")

    async def forget_many(self, ids: Iterable[str]) -> int:
        """Delete memories by id, in one batch; returns how many existed.

        Raises:
            InvalidInputError: ``ids`` is not a list of well-formed memory ids; nothing
                was deleted.
        """
        return await self._run(forget_many(self._ctx, ids), "forget_many")

    async def _forget_judged(
        self, ids: Iterable[str], choose: Callable[[builtins.list[MemoryItem]], Any]
    ) -> int:
        """For adapters that filter in Python before deleting: delete those of ``ids``
        that ``choose`` picks among them as read now, each only while what it was judged
        on is unchanged (:func:`~agent_memory.store.ops.forget.forget_judged`); returns
        how many were deleted.

        Raises:
            InvalidInputError: malformed ids, or a ``choose`` that is not callable or
                returns anything but ids of the items it was given.
        """
        return await self._run(forget_judged(self._ctx, ids, choose), "forget_judged")

    async def forget_by_scope(self, scope: Scope, tags: Sequence[str] | None = None) -> int:
        """Delete every memory of a scope (all its sessions unless ``scope.session_id``
        is set), optionally only those carrying all ``tags``. Returns how many.

        Raises:
            InvalidInputError: bad scope or tags.
        """
        require_scope(scope)
        flt = scope_filter(scope, check_tags(tags), session=scope.session_id or False)
        return await self._run(forget_matching(self._ctx, flt), "forget_by_scope")


__all__ = ["MemoryMethods"]
