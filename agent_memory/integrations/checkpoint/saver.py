"""The LangGraph checkpoint saver over Valkey or Redis (see the package docstring)."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from prometheus_client import CollectorRegistry

from agent_memory.core.client_factory import (
    client_from_url,
    close_async_client,
    close_sync_client,
    released_on_failure,
)
from agent_memory.core.clients import AsyncExecutor, SyncExecutor, is_async_client
from agent_memory.core.effects import Operation, T
from agent_memory.core.runner import run_async, run_sync
from agent_memory.errors import CapabilityError, InvalidInputError, StoreClosedError
from agent_memory.integrations._keys import check_name
from agent_memory.integrations.checkpoint import ops
from agent_memory.integrations.checkpoint.commands import Stored
from agent_memory.integrations.checkpoint.layout import DEFAULT_NAME, Lane, Layout
from agent_memory.telemetry import Telemetry

logger = logging.getLogger(__name__)

#: The event counting checkpoint ids dropped from a lane's index because they name no
#: record (the name the memory store and the conversation store give such entries).
GHOST_ENTRIES = "ghost_entries"


class AgentMemorySaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer storing threads in Valkey or Redis (no module needed).

    Args:
        client: a ``valkey`` or ``redis`` client, blocking or asyncio, standalone or
            cluster. A blocking client serves the sync methods (and the async ones in a
            worker thread when no asyncio client is given); an asyncio client serves
            the async methods only.
        async_client: an asyncio client for the async methods, beside a blocking
            ``client``.
        name: the key prefix (``{name}:cp:...``); savers with different names share
            nothing.
        ttl: ``{"default_ttl": minutes, "refresh_on_read": True}`` as LangGraph's
            Redis and Postgres savers take it: every key of a ``(thread, namespace)``
            expires ``default_ttl`` minutes after its last write or, with
            ``refresh_on_read`` (the default), its last read. ``None``: kept forever.
        serde: LangGraph serializer (default ``JsonPlusSerializer``), used through
            ``dumps_typed`` / ``loads_typed``; values are stored as binary.
        registry: a ``prometheus_client.CollectorRegistry`` counting damaged checkpoints
            (``agent_memory_events{event="corrupt_records"}``) and dropped index entries
            (``ghost_entries``); ``None``: no metric.

    Raises:
        InvalidInputError: no client, a client of the wrong kind, or a bad option.

    A checkpoint whose stored bytes another writer damaged (a checkpoint, metadata,
    channel value or pending write the ``serde`` cannot decode, or that decodes to
    something else than LangGraph's shapes, or a checkpoint id that is not UTF-8) is
    logged, counted (:attr:`skipped`, and the metric) and left out of ``list`` and of
    ``get_tuple`` of the newest checkpoint; ``get_tuple`` naming exactly that checkpoint
    raises ``ReplyParseError``. An entry of a thread's namespaces that is not UTF-8 is
    logged, counted the same way and left out of ``list``, ``delete_thread``, ``prune``
    and ``copy_thread``, as is a thread key whose name is not UTF-8 from ``list``
    across threads. A checkpoint id naming no record (another client's, or its record
    evicted) is left out, dropped from the thread's index by the read that met it (the
    saver writes an id and its record in one script, so it is never a write in
    flight), logged and counted in the metric as ``ghost_entries``.

    Capabilities (every one the conformance suite knows): ``put``, ``put_writes``,
    ``get_tuple``, ``list``, ``delete_thread``, ``delete_for_runs``, ``copy_thread``,
    ``prune``. ``DeltaChannel`` histories use LangGraph's default parent walk; ``prune``
    with ``keep_latest`` keeps only the newest checkpoint per namespace, so a graph
    using ``DeltaChannel`` should not be pruned (see ``BaseCheckpointSaver.prune``).
    """

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        name: str = DEFAULT_NAME,
        ttl: Mapping[str, Any] | None = None,
        serde: SerializerProtocol | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if client is None and async_client is None:
            raise InvalidInputError("give a client, an async_client or both", field="client")
        if client is not None and is_async_client(client):
            if async_client is not None:
                raise InvalidInputError("client is an asyncio client", field="client")
            client, async_client = None, client
        if async_client is not None and not is_async_client(async_client):
            raise InvalidInputError("async_client must be an asyncio client", field="async_client")
        self._layout = Layout(check_name(name))
        self._telemetry = Telemetry(self._layout.name, registry=registry)
        self._skipped = 0
        self._lock = threading.Lock()
        self._ttl_ms, refresh = ops.ttl_settings(ttl)
        self._refresh_ms = self._ttl_ms if refresh else 0
        self.ttl_config = dict(ttl) if ttl is not None else None
        self._sync = SyncExecutor(client) if client is not None else None
        self._async = AsyncExecutor(async_client) if async_client is not None else None
        self._owned = False
        self._closed = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        name: str = DEFAULT_NAME,
        ttl: Mapping[str, Any] | None = None,
        serde: SerializerProtocol | None = None,
        registry: CollectorRegistry | None = None,
        **client_options: Any,
    ) -> AgentMemorySaver:
        """A saver with its own blocking and asyncio clients for ``url`` (``valkey://``,
        ``redis://``, ``rediss://``, ``unix://``), closed by :meth:`close` /
        :meth:`aclose`. ``client_options`` go to both clients (socket timeouts default
        to 10 s).

        Raises:
            InvalidInputError: a bad URL or option.
        """
        sync_client = client_from_url(url, asyncio=False, **client_options)
        with released_on_failure(sync_client):
            async_client = client_from_url(url, asyncio=True, **client_options)
        with released_on_failure(sync_client, async_client):  # a bad name, TTL, registry...
            saver = cls(
                sync_client,
                async_client=async_client,
                name=name,
                ttl=ttl,
                serde=serde,
                registry=registry,
            )
        saver._owned = True
        return saver

    @property
    def name(self) -> str:
        """The key prefix."""
        return self._layout.name

    @property
    def skipped(self) -> int:
        """How many damaged checkpoints this saver's reads have met so far (left out,
        or refused by ``get_tuple`` of that checkpoint); each one read is counted."""
        return self._skipped

    def _damaged(self, lane: Lane, stored: Stored[Any]) -> None:
        """Log and count a checkpoint a read left out: one another writer damaged, or an
        id naming no record, which the read dropped from the index (see the class
        docstring)."""
        if stored.gone:
            logger.warning(
                "checkpointer %s: checkpoint id %r of thread %r (namespace %r) names no "
                "record (another client's, or evicted), dropped from the index",
                self._layout.name, stored.checkpoint_id, lane.thread_id, lane.checkpoint_ns,
            )  # fmt: skip
            self._telemetry.count(GHOST_ENTRIES)
            return
        logger.warning(
            "checkpointer %s: checkpoint %r of thread %r (namespace %r) is unreadable, "
            "left out: %s",
            self._layout.name, stored.checkpoint_id, lane.thread_id, lane.checkpoint_ns,
            stored.problem,
        )  # fmt: skip
        with self._lock:
            self._skipped += 1
        self._telemetry.count("corrupt_records")

    def _unreadable(self, what: str) -> None:
        """Log and count an index entry another writer left unreadable (left out)."""
        logger.warning("checkpointer %s: %s, left out", self._layout.name, what)
        with self._lock:
            self._skipped += 1
        self._telemetry.count("corrupt_records")

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close the blocking client if :meth:`from_url` created it (idempotent); the
        saver refuses further calls.

        Raises:
            ServerUnavailableError: closing the client failed.
        """
        if self._closed:
            return
        self._closed = True
        if self._owned and self._sync is not None:
            close_sync_client(self._sync.client)

    async def aclose(self) -> None:
        """Close both clients if :meth:`from_url` created them (idempotent).

        Raises:
            ServerUnavailableError: closing a client failed.
        """
        if self._closed:
            return
        if self._owned and self._async is not None:
            await close_async_client(self._async.client)
        self.close()

    def __enter__(self) -> AgentMemorySaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> AgentMemorySaver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- runners ---------------------------------------------------------------------

    def _run(self, op: Operation[T]) -> T:
        if self._closed:
            op.close()
            raise StoreClosedError("this AgentMemorySaver is closed")
        if self._sync is None:
            op.close()
            raise CapabilityError(
                "this AgentMemorySaver has only an asyncio client: use the async methods "
                "(aget_tuple, aput, alist, ...) or give a blocking client too"
            )
        return run_sync(op, self._sync)

    async def _arun(self, op: Operation[T]) -> T:
        if self._closed:
            op.close()
            raise StoreClosedError("this AgentMemorySaver is closed")
        if self._async is None:
            return await asyncio.to_thread(self._run, op)
        return await run_async(op, self._async)

    # -- BaseCheckpointSaver ---------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (``checkpoint_id``), or the newest of its
        thread and namespace; ``None`` when there is none. One round trip.

        Damaged checkpoints (another writer's bytes, see the class docstring) are
        logged and counted. Without ``checkpoint_id`` they are skipped: the newest
        checkpoint that reads is returned, the one ``list`` gives first, so a graph
        resumes from its last readable state (the skip costs a round trip). Naming a
        damaged checkpoint raises: ``None`` would say it does not exist, and LangGraph
        would restart that run, or a ``DeltaChannel`` walk would stop there, from an
        empty state.

        Raises:
            InvalidInputError: a config without a usable ``thread_id``.
            ReplyParseError: ``checkpoint_id`` names a damaged checkpoint (its id and
                what is wrong in the message).
            AgentMemoryError: the server failed (unavailable, timeout, error reply).
        """
        return self._run(self._get(config))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple` (same arguments, same errors)."""
        return await self._arun(self._get(config))

    def _get(self, config: Any) -> Operation[CheckpointTuple | None]:
        return ops.get_tuple(self._layout, self.serde, config, self._refresh_ms, self._damaged)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first (per namespace), read in pages of
        :data:`~.ops.PAGE` per round trip. ``config`` narrows to a thread, a namespace
        (absent: every namespace of the thread) and a checkpoint id; ``None`` lists
        every thread (a SCAN). ``filter`` keeps checkpoints whose metadata equals each
        given value; ``before`` keeps older ids; ``limit`` caps the count. Damaged
        checkpoints are left out (logged and counted, see the class docstring).

        Raises:
            InvalidInputError: a bad config, ``before``, ``filter`` or ``limit`` (at the
                call, before any I/O).
            AgentMemoryError: the server failed.
        """
        plan = self._plan(config, filter, before, limit)
        return self._pages(plan)

    def _plan(self, config: Any, flt: Any, before: Any, limit: Any) -> ops.ListPlan:
        return ops.ListPlan(
            self._layout,
            self.serde,
            config,
            flt,
            before,
            limit,
            self._refresh_ms,
            self._damaged,
            self._unreadable,
        )

    def _pages(self, plan: ops.ListPlan) -> Iterator[CheckpointTuple]:
        while not plan.done:
            yield from self._run(plan.page())

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list` (same arguments, same errors, raised at the first step)."""
        plan = self._plan(config, filter, before, limit)
        while not plan.done:
            for item in await self._arun(plan.page()):
                yield item

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (values of the channels in ``new_versions`` are stored
        once per version and shared by later checkpoints). One round trip.

        Returns:
            The config of the stored checkpoint.

        Raises:
            InvalidInputError: a bad config or checkpoint, or a value ``serde`` cannot
                serialise.
            AgentMemoryError: the server failed.
        """
        return self._run(self._put(config, checkpoint, metadata, new_versions))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put` (same arguments, same errors)."""
        return await self._arun(self._put(config, checkpoint, metadata, new_versions))

    def _put(
        self, config: Any, checkpoint: Checkpoint, metadata: Any, versions: Any
    ) -> Operation[RunnableConfig]:
        return ops.put(
            self._layout, self.serde, config, checkpoint, metadata, versions, self._ttl_ms
        )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store pending writes of the checkpoint ``config`` names. A repeated
        ``(task_id, index)`` keeps the first write, except for LangGraph's special
        channels (``ERROR``, ``INTERRUPT``, ``SCHEDULED``, ``RESUME``), which replace
        it, as in LangGraph's own savers. One round trip.

        Raises:
            InvalidInputError: a config without ``checkpoint_id``, a malformed write or
                a value ``serde`` cannot serialise.
            AgentMemoryError: the server failed.
        """
        self._run(self._writes(config, writes, task_id, task_path))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes` (same arguments, same errors)."""
        await self._arun(self._writes(config, writes, task_id, task_path))

    def _writes(self, config: Any, writes: Any, task_id: str, task_path: str) -> Operation[None]:
        return ops.put_writes(
            self._layout, self.serde, config, writes, task_id, task_path, self._ttl_ms
        )

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread, in every namespace (a
        no-op for an unknown thread). Three round trips at most.

        Raises:
            InvalidInputError: a thread id that is not a ``str`` (or int / UUID).
            AgentMemoryError: the server failed.
        """
        self._run(
            ops.delete_threads(
                self._layout, [thread_id], "all", self._unreadable, field="thread_id"
            )
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread` (same arguments, same errors)."""
        await self._arun(
            ops.delete_threads(
                self._layout, [thread_id], "all", self._unreadable, field="thread_id"
            )
        )

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint whose metadata ``run_id`` is one of ``run_ids``, in
        any thread (copies included), with its writes. Runs are found through an index
        written by :meth:`put`, which expires with ``ttl`` after the run's last put.

        Raises:
            InvalidInputError: ``run_ids`` is a bare string or not an iterable, or a
                run id in it is not a ``str`` (or int / UUID); nothing was deleted.
            AgentMemoryError: the server failed.
        """
        self._run(ops.delete_for_runs(self._layout, run_ids))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs` (same arguments, same errors)."""
        await self._arun(ops.delete_for_runs(self._layout, run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread, in every namespace, into
        another thread (merged into what the target holds). Three round trips.

        Raises:
            InvalidInputError: a thread id that is not a ``str`` (or int / UUID).
            AgentMemoryError: the server failed.
        """
        self._run(
            ops.copy_thread(
                self._layout, source_thread_id, target_thread_id, self._ttl_ms, self._unreadable
            )
        )

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread` (same arguments, same errors)."""
        await self._arun(
            ops.copy_thread(
                self._layout, source_thread_id, target_thread_id, self._ttl_ms, self._unreadable
            )
        )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads: ``"keep_latest"`` keeps the newest checkpoint of each
        namespace (with its writes and the channel values it refers to),
        ``"delete"`` deletes them.

        Raises:
            InvalidInputError: an unknown strategy, ``thread_ids`` a bare string or not
                an iterable, or a bad thread id in it; nothing was pruned.
            AgentMemoryError: the server failed.
        """
        self._run(
            ops.delete_threads(self._layout, thread_ids, ops.prune_mode(strategy), self._unreadable)
        )

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune` (same arguments, same errors)."""
        await self._arun(
            ops.delete_threads(self._layout, thread_ids, ops.prune_mode(strategy), self._unreadable)
        )

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The next channel version, as LangGraph's in-memory, Postgres and Redis
        savers make it: a zero-padded counter and a random fraction
        (``"00000000000000000000000000000002.0.5488..."``), ordered as strings."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"
