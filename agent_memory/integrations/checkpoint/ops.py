"""The checkpointer's operations: generators run by the sync or the async runner.

Each operation yields commands (one batch per round trip) built by :mod:`.commands`
and returns parsed LangGraph values; the saver's sync and async methods drive the same
operations, so the two sides cannot drift.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from agent_memory.core import replies
from agent_memory.core.checks import MAX_TTL_SECONDS, check_ttl_seconds
from agent_memory.core.effects import Command, Operation, execute_batch, scan_keys
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.integrations.checkpoint import commands as cmds
from agent_memory.integrations.checkpoint.layout import (
    Lane,
    Layout,
    before_id,
    checkpoint_config,
    id_list,
    list_scope,
    parse_run_member,
    run_member,
    target,
    thread_id_of,
)

PAGE = 100
"""Checkpoints read per round trip by ``list`` (metadata only when filtering)."""

V = TypeVar("V")

Report = Callable[[Lane, cmds.Stored[Any]], None]
"""Told of each checkpoint a read met and left out: damaged (its ``problem`` says why)
or ``gone`` (an id naming no record, which the read dropped from the lane's ids)."""

Unreadable = Callable[[str], None]
"""Told of each entry of a thread's namespaces another writer left unreadable (not
UTF-8): what it is, for the log."""


def readable_pairs(
    found: Sequence[cmds.Stored[V]], lane: Lane, report: Report
) -> list[tuple[str, V]]:
    """``(checkpoint id, value)`` of the checkpoints that decoded; each other one
    (damaged or gone) is reported."""
    pairs: list[tuple[str, V]] = []
    for stored in found:
        if stored.value is None:
            report(lane, stored)
        else:
            pairs.append((stored.checkpoint_id, stored.value))
    return pairs


def readable(found: Sequence[cmds.Stored[V]], lane: Lane, report: Report) -> list[V]:
    """The values of the checkpoints that decoded; each other one is reported."""
    return [value for _, value in readable_pairs(found, lane, report)]


def ttl_settings(ttl: Mapping[str, Any] | None) -> tuple[int, bool]:
    """``(default TTL in ms (0: none), refresh_on_read)`` of a TTL config.

    Raises:
        InvalidInputError: not a mapping, an unknown option or a bad value.
    """
    if ttl is None:
        return 0, False
    if not isinstance(ttl, Mapping):
        raise InvalidInputError("ttl must be a mapping like {'default_ttl': 60}", field="ttl")
    unknown = set(ttl) - {"default_ttl", "refresh_on_read", "strategy", "sweep_interval_minutes"}
    if unknown:
        raise InvalidInputError(f"unknown ttl options {sorted(unknown)}", field="ttl")
    minutes = ttl.get("default_ttl")
    refresh = ttl.get("refresh_on_read", True)
    if not isinstance(refresh, bool):
        raise InvalidInputError("ttl['refresh_on_read'] must be a bool", field="ttl")
    if minutes is None:
        return 0, False
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
        raise InvalidInputError(
            "ttl['default_ttl'] must be a positive number of minutes", field="ttl"
        )
    try:
        # the library's one TTL bound (ten years): the server's PEXPIRE takes it, and a
        # put never fails on its expiry after the script wrote the checkpoint
        seconds = check_ttl_seconds(minutes * 60, field="ttl")
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"ttl['default_ttl'] must be > 0 and at most {MAX_TTL_SECONDS // 60} minutes, "
            f"got {minutes!r:.40}",
            field="ttl",
        ) from exc
    assert seconds is not None  # minutes is a number
    return max(1, round(seconds * 1000)), refresh


def prune_mode(strategy: object) -> str:
    """The drop mode of a prune strategy.

    Raises:
        InvalidInputError: an unknown strategy.
    """
    if strategy == "keep_latest":
        return "keep_latest"
    if strategy == "delete":
        return "all"
    raise InvalidInputError(
        f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'", field="strategy"
    )


def _batch(commands: Sequence[Command]) -> Operation[list[Any]]:
    got = yield from execute_batch(commands)
    raise_first_error(got)
    return got


def put(
    layout: Layout,
    serde: SerializerProtocol,
    config: Any,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    ttl_ms: int,
) -> Operation[RunnableConfig]:
    """Store a checkpoint (one round trip, its run index included)."""
    where = target(config)
    lane = layout.lane(where.thread_id, where.checkpoint_ns)
    merged = get_checkpoint_metadata(config, metadata)
    command = cmds.put_command(
        lane, serde, checkpoint, merged, where.checkpoint_id, new_versions, ttl_ms
    )
    run_id = merged.get("run_id")
    indexed = cmds.run_commands(
        layout, run_id if isinstance(run_id, str) else "", lane, [checkpoint["id"]], ttl_ms
    )
    yield from _batch([command, *indexed])
    return cast(
        RunnableConfig, checkpoint_config(where.thread_id, where.checkpoint_ns, checkpoint["id"])
    )


def put_writes(
    layout: Layout,
    serde: SerializerProtocol,
    config: Any,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    ttl_ms: int,
) -> Operation[None]:
    """Store pending writes of the checkpoint ``config`` names (one round trip)."""
    where = target(config)
    if where.checkpoint_id is None:
        raise InvalidInputError("put_writes needs a config with a checkpoint_id", field="config")
    lane = layout.lane(where.thread_id, where.checkpoint_ns)
    command = cmds.put_writes_command(
        lane, serde, where.checkpoint_id, writes, task_id, task_path, ttl_ms
    )
    if command is not None:
        yield from _batch([command])


def get_tuple(
    layout: Layout, serde: SerializerProtocol, config: Any, refresh_ms: int, report: Report
) -> Operation[CheckpointTuple | None]:
    """The checkpoint ``config`` names, or the newest readable one of its namespace (one
    round trip unless the newest are damaged: those are reported and skipped).

    Raises:
        ReplyParseError: ``config`` names a checkpoint that is damaged (reported too).
    """
    where = target(config)
    lane = layout.lane(where.thread_id, where.checkpoint_ns)
    if where.checkpoint_id is None:
        return (yield from _latest(lane, serde, refresh_ms, report))
    (reply,) = yield from _batch([cmds.pick_command(lane, [where.checkpoint_id], refresh_ms)])
    for stored in cmds.records(reply, lane, serde):
        if stored.gone:
            continue  # a pick returns records only: never met
        if stored.value is None:
            report(lane, stored)
            raise ReplyParseError(
                f"checkpoint {stored.checkpoint_id!r} of thread {lane.thread_id!r} "
                f"(namespace {lane.checkpoint_ns!r}) is damaged: {stored.problem}"
            )
        return stored.value
    return None


def _latest(
    lane: Lane, serde: SerializerProtocol, refresh_ms: int, report: Report
) -> Operation[CheckpointTuple | None]:
    """The newest checkpoint of ``lane`` that reads: one record first (the common case),
    then pages past damaged and gone ones."""
    before: bytes | None = None
    count = 1
    while True:
        command = cmds.range_command(lane, before, count, refresh_ms, meta=False)
        (reply,) = yield from _batch([command])
        found = cmds.records(reply, lane, serde)
        for stored in found:
            if stored.value is not None:
                return stored.value
            report(lane, stored)
        if len(found) < count:
            return None
        before, count = found[-1].raw_id, PAGE


def _namespaces(key: str, reply: Any, unreadable: Unreadable) -> dict[str, str]:
    """The readable entries of a thread's namespaces; each other one is told."""
    found, bad = cmds.namespaces(reply)
    for name in bad:
        unreadable(f"namespace entry {name!r} of {key} is not valid UTF-8")
    return found


def _read_namespaces(keys: Sequence[str]) -> Operation[list[Any]]:
    """HGETALL of namespace hashes, undecoded: an entry another writer left that is not
    UTF-8 must spoil only itself (a decoding client would fail the whole reply)."""
    return (yield from _batch([Command(("HGETALL", k), binary=True) for k in keys]))


def _lanes(
    layout: Layout, thread_ids: Sequence[str], unreadable: Unreadable
) -> Operation[list[Lane]]:
    """Every lane of the threads (one round trip), root namespace included."""
    keys = [layout.namespaces(t) for t in thread_ids]
    got = yield from _read_namespaces(keys)
    lanes: list[Lane] = []
    for thread_id, key, reply in zip(thread_ids, keys, got, strict=True):
        names = set(_namespaces(key, reply, unreadable)) | {""}
        lanes += [layout.lane(thread_id, ns) for ns in sorted(names)]
    return lanes


def _all_lanes(layout: Layout, unreadable: Unreadable) -> Operation[list[Lane]]:
    """Every lane of every thread (SCAN: a maintenance path). A key whose name is not
    UTF-8 (another client's: this library names them with hex digests) is told to
    ``unreadable`` and left out."""
    found = yield from scan_keys(layout.namespaces_pattern(), binary=True)
    keys: list[str] = []
    for raw in sorted(set(map(replies.raw_bytes, found))):  # SCAN may repeat a key
        key = replies.lenient_text(raw)
        if key is None:
            unreadable(f"thread key '{cmds.printable(raw)}' is not valid UTF-8")
        else:
            keys.append(key)
    got = yield from _read_namespaces(keys)
    lanes: list[Lane] = []
    for key, reply in zip(keys, got, strict=True):
        for ns, thread_id in sorted(_namespaces(key, reply, unreadable).items()):
            lanes.append(layout.lane(thread_id, ns))
    return lanes


def _unindex(layout: Layout, dropped: list[tuple[Lane, list[tuple[str, str]]]]) -> Operation[None]:
    """Remove deleted checkpoints from their runs' indexes (one round trip)."""
    members: defaultdict[str, list[str]] = defaultdict(list)
    for lane, pairs in dropped:
        for run_id, cid in pairs:
            if run_id:
                members[run_id].append(run_member(lane.thread_id, lane.checkpoint_ns, cid))
    if members:
        yield from _batch([Command(("SREM", layout.run(r), *m)) for r, m in members.items()])


def _drop(layout: Layout, work: Sequence[tuple[Lane, str, Sequence[str]]]) -> Operation[None]:
    """Run drop scripts (one round trip), then clean the run indexes."""
    if not work:
        return
    got = yield from _batch([cmds.drop_command(lane, mode, ids) for lane, mode, ids in work])
    yield from _unindex(layout, [(w[0], cmds.dropped(r)) for w, r in zip(work, got, strict=True)])


def delete_threads(
    layout: Layout,
    thread_ids: Iterable[Any],
    mode: str,
    unreadable: Unreadable,
    *,
    field: str = "thread_ids",
) -> Operation[None]:
    """Delete (``all``) or prune (``keep_latest``) every namespace of the threads (a
    namespace entry that is not UTF-8 is told to ``unreadable`` and left)."""
    threads = id_list(thread_ids, field=field)
    if not threads:
        return
    lanes = yield from _lanes(layout, threads, unreadable)
    yield from _drop(layout, [(lane, mode, ()) for lane in lanes])


def delete_for_runs(layout: Layout, run_ids: Iterable[Any]) -> Operation[None]:
    """Delete every checkpoint (and its writes) of the runs, in any thread."""
    runs = id_list(run_ids, field="run_ids")
    if not runs:
        return
    got = yield from _batch([Command(("SMEMBERS", layout.run(r))) for r in runs])
    by_lane: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
    for reply in got:
        for member in reply or ():
            where = parse_run_member(replies.text(member))
            if where is not None:
                by_lane[where[:2]].append(where[2])
    work = [(layout.lane(t, ns), "ids", ids) for (t, ns), ids in by_lane.items()]
    yield from _drop(layout, work)
    # Only the members read leave the runs' index: a checkpoint a concurrent put of the
    # same run indexed meanwhile stays listed there (and is found by the next call).
    unindex = [
        Command(("SREM", layout.run(r), *members))
        for r, members in zip(runs, got, strict=True)
        if members
    ]
    if unindex:
        yield from _batch(unindex)


def copy_thread(
    layout: Layout, source: Any, destination: Any, ttl_ms: int, unreadable: Unreadable
) -> Operation[None]:
    """Copy every namespace of ``source`` into ``destination`` (three round trips; a
    namespace entry that is not UTF-8 is told to ``unreadable`` and not copied)."""
    src, dst = (
        thread_id_of(source, field="source_thread_id"),
        thread_id_of(destination, field="target_thread_id"),
    )
    lanes = yield from _lanes(layout, [src], unreadable)
    exported = yield from _batch([c for lane in lanes for c in cmds.export_commands(lane)])
    writes: list[Command] = []
    for i, lane in enumerate(lanes):
        ids_reply, records_reply, values_reply = exported[3 * i : 3 * i + 3]
        ids = [replies.raw_bytes(cid) for cid in ids_reply or ()]
        if not ids:
            continue
        records = cmds.binary_map(records_reply)
        into = layout.lane(dst, lane.checkpoint_ns)
        writes.append(
            cmds.import_command(into, ids, records, cmds.binary_map(values_reply), ttl_ms)
        )
        runs: defaultdict[str, list[str]] = defaultdict(list)
        for raw in ids:
            cid = replies.lenient_text(raw)  # another writer's id: copied, not indexed
            run_id = records.get(b"r:" + raw, b"").decode("utf-8", "replace")
            if run_id and cid is not None:
                runs[run_id].append(cid)
        for run_id, cids in runs.items():
            writes += cmds.run_commands(layout, run_id, into, cids, ttl_ms)
    if writes:
        yield from _batch(writes)


def _check_filter(flt: object) -> dict[str, Any] | None:
    if flt is None:
        return None
    if not isinstance(flt, Mapping):
        raise InvalidInputError("filter must be a mapping of metadata keys", field="filter")
    return dict(flt)


def _check_limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError("limit must be a non-negative int or None", field="limit")
    return limit


class ListPlan:
    """``list`` as a series of page operations: :meth:`page` reads the next page (one
    round trip: the first may resolve the namespaces or threads, a filtered page reads
    metadata first), until :attr:`done`. Damaged checkpoints (an id that is not UTF-8
    included) and ids naming no record (dropped from the index by the read) are told
    to ``report`` and left out; a page may then be short, the next one goes on.
    Namespace entries and thread keys that are not UTF-8 are told to ``unreadable``
    and left out.

    Raises (at construction):
        InvalidInputError: a bad config, ``before``, ``filter`` or ``limit``.
    """

    def __init__(
        self,
        layout: Layout,
        serde: SerializerProtocol,
        config: Any,
        flt: Any,
        before: Any,
        limit: Any,
        refresh_ms: int,
        report: Report,
        unreadable: Unreadable,
    ) -> None:
        self._layout, self._serde, self._refresh = layout, serde, refresh_ms
        self._report, self._unreadable = report, unreadable
        self._thread, self._ns, self._only = list_scope(config)
        self._before = before_id(before)
        self._filter = _check_filter(flt)
        self._left = _check_limit(limit)
        self._lanes: list[Lane] | None = None
        self._cursor: str | bytes | None = None
        self.done = self._left == 0

    def _wanted(self, cid: str, metadata: Mapping[str, Any] | None) -> bool:
        if self._only is not None and cid != self._only:
            return False
        if self._before is not None and cid >= self._before:
            return False
        return metadata is None or all(
            metadata.get(k) == v for k, v in (self._filter or {}).items()
        )

    def page(self) -> Operation[list[CheckpointTuple]]:
        """The next page of matching checkpoints (possibly empty while not done)."""
        if self._lanes is None:
            if self._thread is not None and self._ns is not None:
                self._lanes = [self._layout.lane(self._thread, self._ns)]
            elif self._thread is not None:
                lanes = yield from _lanes(self._layout, [self._thread], self._unreadable)
                self._lanes = lanes
            else:
                lanes = yield from _all_lanes(self._layout, self._unreadable)
                self._lanes = [lane for lane in lanes if self._ns in (None, lane.checkpoint_ns)]
        if self.done or not self._lanes:
            self.done = True
            return []
        lane = self._lanes[0]
        found = yield from self._lane_page(lane)
        if self._left is not None:
            found = found[: self._left]
            self._left -= len(found)
        if self._left == 0:
            self.done = True
        return found

    def _next_lane(self) -> None:
        assert self._lanes is not None
        self._lanes.pop(0)
        self._cursor = None
        self.done = self.done or not self._lanes

    def _records(self, lane: Lane, reply: Any) -> list[CheckpointTuple]:
        return readable(cmds.records(reply, lane, self._serde), lane, self._report)

    def _lane_page(self, lane: Lane) -> Operation[list[CheckpointTuple]]:
        upper = self._cursor if self._cursor is not None else self._before
        if self._only is not None:
            (reply,) = yield from _batch([cmds.pick_command(lane, [self._only], self._refresh)])
            self._next_lane()
            found = self._records(lane, reply)
            return [t for t in found if self._wanted(t.checkpoint["id"], t.metadata)]
        if self._filter is None:
            count = PAGE if self._left is None else min(PAGE, self._left)
            command = cmds.range_command(lane, upper, count, self._refresh, meta=False)
            (reply,) = yield from _batch([command])
            stored = cmds.records(reply, lane, self._serde)
            # the lane ends at a short read, damaged records counted: they are skipped,
            # not the end of the lane
            self._advance(stored, count)
            return readable(stored, lane, self._report)
        command = cmds.range_command(lane, upper, PAGE, self._refresh, meta=True)
        (reply,) = yield from _batch([command])
        metas = cmds.metadata_page(reply, self._serde)
        self._advance(metas, PAGE)
        pairs = readable_pairs(metas, lane, self._report)
        picked = [cid for cid, metadata in pairs if self._wanted(cid, metadata)]
        if self._left is not None:
            picked = picked[: self._left]
        if not picked:
            return []
        (reply,) = yield from _batch([cmds.pick_command(lane, picked, self._refresh)])
        return self._records(lane, reply)

    def _advance(self, read: Sequence[cmds.Stored[Any]], count: int) -> None:
        """Move past what a range read returned: the next lane after a short read."""
        if len(read) < count:
            self._next_lane()
        else:
            self._cursor = read[-1].raw_id
