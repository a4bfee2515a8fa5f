"""Command building and reply parsing of the checkpointer (pure: no I/O).

Every function here builds :class:`~agent_memory.core.effects.Command` objects or turns
their replies into LangGraph values, with the saver's ``serde``. The generator
operations of :mod:`.ops` compose them; the saver's runners send them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, cast

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from agent_memory.core import replies
from agent_memory.core.effects import Arg, Command
from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.integrations.checkpoint import codec, scripts
from agent_memory.integrations.checkpoint.layout import (
    Lane,
    Layout,
    checkpoint_config,
    run_member,
)

V = TypeVar("V")


def _eval(script: str, lane: Lane, args: Iterable[Arg]) -> Command:
    return Command(("EVAL", script, 4, *lane.keys, *args), binary=True)


def _typed(serde: SerializerProtocol, value: Any, what: str) -> bytes:
    try:
        return codec.pack_typed(serde.dumps_typed(value))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} cannot be serialised: {exc}", field=what) from exc


def put_command(
    lane: Lane,
    serde: SerializerProtocol,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    parent_id: str | None,
    new_versions: ChannelVersions,
    ttl_ms: int,
) -> Command:
    """The script storing one checkpoint, its metadata and its new channel values.

    Raises:
        InvalidInputError: a checkpoint without a ``str`` id, or a value the ``serde``
            cannot serialise.
    """
    if not isinstance(checkpoint, Mapping) or not isinstance(checkpoint.get("id"), str):
        raise InvalidInputError("checkpoint must be a Checkpoint with a str id", field="checkpoint")
    if not isinstance(new_versions, Mapping):
        raise InvalidInputError("new_versions must be a mapping", field="new_versions")
    stripped: dict[str, Any] = dict(checkpoint)
    values: Mapping[str, Any] = stripped.pop("channel_values", None) or {}
    versions: Mapping[str, Any] = stripped.get("channel_versions") or {}
    blobs: list[Arg] = []
    for channel, version in new_versions.items():
        typed = (
            _typed(serde, values[channel], f"channel {channel!r}")
            if channel in values
            else codec.pack_typed(codec.EMPTY)
        )
        blobs += [codec.blob_field(channel, version), typed]
    fields = codec.join_fields([codec.blob_field(c, v) for c, v in versions.items()])
    run_id = metadata.get("run_id")
    return _eval(
        scripts.PUT,
        lane,
        [
            ttl_ms,
            checkpoint["id"],
            _typed(serde, stripped, "checkpoint"),
            _typed(serde, metadata, "metadata"),
            parent_id or "",
            run_id if isinstance(run_id, str) else "",
            fields,
            lane.checkpoint_ns,
            lane.thread_id,
            len(blobs) // 2,
            *blobs,
        ],
    )


def run_commands(
    layout: Layout, run_id: str, lane: Lane, checkpoint_ids: Sequence[str], ttl_ms: int
) -> list[Command]:
    """Index checkpoints of ``lane`` under their run (for ``delete_for_runs``)."""
    if not run_id or not checkpoint_ids:
        return []
    key = layout.run(run_id)
    members = [run_member(lane.thread_id, lane.checkpoint_ns, cid) for cid in checkpoint_ids]
    commands = [Command(("SADD", key, *members))]
    if ttl_ms > 0:
        commands.append(Command(("PEXPIRE", key, ttl_ms)))
    return commands


def put_writes_command(
    lane: Lane,
    serde: SerializerProtocol,
    checkpoint_id: str,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    ttl_ms: int,
) -> Command | None:
    """The script storing pending writes (``None``: nothing to write). As LangGraph's
    savers do, a special channel (``ERROR``, ``INTERRUPT``...) takes its fixed negative
    index and replaces an earlier write; a regular write keeps the first one stored.

    Raises:
        InvalidInputError: a malformed write or a value the ``serde`` cannot serialise.
    """
    if not isinstance(task_id, str) or not isinstance(task_path, str):
        raise InvalidInputError("task_id and task_path must be str", field="task_id")
    args: list[Arg] = []
    for position, write in enumerate(writes):
        if not isinstance(write, (tuple, list)) or len(write) != 2 or not isinstance(write[0], str):
            raise InvalidInputError("each write must be a (channel, value) pair", field="writes")
        channel, value = write
        idx = WRITES_IDX_MAP.get(channel, position)
        record = codec.pack_write(
            task_id, channel, task_path, idx, _typed(serde, value, f"write {channel!r}")
        )
        args += [codec.write_field(checkpoint_id, task_id, idx), record, "1" if idx < 0 else "0"]
    if not args:
        return None
    return _eval(
        scripts.PUT_WRITES,
        lane,
        [ttl_ms, checkpoint_id, lane.checkpoint_ns, lane.thread_id, len(args) // 3, *args],
    )


def range_command(
    lane: Lane, before: str | bytes | None, count: int, ttl_ms: int, *, meta: bool
) -> Command:
    """Read the lane's checkpoints older than ``before`` (an id, or a stored id's bytes
    when it is not UTF-8), newest first (``count`` -1: all): full records, or only
    ``[id, metadata]`` with ``meta``."""
    upper: Arg = "+"
    if isinstance(before, bytes):
        upper = b"(" + before
    elif before is not None:
        upper = "(" + before
    return _eval(scripts.LOAD, lane, [ttl_ms, "meta" if meta else "range", upper, count])


def pick_command(lane: Lane, checkpoint_ids: Sequence[str], ttl_ms: int) -> Command:
    """Read the full records of the given checkpoints."""
    return _eval(scripts.LOAD, lane, [ttl_ms, "pick", *checkpoint_ids])


def drop_command(lane: Lane, mode: str, checkpoint_ids: Sequence[str] = ()) -> Command:
    """Delete a whole lane (``all``), all but its newest checkpoint (``keep_latest``) or
    the given checkpoints (``ids``)."""
    return _eval(scripts.DROP, lane, [mode, lane.checkpoint_ns, *checkpoint_ids])


def import_command(
    lane: Lane,
    ids: Sequence[bytes],
    records: Mapping[bytes, bytes],
    values: Mapping[bytes, bytes],
    ttl_ms: int,
) -> Command:
    """Merge an exported lane (``ids``, ``records``, ``values``) into ``lane``."""
    flat: list[Arg] = [ttl_ms, lane.checkpoint_ns, lane.thread_id, len(ids), len(records), *ids]
    for field, value in [*records.items(), *values.items()]:
        flat += [field, value]
    return _eval(scripts.IMPORT, lane, flat)


def export_commands(lane: Lane) -> list[Command]:
    """Read a whole lane (ids, records, values), undecoded."""
    return [
        Command(("ZRANGE", lane.ids, 0, -1), binary=True),
        Command(("HGETALL", lane.records), binary=True),
        Command(("HGETALL", lane.values), binary=True),
    ]


# -- replies -------------------------------------------------------------------------


def binary_map(reply: Any) -> dict[bytes, bytes]:
    """A map reply as it is stored: binary field names (another writer's may not be
    UTF-8: copied as they are) and binary values."""
    return {replies.raw_bytes(f): replies.raw_bytes(v) for f, v in replies.raw_pairs(reply)}


def namespaces(reply: Any) -> tuple[dict[str, str], list[str]]:
    """A thread's HASH of namespaces (read undecoded): ``{checkpoint_ns: thread_id}``,
    and the printable names of its entries that are not UTF-8 (another writer's: no
    lane of this library has such a namespace or thread id), left out."""
    found: dict[str, str] = {}
    unreadable: list[str] = []
    for field, value in replies.raw_pairs(reply):
        ns, thread = replies.lenient_text(field), replies.lenient_text(value)
        if ns is None or thread is None:
            unreadable.append(printable(field))
        else:
            found[ns] = thread
    return found, unreadable


def printable(raw: Any) -> str:
    """A stored name for a message: its text, bytes that are not UTF-8 escaped."""
    return replies.raw_bytes(raw).decode("utf-8", "backslashreplace")


def _list(reply: Any) -> list[Any]:
    if reply is None:
        return []
    if not isinstance(reply, (list, tuple)):
        raise ReplyParseError(f"expected an array reply, got {type(reply).__name__}")
    return list(reply)


@dataclass(frozen=True, slots=True)
class Stored(Generic[V]):
    """One checkpoint of a reply: its decoded ``value``, or ``None`` and the
    ``problem`` that makes it unreadable (bytes another writer damaged).

    Attributes:
        checkpoint_id: the checkpoint's id (escaped when it is not UTF-8).
        value: what it decodes to; ``None`` when it is damaged or gone.
        problem: why it is damaged (empty when it reads or is gone).
        raw_id: the id as stored (a page's cursor, whether it reads or not).
        gone: the lane's ids named it, but no record (another client's id, or a record
            evicted): left out, and dropped from the ids by the read's script.
    """

    checkpoint_id: str
    value: V | None
    problem: str = ""
    raw_id: bytes = b""
    gone: bool = False


NOT_UTF8 = "its checkpoint id is not valid UTF-8 (another writer's)"


def _listed(raw: Any) -> Stored[Any] | None:
    """A :class:`Stored` for an id that cannot be a checkpoint of this library (not
    UTF-8: damaged), else ``None``."""
    if replies.lenient_text(raw) is None:
        return Stored(printable(raw), None, NOT_UTF8, replies.raw_bytes(raw))
    return None


def _gone(raw: Any) -> Stored[Any]:
    """The :class:`Stored` of an id naming no record (the read's script dropped it from
    the lane's ids)."""
    return Stored(printable(raw), None, "", replies.raw_bytes(raw), True)


def _loads(serde: SerializerProtocol, raw: Any) -> Any:
    return serde.loads_typed(codec.unpack_typed(replies.raw_bytes(raw)))


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ReplyParseError(f"the stored {what} decodes to {type(value).__name__}, not a mapping")
    return dict(value)


def _decoded(raw_id: Any, decode: Callable[[], V]) -> Stored[V]:
    """``decode()`` as a :class:`Stored`: whatever it raises marks the checkpoint damaged.

    The stored bytes may come from another writer, and the ``serde`` is pluggable: its
    decoders raise what their format library raises (``ValueError``,
    ``NotImplementedError`` for an unknown type tag, ``TypeError``, ``ImportError`` from
    an extension hook...), so no narrower class covers them.
    """
    checkpoint_id, stored = replies.text(raw_id), replies.raw_bytes(raw_id)
    try:
        return Stored(checkpoint_id, decode(), raw_id=stored)
    except Exception as exc:  # noqa: BLE001 - reported by the caller, the record skipped
        return Stored(checkpoint_id, None, f"{type(exc).__name__}: {exc}"[:300], stored)


def _metadata(serde: SerializerProtocol, raw: Any) -> dict[str, Any]:
    if not raw:
        return {}
    value = _loads(serde, raw)
    return {} if value is None else _mapping(value, "metadata")


def _tuple(rec: list[Any], cid: str, lane: Lane, serde: SerializerProtocol) -> CheckpointTuple:
    """The checkpoint tuple of one full record.

    Raises:
        Exception: whatever a damaged record makes the decoders raise.
    """
    parent = replies.text(rec[3])
    flat = _list(rec[4])
    values: dict[str, Any] = {}
    for field, raw in zip(flat[::2], flat[1::2], strict=True):
        typed = codec.unpack_typed(replies.raw_bytes(raw))
        if typed[0] != codec.EMPTY[0]:
            values[codec.channel_of(replies.text(field))] = serde.loads_typed(typed)
    writes = [codec.unpack_write(replies.raw_bytes(w)) for w in _list(rec[5])]
    writes.sort(key=lambda w: writes_sort_key(w[2], w[0], w[3]))
    stored = _mapping(_loads(serde, rec[1]), "checkpoint")
    if not isinstance(stored.get("id"), str):
        raise ReplyParseError("the stored checkpoint has no str id")
    checkpoint = cast(Checkpoint, {**stored, "channel_values": values})
    metadata = cast(CheckpointMetadata, _metadata(serde, rec[2]))
    return CheckpointTuple(
        config=checkpoint_config(lane.thread_id, lane.checkpoint_ns, cid),  # type: ignore[arg-type]
        checkpoint=checkpoint,
        metadata=metadata,
        parent_config=(
            checkpoint_config(lane.thread_id, lane.checkpoint_ns, parent)  # type: ignore[arg-type]
            if parent
            else None
        ),
        pending_writes=[(w[0], w[1], serde.loads_typed(w[4])) for w in writes],
    )


def records(reply: Any, lane: Lane, serde: SerializerProtocol) -> list[Stored[CheckpointTuple]]:
    """The checkpoints of a ``range`` or ``pick`` reply, in its order: each decoded on
    its own, so one damaged record (a checkpoint, metadata, channel value or pending
    write that does not decode, or decodes to something else than LangGraph's shapes,
    or an id that is not UTF-8) is marked, not fatal to the others; an id naming no
    record (which the script dropped from the lane's ids) is marked ``gone``.

    Raises:
        ReplyParseError: a reply this library's script does not make.
    """
    found: list[Stored[CheckpointTuple]] = []
    for item in _list(reply):
        rec = _list(item)
        if len(rec) not in (1, 6):
            raise ReplyParseError("a checkpoint record has the wrong shape")
        damaged = _listed(rec[0])
        if len(rec) == 1:
            found.append(_gone(rec[0]))
        elif damaged is not None:
            found.append(damaged)
        else:
            cid = replies.text(rec[0])
            found.append(_decoded(rec[0], partial(_tuple, rec, cid, lane, serde)))
    return found


def metadata_page(reply: Any, serde: SerializerProtocol) -> list[Stored[dict[str, Any]]]:
    """The metadata of a ``meta`` reply's checkpoints, newest first (each decoded on its
    own, as :func:`records` does).

    Raises:
        ReplyParseError: a reply this library's script does not make.
    """
    flat = _list(reply)
    return [_metadata_of(cid, raw, serde) for cid, raw in zip(flat[::2], flat[1::2], strict=True)]


def _metadata_of(cid: Any, raw: Any, serde: SerializerProtocol) -> Stored[dict[str, Any]]:
    if raw is None:
        return _gone(cid)
    damaged = _listed(cid)
    if damaged is not None:
        return damaged
    return _decoded(cid, partial(_metadata, serde, raw))


def dropped(reply: Any) -> list[tuple[str, str]]:
    """``(run id, checkpoint id)`` of the checkpoints a drop deleted (for the run index:
    another writer's that are not UTF-8 were never indexed, and are left out)."""
    flat = _list(reply)
    texts = [replies.lenient_text(item) for item in flat]
    pairs = zip(texts[::2], texts[1::2], strict=True)
    return [(r, c) for r, c in pairs if r is not None and c is not None]
