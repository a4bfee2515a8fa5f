"""The asyncio long-term memory store.

``sync_store.py`` is generated from this file by ``scripts/unasync.py`` (the test suite
fails when the two drift): edit this file, then run ``python scripts/unasync.py``.
"""

from __future__ import annotations

import builtins
import logging
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from prometheus_client import CollectorRegistry

from agent_memory.backends.context import (
    Clock,
    LiveConfig,
    StoreContext,
)
from agent_memory.core.clients import (
    AsyncExecutor,
    client_from_url,
    close_async_client,
    is_async_client,
)
from agent_memory.core.effects import Operation, T
from agent_memory.core.runner import run_async
from agent_memory.errors import (
    AgentMemoryError,
    InvalidInputError,
    StoreClosedError,
)
from agent_memory.schema.encoding import namespace_token
from agent_memory.schema.filters import scope_filter
from agent_memory.schema.labels import LabelPolicy
from agent_memory.schema.layout import Keys
from agent_memory.schema.term_choice import CANDIDATE_BUDGET
from agent_memory.schema.types import (
    Durability,
    ListResult,
    MemoryItem,
    RecallResult,
    RecallWeights,
    Scope,
)
from agent_memory.schema.utility import Forgetting
from agent_memory.store.arguments import (
    consolidation_args,
    memory_inputs,
    positive_number,
)
from agent_memory.store.config import refresh_config
from agent_memory.store.ops.adopt import (
    AdoptionReport,
    AdoptionWatch,
    adopt_if_changed,
    take_over,
)
from agent_memory.store.ops.consolidate import (
    ConsolidationResult,
    consolidate_facts,
    consolidate_summary,
    fact_history,
)
from agent_memory.store.ops.dedupe import DEFAULT_DEDUPE_DISTANCE
from agent_memory.store.ops.ensure import IndexStatus, ensure_index, ensured
from agent_memory.store.ops.forget import forget, forget_matching
from agent_memory.store.ops.learn import (
    PruneResult,
    check_score,
    check_selection,
    complete,
    feedback,
    prune,
)
from agent_memory.store.ops.read import MemoryStats, get, list_items, stats
from agent_memory.store.ops.recall import make_request, recall_by_vector, recall_text
from agent_memory.store.ops.transfer import export_ids, export_records, import_records
from agent_memory.store.ops.write import MemoryInput, remember_many, update
from agent_memory.store.settings import refresh_interval, store_settings
from agent_memory.store.validation import (
    check_id,
    check_k,
    check_name,
    check_scope,
    check_tags,
    check_text,
    require_scope,
)
from agent_memory.telemetry import Telemetry
from agent_memory.telemetry.core import AttributeValue, describe_result

_ASYNC = True
logger = logging.getLogger("agent_memory.store")
_EXPORT_PAGE = 500
DEFAULT_MAX_CONTENT_BYTES = 32 * 1024


class MemoryStore:
    """Long-term semantic memory on Valkey (asyncio).

    Args:
        client: a ``valkey.asyncio.Valkey`` or ``redis.asyncio.Redis`` client (RESP2 or
            RESP3, ``decode_responses`` on or off). The store never closes a client it
            did not create.
        name: store name; keys are ``{name}:mem:{id}``, the index ``{name}:mem:idx``.
        embed: ``text -> vector`` function, sync or async. An ``int`` attribute ``dim``
            on it saves a probe call at ``ensure_index``.
        embed_many: optional batch embedder ``list[text] -> list[vector]``.
        default_threshold: maximum cosine distance (0..2) of a recalled memory. ``None``
            uses the embedder's ``recommended_threshold`` attribute when it has one (the
            built-in embedders do), else 0.33 (the BetterDB default).
        weights: weights of the composite score (default 0.75 / 0.10 / 0.15, hybrid
            lexical share 0.6; ``RecallWeights(0.6, 0.25, 0.15, lexical=0)`` is BetterDB's).
        half_life_seconds: recency half-life (default 7 days).
        max_items_per_scope: cap of memories per exact scope; lowest importance +
            recency are evicted after a write that exceeds it.
        config_refresh: seconds between re-reads of ``{name}:__mem_config``; ``None``
            disables live config.
        clock: ``() -> seconds since the epoch``; injected for tests.
        backend: ``"auto"`` (FT search when the server has a module, else portable),
            ``"ft"`` or ``"portable"``. With an in-process client
            (:mod:`agent_memory.backends.inprocess`) the backend is ``"inprocess"``.
        max_content_bytes: largest accepted memory text, in UTF-8 bytes.
        registry: a ``prometheus_client.CollectorRegistry`` to record ``agent_memory_*``
            metrics on (labelled by ``name``); ``None`` records none. Spans always go to
            the global OpenTelemetry tracer provider.
        dedupe: default of ``remember(..., dedupe=)``.
        dedupe_distance: cosine distance under which a new memory is a duplicate of
            one in the same exact scope (default 0.05, measured for all-MiniLM-L6-v2).
        keep_fact_history: keep facts superseded by ``consolidate(mode="facts")``
            inspectable through :meth:`fact_history` (default: delete them, as the
            BetterDB TypeScript library does).
        label_policy: bounds the labels writes may carry (:class:`LabelPolicy`).
        labeler: optional ``text -> {key: [values]}`` (sync or async). It labels each
            memory after it is committed (a failure leaves a valid, unlabelled memory,
            logged and counted) and labels recall queries, whose labels only boost
            ranking (weight ``RecallWeights.labels``), never filter.
        reinforcement: let learned utility (``complete``/``feedback``) reorder recall
            candidates (weight ``RecallWeights.utility``); similarity stays the gate.
        forgetting: a :class:`Forgetting` policy; memories whose retention falls below
            its threshold stop appearing in recall and ``list`` but stay inspectable
            (``get``, ``list(include_suppressed=True)``) until :meth:`prune`.
        max_receipts: most selection receipts kept for ``complete`` (oldest dropped).
        receipt_ttl: seconds a selection can be completed after its recall.
        ft_dialect: ``"auto"`` uses what the detected search module accepts beyond the
            valkey-search 1.0.2 dialect (on RediSearch: a ``TEXT`` lexical index and
            query plans); ``"baseline"`` sends only the valkey-search 1.0.2 dialect
            whatever the server. Every process sharing a store should use the same value.
        wait_replicas: when > 0, ``remember``, ``remember_many``, ``import_records`` and
            the deletions (``forget``, ``forget_by_scope``, ``prune``) return only once
            that many replicas acknowledged the write (``WAIT``), else raise
            :class:`~agent_memory.errors.ReplicationTimeoutError` (the write stays
            applied on the primary). Standalone servers with replicas only (a cluster
            client raises ``CapabilityError``). Default 0: replication stays
            asynchronous.
        wait_timeout_ms: how long a write waits for its replicas (default 1000).
        lexical_budget: how many memories the lexical search of a hybrid recall may
            visit: its candidates come from the query's rarest terms whose document
            frequencies sum to at most this (at least twice the semantic candidates),
            every term in a namespace no larger; every candidate is still scored over
            all the query's terms. Larger finds memories by commoner words, at about
            2-5 us of server time per memory visited (README "Recall semantics").
        adopt_interval: seconds between checks for memories another library (BetterDB
            agent-memory) wrote into the store (FT backend): the first operation after
            each interval first adopts them (one round trip when there are none), so
            they reach recall, ``list`` and ``stats`` within about that time while the
            store is in use. ``None`` adopts only at ``ensure_index`` and on
            :meth:`adopt_foreign`. Default 5 seconds.

    Raises:
        InvalidInputError: a bad argument (wrong client kind, bad name, ...).
        CapabilityError: ``wait_replicas`` with a cluster client.
    """

    def __init__(
        self,
        client: Any,
        name: str,
        embed: Callable[[str], Any],
        *,
        embed_many: Callable[[list[str]], Any] | None = None,
        default_threshold: float | None = None,
        weights: RecallWeights | None = None,
        half_life_seconds: float = 604800.0,
        max_items_per_scope: int | None = None,
        config_refresh: float | None = None,
        clock: Clock | None = None,
        backend: str = "auto",
        max_content_bytes: int = DEFAULT_MAX_CONTENT_BYTES,
        registry: CollectorRegistry | None = None,
        dedupe: bool = False,
        dedupe_distance: float = DEFAULT_DEDUPE_DISTANCE,
        keep_fact_history: bool = False,
        label_policy: LabelPolicy | None = None,
        labeler: Callable[[str], Any] | None = None,
        reinforcement: bool = False,
        forgetting: Forgetting | None = None,
        max_receipts: int = 10_000,
        receipt_ttl: float = 3600.0,
        ft_dialect: str = "auto",
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        lexical_budget: int = CANDIDATE_BUDGET,
        adopt_interval: float | None = 5.0,
    ) -> None:
        if is_async_client(client) != _ASYNC:
            wanted = "an async" if _ASYNC else "a sync"
            raise InvalidInputError(
                f"{type(self).__name__} needs {wanted} client, got {type(client).__name__}",
                field="client",
            )
        settings = store_settings(
            client,
            embed=embed,
            embed_many=embed_many,
            default_threshold=default_threshold,
            weights=weights,
            half_life_seconds=half_life_seconds,
            max_items_per_scope=max_items_per_scope,
            clock=clock,
            backend=backend,
            max_content_bytes=max_content_bytes,
            dedupe=dedupe,
            dedupe_distance=dedupe_distance,
            keep_fact_history=keep_fact_history,
            label_policy=label_policy,
            labeler=labeler,
            reinforcement=reinforcement,
            forgetting=forgetting,
            max_receipts=max_receipts,
            receipt_ttl=receipt_ttl,
            ft_dialect=ft_dialect,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
            lexical_budget=lexical_budget,
        )
        self._client = client
        # Replies stay undecoded: each stored value is decoded on its own, so one corrupt
        # value spoils one memory (skipped and counted), never a whole read.
        self._executor = AsyncExecutor(client, raw_replies=True)
        self._owns_client = False
        self._closed = False
        self._config_refresh = refresh_interval(config_refresh)
        self._next_refresh = 0.0
        self._adopt_interval = (
            None if adopt_interval is None else positive_number(adopt_interval, "adopt_interval")
        )
        self._next_adoption = time.monotonic() + (self._adopt_interval or 0.0)
        self._adoption = AdoptionWatch()
        self._telemetry = Telemetry(check_name(name), kind="memory", registry=registry)
        self._ctx = StoreContext(
            keys=Keys(check_name(name)),
            settings=settings,
            config=settings.initial_config,
            telemetry=self._telemetry,
        )

    @classmethod
    def from_url(
        cls, url: str, *, name: str, embed: Callable[[str], Any], **kwargs: Any
    ) -> MemoryStore:
        """Create a store with its own client for ``url`` (closed by :meth:`close`).

        ``client_*`` keyword arguments go to the client (``client_protocol=3`` becomes
        ``protocol=3``); the others to the constructor.

        Raises:
            InvalidInputError: unsupported URL scheme or bad argument.
        """
        client_options = {
            k[len("client_") :]: v for k, v in kwargs.items() if k.startswith("client_")
        }
        store_options = {k: v for k, v in kwargs.items() if not k.startswith("client_")}
        client = client_from_url(url, asyncio=_ASYNC, **client_options)
        store = cls(client, name, embed, **store_options)
        store._owns_client = True
        return store

    @property
    def name(self) -> str:
        """The store name (key prefix)."""
        return self._ctx.keys.name

    @property
    def client(self) -> Any:
        """The underlying client."""
        return self._client

    async def _run(self, op: Operation[T], operation: str, **attributes: AttributeValue) -> T:
        if self._closed:
            op.close()
            raise StoreClosedError(f"store {self.name!r} is closed")
        telemetry = self._telemetry
        with telemetry.operation(operation, attributes=attributes) as scope:
            if self._config_refresh is not None and time.monotonic() >= self._next_refresh:
                self._next_refresh = time.monotonic() + self._config_refresh
                await run_async(refresh_config(self._ctx), self._executor)
            if self._adopt_interval is not None and time.monotonic() >= self._next_adoption:
                self._next_adoption = time.monotonic() + self._adopt_interval
                await self._adopt_recent()
            result = await run_async(op, self._executor, telemetry.child_span)
            describe_result(scope, result)
            return result

    async def _adopt_recent(self) -> None:
        """Adopt what another library wrote since the last check (a best-effort step
        before the caller's operation: a failure is logged and counted, never raised)."""
        backend = self._ctx.backend
        if backend is None or backend.name != "ft" or self._ctx.settings.cluster:
            # Before ensure_index (which adopts itself), no index to count, or a cluster
            # (FT.INFO counts one shard's documents there).
            return
        try:
            adopted = await run_async(adopt_if_changed(self._ctx, self._adoption), self._executor)
        except AgentMemoryError as exc:
            logger.warning("%s: adopting foreign memories failed: %s", self.name, exc)
            self._ctx.count("adoption_failures")
            return
        if adopted:
            self._ctx.count("adopted", adopted)

    async def ensure_index(self) -> IndexStatus:
        """Create the index (or check the existing one) and pick the backend. Idempotent.

        Returns:
            which backend serves the store and the detected server dialect.

        Raises:
            IndexMismatchError: the index or stored identity has another dimension or
                metric than the embedder.
            CapabilityError: ``backend="ft"`` on a server without a search module, or
                the embedder fails on a probe text.
            ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
        """
        return await self._run(ensure_index(self._ctx), "ensure_index")

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
        within the batch collapse too (later ones return the first one's id).

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
        result's ``selection_id`` names this recall for :meth:`complete`.

        Raises:
            InvalidInputError: a bad argument or a bad query vector from the embedder.
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
            InvalidInputError: wrong dimension, NaN/inf or zero vector, bad argument.
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

    async def forget_by_scope(self, scope: Scope, tags: Sequence[str] | None = None) -> int:
        """Delete every memory of a scope (all its sessions unless ``scope.session_id``
        is set), optionally only those carrying all ``tags``. Returns how many.

        Raises:
            InvalidInputError: bad scope or tags.
        """
        require_scope(scope)
        flt = scope_filter(scope, check_tags(tags), session=scope.session_id or False)
        return await self._run(forget_matching(self._ctx, flt), "forget_by_scope")

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
        sources are deleted unless ``delete_sources=False``. Earlier summaries and facts
        are never re-summarised. Lossy by design: for corpora where later statements
        supersede earlier ones, use facts mode.

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
        :meth:`fact_history` with ``keep_fact_history=True``.

        New memories are written before old ones are deleted, under deterministic ids,
        so re-running after a crash converges to the same state.

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
        source/subject/date, metadata and (by default) the vector. Write each with
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
        Every record is validated before anything is written.

        Raises:
            InvalidInputError: a malformed record or a vector of the wrong dimension;
                nothing was written.
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

    async def complete(self, selection_id: str, score: float) -> bool:
        """Report how well a recall served (``score`` in [0, 1], 0.5 is neutral).

        The selection counts as one observation spread over its memories; it can be
        completed once (further calls, even concurrent ones, are no-ops returning
        ``False``), within ``receipt_ttl`` of the recall.

        Returns:
            ``True`` when this call applied the outcome.

        Raises:
            InvalidInputError: malformed selection id or score outside [0, 1].
        """
        check_selection(selection_id)
        value = check_score(score, low=0.0, high=1.0, field="score")
        return await self._run(complete(self._ctx, selection_id, value), "complete")

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

    async def stats(self) -> MemoryStats:
        """Item count and counters (``{name}:__mem_stats``)."""
        return await self._run(ensured(self._ctx, stats(self._ctx)), "stats")

    def current_config(self) -> LiveConfig:
        """The configuration in force (a copy)."""
        c = self._ctx.config
        return LiveConfig(c.threshold, c.weights, c.half_life_seconds, c.max_items_per_scope)

    async def refresh_config(self) -> LiveConfig:
        """Re-read ``{name}:__mem_config`` now; invalid values are logged and ignored."""
        return await self._run(refresh_config(self._ctx), "refresh_config")

    async def close(self) -> None:
        """Release the store (idempotent); closes the client only if the store created it."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            await close_async_client(self._client)

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        backend = self._ctx.backend.name if self._ctx.backend else "not ensured"
        return f"{type(self).__name__}(name={self.name!r}, backend={backend!r})"


__all__ = ["MemoryStore"]
