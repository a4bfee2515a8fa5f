"""The asyncio long-term memory store: its construction, lifecycle and index.

Its public methods come in groups, like a redis-py client's commands: memories
themselves in :mod:`agent_memory.store.memories` (remember, recall, read, forget) and
upkeep in :mod:`agent_memory.store.upkeep` (consolidation, transfer, adoption,
learning, pruning). Each method checks its arguments and runs one operation of
:mod:`agent_memory.store.ops` through :meth:`MemoryStore._run`.

``sync_store.py`` is generated from this file by ``scripts/unasync.py`` (the test suite
fails when the two drift): edit this file, then run ``python scripts/unasync.py``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from agent_memory.backends.context import (
    Clock,
    LiveConfig,
    StoreContext,
)
from agent_memory.core.client_factory import (
    client_from_url,
    close_async_client,
    release_unused_client,
)
from agent_memory.core.clients import AsyncExecutor, is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.core.runner import run_async
from agent_memory.errors import (
    AgentMemoryError,
    InvalidInputError,
    ServerUnavailableError,
    StoreClosedError,
)
from agent_memory.schema.labels import LabelPolicy
from agent_memory.schema.layout import Keys
from agent_memory.schema.term_choice import CANDIDATE_BUDGET
from agent_memory.schema.types import RecallWeights
from agent_memory.schema.utility import Forgetting
from agent_memory.store.abandoned import release_abandoned
from agent_memory.store.arguments import positive_number
from agent_memory.store.config import refresh_config
from agent_memory.store.memories import MemoryMethods
from agent_memory.store.ops.adopt import (
    AdoptionWatch,
    adopt_if_changed,
)
from agent_memory.store.ops.dedupe import DEFAULT_DEDUPE_DISTANCE
from agent_memory.store.ops.ensure import IndexStatus, ensure_index, ensured
from agent_memory.store.ops.read import MemoryStats, stats
from agent_memory.store.settings import refresh_interval, store_settings
from agent_memory.store.upkeep import UpkeepMethods
from agent_memory.store.validation import check_name
from agent_memory.telemetry import Telemetry
from agent_memory.telemetry.core import AttributeValue, describe_result

_ASYNC = True
logger = logging.getLogger("agent_memory.store")
DEFAULT_MAX_CONTENT_BYTES = 32 * 1024


class MemoryStore(MemoryMethods, UpkeepMethods):
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
        """Create a store with its own client for ``url`` (closed by :meth:`close`, or
        at once when the constructor refuses its arguments).

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
        try:
            store = cls(client, name, embed, **store_options)
        except BaseException:
            release_unused_client(client)
            raise
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

    @property
    def max_content_bytes(self) -> int:
        """The largest memory text this store accepts, in UTF-8 bytes."""
        return self._ctx.settings.max_content_bytes

    def report_corrupt_record(self, memory_id: str, problem: str) -> None:
        """Log and count a memory that an adapter could read only in part, e.g.
        metadata of its own that another writer damaged.

        For integrations that keep data in the memories' metadata: the damage shows in
        the counter of the store's own unreadable records (``corrupt_records`` of its
        metrics).

        Raises:
            InvalidInputError: ``memory_id`` or ``problem`` is not a ``str``.
        """
        if not isinstance(memory_id, str) or not isinstance(problem, str):
            raise InvalidInputError(
                "report_corrupt_record takes the memory id and the problem as str",
                field="memory_id" if not isinstance(memory_id, str) else "problem",
            )
        logger.warning("%s: memory %s is partly unreadable: %s", self.name, memory_id, problem)
        self._ctx.count("corrupt_records")

    def report_truncated(self, what: str, amount: int = 1) -> None:
        """Log and count texts an adapter cut to :attr:`max_content_bytes` before
        remembering them (rather than fail a whole batch over one long text).

        The cut shows in the store's metrics as
        ``agent_memory_events{event="truncated_contents"}``; ``what`` names the source
        in the warning (never the text itself).

        Raises:
            InvalidInputError: ``what`` is not a ``str`` or ``amount`` not a positive int.
        """
        if not isinstance(what, str):
            raise InvalidInputError("report_truncated takes what was cut as str", field="what")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
            raise InvalidInputError("amount must be a positive int", field="amount")
        logger.warning(
            "%s: %d %s cut to %d bytes before being remembered",
            self.name,
            amount,
            what,
            self.max_content_bytes,
        )
        self._ctx.count("truncated_contents", amount)

    async def _run(self, op: Operation[T], operation: str, **attributes: AttributeValue) -> T:
        if self._closed:
            op.close()
            raise StoreClosedError(f"store {self.name!r} is closed")
        telemetry = self._telemetry
        with telemetry.operation(operation, attributes=attributes) as scope:
            try:
                if self._config_refresh is not None and time.monotonic() >= self._next_refresh:
                    self._next_refresh = time.monotonic() + self._config_refresh
                    await run_async(refresh_config(self._ctx), self._executor)
                if self._adopt_interval is not None and time.monotonic() >= self._next_adoption:
                    self._next_adoption = time.monotonic() + self._adopt_interval
                    await self._adopt_recent()
                try:
                    result = await run_async(op, self._executor, telemetry.child_span)
                except BaseException:
                    release_abandoned(self._ctx, self._executor)  # a cancelled write's claims
                    raise
            except ServerUnavailableError as exc:
                if self._closed:  # close() (another thread's) dropped the connections
                    raise StoreClosedError(
                        f"store {self.name!r} was closed during {operation}"
                    ) from exc
                raise
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
        except Exception as exc:  # best-effort: never the caller's failure
            # Not ours (a bug, or a record we did not foresee): its traceback helps.
            logger.warning(
                "%s: adopting foreign memories failed: %s",
                self.name, exc, exc_info=not isinstance(exc, AgentMemoryError),
            )  # fmt: skip
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
        """Release the store (idempotent); closes the client only if the store created it.

        A call of another thread (or task) under way then finishes, or raises
        :class:`~agent_memory.errors.StoreClosedError` when its connection was closed."""
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
