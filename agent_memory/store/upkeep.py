"""The asyncio store's upkeep methods: consolidation, export and import, adoption of
foreign memories, learning from outcomes, pruning (a group of
:class:`~agent_memory.store.memory_store.MemoryStore`'s methods).

``sync_upkeep.py`` is generated from this file by ``scripts/unasync.py``: edit this
file, then run ``python scripts/unasync.py``.
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Operation, T
from agent_memory.errors import InvalidInputError
from agent_memory.schema.encoding import namespace_token
from agent_memory.schema.filters import scope_filter
from agent_memory.schema.types import (
    MemoryItem,
    Scope,
)
from agent_memory.store.arguments import consolidation_args
from agent_memory.store.ops.adopt import (
    AdoptionReport,
    take_over,
)
from agent_memory.store.ops.consolidate import (
    ConsolidationResult,
    consolidate_facts,
    consolidate_summary,
    fact_history,
)
from agent_memory.store.ops.ensure import IndexStatus
from agent_memory.store.ops.learn import (
    PruneResult,
    check_score,
    check_selection,
    complete,
    feedback,
    prune,
)
from agent_memory.store.ops.transfer import export_ids, export_records, import_records
from agent_memory.store.validation import (
    check_id,
    check_scope,
    check_text,
)
from agent_memory.telemetry.core import AttributeValue

_EXPORT_PAGE = 500


class UpkeepMethods:
    """Consolidate, export and import, adopt, learn from outcomes, prune."""

    # Provided by the store class that combines the method groups (MemoryStore).
    _ctx: StoreContext
    if TYPE_CHECKING:

        async def _run(
            self, op: Operation[T], operation: str, **attributes: AttributeValue
        ) -> T: ...

        async def ensure_index(self) -> IndexStatus: ...

    async def consolidate(
        self,
        *,
        mode: Literal["summary", "facts"],
        scope: Scope | None = None,
        tags: Sequence[str] | None = None,
        older_than_seconds: float | None = None,
        max_importance: float | None = None,
        summarize: Callable[[builtins.list[MemoryItem]], Any] | None = None,
        extract_facts: Callable[[builtins.list[MemoryItem]], Any] | None = None,
        importance: float | None = None,
        delete_sources: bool = True,
    ) -> ConsolidationResult:
        """Keep memory clean: summarise an accumulation, or reconcile facts.

        Candidates are the memories matching every given criterion (``scope``, ``tags``
        — all required —, created more than ``older_than_seconds`` ago, importance at
        most ``max_importance``); at least one criterion is required. Callbacks may be
        sync or async; they receive the candidates oldest to newest.

        ``mode="summary"``: ``summarize(items) -> str`` is called once per exact scope
        among the candidates; its text is stored as a new memory (``source="summary"``,
        ``importance`` or the sources' maximum, their tags, the same scope) and the
        sources are deleted unless ``delete_sources=False``; a source another writer
        changed while ``summarize`` ran is kept (``deleted`` names only what was
        deleted). Earlier summaries and facts are never re-summarised. Lossy by design:
        for corpora where later statements supersede earlier ones, use facts mode.

        ``mode="facts"``: ``extract_facts(items) -> list[Fact]`` receives only source
        memories this selection has not processed before (never summaries or facts);
        when there are none it is not called at all. Facts are reconciled by subject
        (case and surrounding space ignored): the newest date wins (ISO dates and
        datetimes; a date means midnight UTC; an undated fact takes the run's time), a
        tombstone retracts the subject, and a tombstone that matches no live fact is
        reported in ``unmatched_tombstones``. Each live fact is one memory
        (``source="fact"``, ``subject``, ``date``; content ``"<statement> (as of
        <date>)"``, importance ``importance`` or 0.8) in the selection's scope, written
        additively: source memories stay. Superseded facts are deleted, or kept for
        :meth:`fact_history` with ``keep_fact_history=True``. The live facts reconciled
        are those in the selection's scope with its tags (``older_than_seconds`` and
        ``max_importance`` choose sources only); every run ends by keeping the newest
        live fact of each subject, which repairs what racing or interrupted runs left.
        A fact another client changes during the run (what it was judged on) is kept,
        and not reported in ``deleted``. A fact the store would refuse (too long) is
        refused as ``extract_facts``'s, by its position.

        Every run that ends without error counts once in the ``consolidations`` counter,
        in both modes, whether or not it found anything to do.

        New memories are written before old ones are deleted, under deterministic ids,
        so re-running after a crash converges to the same state; ``max_items_per_scope``
        is enforced after the deletions and never evicts what the run wrote.

        Raises:
            InvalidInputError: no criterion, a missing or bad callback result, bad
                arguments; nothing was written.
        """
        selection, callback = consolidation_args(
            mode,
            scope,
            tags,
            older_than_seconds,
            max_importance,
            summarize,
            extract_facts,
            importance,
            delete_sources,
        )
        if mode == "summary":
            op = consolidate_summary(
                self._ctx, selection, callback, importance=importance, delete_sources=delete_sources
            )
        else:
            op = consolidate_facts(
                self._ctx, selection, callback,
                importance=0.8 if importance is None else importance,
                keep_history=self._ctx.settings.keep_fact_history,
            )  # fmt: skip
        return await self._run(op, "consolidate", mode=mode)

    async def consolidate_facts(
        self, *, extract_facts: Callable[[builtins.list[MemoryItem]], Any], **kwargs: Any
    ) -> ConsolidationResult:
        """Deprecated alias of ``consolidate(mode="facts", ...)``."""
        warnings.warn(
            "consolidate_facts() is deprecated; use consolidate(mode='facts', ...)",
            DeprecationWarning,
            stacklevel=2,
        )
        return await self.consolidate(mode="facts", extract_facts=extract_facts, **kwargs)

    async def fact_history(
        self, subject: str, scope: Scope | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Facts about ``subject`` superseded or retracted in ``scope``, oldest first
        (each ``{"id", "subject", "statement", "date", "superseded_at"}``). Empty unless
        the store was created with ``keep_fact_history=True``.

        Raises:
            InvalidInputError: empty subject or bad scope.
        """
        check_text(subject, field="subject", max_bytes=1024)
        check_scope(scope)
        return await self._run(fact_history(self._ctx, subject, scope or Scope()), "fact_history")

    async def export(
        self, scope: Scope | None = None, *, include_vectors: bool = True
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield a JSON-serialisable record per memory of a scope (default namespace when
        ``None``; every session unless ``scope.session_id`` is set), oldest first:
        content, scope, tags, importance, timestamps, TTL remaining,
        source/subject/date, metadata, the store's embedder id (when it records one)
        and (by default) the vector. Write each with
        ``json.dumps`` for JSON lines; :meth:`import_records` restores them losslessly.

        Raises:
            InvalidInputError: bad scope.
        """
        check_scope(scope)
        flt = scope_filter(scope, (), session=(scope or Scope()).session_id or False)
        if self._ctx.dim is None:
            await self.ensure_index()
        ids = await self._run(export_ids(self._ctx, flt), "export")
        for start in range(0, len(ids), _EXPORT_PAGE):
            page = ids[start : start + _EXPORT_PAGE]
            records = await self._run(
                export_records(self._ctx, page, include_vectors=include_vectors), "export"
            )
            for record in records:
                yield record

    async def import_records(
        self, records: Iterable[Mapping[str, Any]], *, reembed: bool = False
    ) -> builtins.list[str]:
        """Restore exported records (same ids, scopes, timestamps, TTL remaining).

        Vectors in the records are used as they are unless ``reembed=True`` (moving to
        another embedding model) or a record has none. Expired records are skipped.
        Every record is validated before anything is written. Returns one id per record
        written; records that share an id store only the last of them (each returns
        that id).

        Raises:
            InvalidInputError: a malformed record, a vector of the wrong dimension, or
                (without ``reembed``) a record naming another ``embedder`` than the
                store's; nothing was written.
        """
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
            raise InvalidInputError("records must be an iterable of objects", field="records")
        return await self._run(
            import_records(self._ctx, list(records), reembed=reembed), "import_records"
        )

    async def adopt_foreign(self, *, replace_index: bool = False) -> AdoptionReport:
        """Adopt the memories the BetterDB agent-memory libraries wrote into this store.

        Their records (no ``session`` field, no registry entry) become memories of this
        store under the same ids, keeping text, vector, importance, timestamps, access
        count, tags, TTL remaining and scope (``namespace``, ``agentId``, ``threadId``;
        shared durability). Their library goes on reading them. ``ensure_index()`` does
        this once per process when the index holds more documents than the store has
        memories; call this for records written since. The mapping and its limits are
        in :mod:`agent_memory.store.ops.adopt`.

        Args:
            replace_index: the store's index was created by their library: drop it
                (never its records), create ours and adopt everything. Without it such
                an index raises :class:`IndexMismatchError` and is left as it is.

        Raises:
            IndexMismatchError: a foreign index and ``replace_index`` not given, or a
                dimension that differs from the embedder's.
        """
        if not isinstance(replace_index, bool):
            raise InvalidInputError("replace_index must be a bool", field="replace_index")
        return await self._run(take_over(self._ctx, replace_index=replace_index), "adopt_foreign")

    async def complete(
        self, selection_id: str, score: float, *, scope: Scope | None = None
    ) -> bool:
        """Report how well a recall served (``score`` in [0, 1], 0.5 is neutral).

        The selection counts as one observation spread over its memories; it can be
        completed once (further calls, even concurrent ones, are no-ops returning
        ``False``), within ``receipt_ttl`` of the recall.

        Args:
            selection_id: the ``selection_id`` of a :class:`RecallResult`.
            score: the outcome, 0 (useless) to 1 (served perfectly).
            scope: when given, only a selection whose recall was given exactly this
                scope (``None`` there counts as ``Scope()``) is applied; any other
                returns ``False`` and stays completable in its own scope. A service
                that completes on behalf of one tenant passes that tenant's scope, so
                a selection id from another tenant changes nothing. Receipts written
                by releases before this check name no scope and never match one.

        Returns:
            ``True`` when this call applied the outcome.

        Raises:
            InvalidInputError: malformed selection id, score outside [0, 1] or a
                ``scope`` that is not a :class:`Scope`.
        """
        check_selection(selection_id)
        value = check_score(score, low=0.0, high=1.0, field="score")
        check_scope(scope)
        return await self._run(complete(self._ctx, selection_id, value, scope), "complete")

    async def feedback(self, id: str, value: float | None) -> None:
        """Set, replace or clear (``None``) a memory's manual usefulness in [-1, 1].

        Manual feedback outweighs eval outcomes; positive feedback also protects the
        memory from forgetting, negative feedback hastens it.

        Raises:
            NotFoundError: no memory with that id.
            InvalidInputError: malformed id or value outside [-1, 1].
        """
        check_id(id)
        checked = None if value is None else check_score(value, low=-1.0, high=1.0, field="value")
        await self._run(feedback(self._ctx, id, checked), "feedback")

    async def prune(self, scope: Scope | None = None) -> PruneResult:
        """Delete memories that forgetting suppressed (in ``scope``'s namespace, or in
        every namespace) and clean up bookkeeping of expired ones.

        Raises:
            InvalidInputError: bad scope.
        """
        check_scope(scope)
        token = None if scope is None else namespace_token(scope.namespace)
        return await self._run(prune(self._ctx, token), "prune")


__all__ = ["UpkeepMethods"]
