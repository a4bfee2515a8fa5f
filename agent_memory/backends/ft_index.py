"""The store's index on an FT server: reading ``FT.INFO``, creating and dropping it,
waiting for the backfill, and, on a cluster, keeping it on every primary.

valkey-search's coordinator keeps one index definition for a whole cluster (an
``FT.CREATE`` sent to one primary reaches all of them: at once on 1.2, within moments on
1.0), but each primary indexes and backfills only its own keys, so the waits and checks
here ask every primary (``Command.node``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Operation, command, execute, execute_batch, sleep
from agent_memory.core.replies import error_text, integer, text
from agent_memory.errors import (
    AgentMemoryError,
    IndexMismatchError,
    OperationTimeoutError,
    ReplyParseError,
    ServerResponseError,
    ServerUnavailableError,
)
from agent_memory.schema.layout import F_SESSION
from agent_memory.schema.lexical import TEXT_FORM
from agent_memory.search.parse import IndexInfo, parse_index_info
from agent_memory.search.query import VectorIndexSpec, create_index_args, index_field_types

logger = logging.getLogger(__name__)

BACKFILL_POLL_SECONDS = 0.02
BACKFILL_STALL_SECONDS = 30.0  # give up when the backfill makes no progress this long
PROPAGATION_GRACE_SECONDS = 2.0  # a new index reaches every primary of a cluster by then


def missing_index(exc: AgentMemoryError) -> bool:
    """Whether an error is the server's "no such index" (both families' wordings)."""
    message = error_text(exc)
    return "unknown index" in message or "not found" in message or "no such index" in message


def already_exists(exc: AgentMemoryError) -> bool:
    """Whether an error is the server's "index already exists"."""
    return "already exists" in error_text(exc)


def is_missing(reply: Any) -> bool:
    """Whether a reply is the server's "no such index" error."""
    return isinstance(reply, ServerResponseError) and missing_index(reply)


# RediSearch 2.10 ("Error parsing vector similarity query: ...") and valkey-search 1.2
# ("... parameters: ...") refuse a query vector of another width than the index's so
# (valkey-search 1.0.2 answers it without an error).
_BLOB_SIZE = re.compile(r"blob size \((\d+)\) does not match index's expected size \((\d+)\)")


def width_mismatch(ctx: StoreContext, reply: Any) -> IndexMismatchError | None:
    """The store's error for a search refused because its query vector does not have
    the index's width (the server was wiped and the name reopened by a store of
    another width), or ``None`` for any other reply. Marks the store's identity for a
    check at its next operation."""
    if not isinstance(reply, ServerResponseError):
        return None
    found = _BLOB_SIZE.search(error_text(reply))
    if found is None:
        return None
    ctx.identity_stale = True
    ours, theirs = (int(size) // 4 for size in found.groups())  # FLOAT32 components
    return IndexMismatchError(
        f"store {ctx.keys.name!r}: its index now holds {theirs}-dimensional vectors but "
        f"this store's embedder produces {ours} (was the server wiped and the name "
        "reopened by a store of another width?); open the store with an embedder of "
        f"width {theirs}, or use another name"
    )


def cluster_size() -> Operation[int]:
    """The number of primaries serving slots (``cluster_size`` of ``CLUSTER INFO``)."""
    reply = yield from execute("CLUSTER", "INFO")
    if isinstance(reply, Mapping):  # a client package may parse it into a dict
        size = next((v for k, v in reply.items() if text(k) == "cluster_size"), None)
    else:
        found = re.search(r"^cluster_size:(\d+)", text(reply), re.M)
        size = found.group(1) if found else None
    if size is None:
        raise ReplyParseError("CLUSTER INFO reply has no cluster_size")
    return max(integer(size), 1)


def read_info(ctx: StoreContext) -> Operation[tuple[IndexInfo, Any] | None]:
    """FT.INFO of the store's index, parsed and raw (``None``: no index)."""
    try:
        reply = yield from execute("FT.INFO", ctx.keys.index)
    except ServerResponseError as exc:
        if missing_index(exc):
            return None
        raise
    return parse_index_info(reply), reply


def drop_foreign_index(ctx: StoreContext) -> Operation[bool]:
    """Drop the store's index if another program created it (its records stay).

    Every schema this library ever wrote has a ``session`` tag; an index without one
    belongs to another program (the BetterDB TypeScript library, say). Only an explicit
    migration calls this.
    """
    found = yield from read_info(ctx)
    if found is None or mentions(found[1], F_SESSION):
        return False
    yield from execute("FT.DROPINDEX", ctx.keys.index)
    return True


def read_index_info(ctx: StoreContext) -> Operation[IndexInfo | None]:
    """FT.INFO of the store's index, or ``None`` when it does not exist."""
    found = yield from read_info(ctx)
    return found[0] if found is not None else None


def mentions(reply: Any, name: str) -> bool:
    """Whether the FT.INFO reply names an attribute ``name`` (both servers' shapes)."""
    stack = [reply]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, (str, bytes)) and text(value) == name:
            return True
    return False


def check_compatible(ctx: StoreContext, info: IndexInfo) -> None:
    """Refuse an index whose vectors the store's embedder cannot search.

    Raises:
        IndexMismatchError: another width or distance metric.
    """
    if info.dim is not None and ctx.dim is not None and info.dim != ctx.dim:
        raise IndexMismatchError(
            f"index {ctx.keys.index} has vectors of dimension {info.dim} but the embedder "
            f"produces {ctx.dim}; writing would store vectors that are never found. Use "
            f"another store name or drop the index."
        )
    if info.metric is not None and info.metric != "COSINE":
        raise IndexMismatchError(
            f"index {ctx.keys.index} uses distance metric {info.metric}, expected COSINE"
        )


def expected_fields(ctx: StoreContext, native_text: bool) -> dict[str, str]:
    """The attributes (and their types) of the index the store creates."""
    assert ctx.dim is not None
    return index_field_types(VectorIndexSpec(dim=ctx.dim), native_text=native_text)


def check_layout(ctx: StoreContext, info: IndexInfo) -> None:
    """Refuse an index that no release of the library created under the store's name:
    one covering other keys than the store's memories, or typing an attribute the
    store writes otherwise (a search would fail on it, or find nothing without an
    error). Attributes it lacks are an older schema's, which the caller upgrades.

    Raises:
        IndexMismatchError: another key prefix, or another type of an attribute.
    """
    index, prefix = ctx.keys.index, ctx.keys.prefix
    if info.prefixes is not None and info.prefixes != (prefix,):
        raise IndexMismatchError(
            f"index {index} covers the keys under {list(info.prefixes)}, not those under "
            f"{prefix!r} alone: the store's memories would be left out of it, or other "
            "hashes taken in. It is left as it is; use another store name or drop the index."
        )
    expected = expected_fields(ctx, ctx.lexical_form == TEXT_FORM)
    wrong = [
        f"{name} is {kind}, expected {expected[name]}"
        for name, kind in info.field_types
        if name in expected and kind != expected[name]
    ]
    if wrong:
        raise IndexMismatchError(
            f"index {index} types attributes of the store's memories otherwise "
            f"({'; '.join(wrong)}): searches would fail or miss memories. It is left as it "
            "is; use another store name or drop the index."
        )


def create_args(ctx: StoreContext, native_text: bool) -> list[str]:
    """``FT.CREATE`` arguments of the store's index."""
    assert ctx.dim is not None
    return create_index_args(
        ctx.keys.index,
        ctx.keys.prefix,
        VectorIndexSpec(dim=ctx.dim),
        native_text=native_text,
    )


def drop_index(ctx: StoreContext, *, node: int | None = None) -> Operation[None]:
    """Drop the store's index (never its records); no error when it is gone already."""
    try:
        yield from execute("FT.DROPINDEX", ctx.keys.index, node=node)
    except ServerResponseError as exc:
        if not missing_index(exc):
            raise


def _info_on_each_primary(ctx: StoreContext, size: int) -> Operation[list[Any]]:
    """FT.INFO of the store's index from each of a cluster's ``size`` primaries, raw
    (error replies as exception instances)."""
    replies = yield from execute_batch(
        [command("FT.INFO", ctx.keys.index, node=i) for i in range(size)]
    )
    return replies


def _infos_everywhere(ctx: StoreContext) -> Operation[list[IndexInfo | None]]:
    """FT.INFO of the store's index on the server, or on each primary of a cluster
    (each shard backfills its own memories)."""
    if not ctx.settings.cluster:
        info = yield from read_index_info(ctx)
        return [info]
    size = yield from cluster_size()
    replies = yield from _info_on_each_primary(ctx, size)
    infos: list[IndexInfo | None] = []
    for reply in replies:
        if is_missing(reply):
            infos.append(None)
        elif isinstance(reply, AgentMemoryError):
            raise reply
        else:
            infos.append(parse_index_info(reply))
    return infos


def await_backfill(ctx: StoreContext) -> Operation[None]:
    """Wait until the server (every primary of a cluster) has indexed the hashes that
    existed when the index was created (the module backfills them in the background; a
    search meanwhile misses some). Polls ``FT.INFO``; waits as long as the backfill
    progresses.

    Raises:
        OperationTimeoutError: the backfill made no progress for
            ``BACKFILL_STALL_SECONDS``.
    """
    best, stalled = -1.0, 0.0
    while True:
        infos = yield from _infos_everywhere(ctx)
        if all(info is None for info in infos):
            return  # no index at all (dropped meanwhile): nothing to wait for
        # On a cluster a primary that does not list the index yet has not received it
        # from the coordinator (valkey-search 1.0 propagates FT.CREATE asynchronously).
        busy = [info for info in infos if info is None or info.indexing]
        if not busy:
            return
        progress = min(
            info.progress if info is not None and info.progress is not None else 0.0
            for info in busy
        )
        if progress > best:
            best, stalled = progress, 0.0
        elif stalled >= BACKFILL_STALL_SECONDS:
            raise OperationTimeoutError(
                f"index {ctx.keys.index} is still backfilling ({best:.0%} done) and made "
                f"no progress for {BACKFILL_STALL_SECONDS:.0f} s; searches miss memories "
                "until it finishes"
            )
        yield from sleep(BACKFILL_POLL_SECONDS)
        stalled += BACKFILL_POLL_SECONDS


def _unreachable(reply: Any) -> bool:
    return isinstance(reply, (ServerUnavailableError, OperationTimeoutError))


def _backfilling(reply: Any) -> bool:
    try:
        return parse_index_info(reply).indexing
    except ReplyParseError:
        return False


def repair_shards(ctx: StoreContext) -> Operation[None]:
    """Give the index back to every primary of a cluster that lost it, and wait while
    one is still re-indexing its memories.

    valkey-search's coordinator keeps one index definition for the whole cluster,
    but a node restarted from an append-only file begun before the index existed
    comes back without it: a search that primary serves fails with "not found", one
    another primary serves leaves its memories out without an error. valkey-search 1.0 accepts ``FT.CREATE`` on that node; 1.2 refuses it as
    existing (and refuses ``FT.DROPINDEX`` there as missing), so the index is
    dropped from a node that has it (never the records) and created again: every
    shard re-indexes its memories.

    Raises:
        ServerUnavailableError: a primary cannot be reached (a search fanned out now
            could leave its memories out without an error: valkey-search 1.0 does);
            the caller checks again at its next search.
        OperationTimeoutError: a primary did not answer in time, or its backfill
            stalled.
    """
    size = yield from cluster_size()
    waited = 0.0
    while True:
        infos = yield from _info_on_each_primary(ctx, size)
        unreachable = next((r for r in infos if _unreachable(r)), None)
        if unreachable is not None:
            raise unreachable
        missing = [i for i, r in enumerate(infos) if is_missing(r)]
        holding = [i for i, r in enumerate(infos) if not isinstance(r, AgentMemoryError)]
        if not holding:
            return  # wholly lost: the caller creates it again
        if not missing:
            if any(_backfilling(infos[i]) for i in holding):
                yield from await_backfill(ctx)  # a restarted primary re-indexing its keys
            return
        if waited >= PROPAGATION_GRACE_SECONDS:
            break
        # An index another process has just created may still be on its way to
        # these primaries: only one missing for longer than that was lost.
        yield from sleep(BACKFILL_POLL_SECONDS * 5)
        waited += BACKFILL_POLL_SECONDS * 5
    if not mentions(infos[holding[0]], F_SESSION):
        return  # not ours to rebuild (prepare refuses such an index)
    logger.warning(
        "%s: %d of %d primaries lost the index %s; giving it back",
        ctx.keys.name, len(missing), size, ctx.keys.index,
    )  # fmt: skip
    args = create_args(ctx, ctx.lexical_form == TEXT_FORM)
    refused = False
    for i in missing:
        try:
            yield from execute("FT.CREATE", *args, node=i)
        except ServerResponseError as exc:
            if not already_exists(exc):
                raise
            refused = True
    if refused:
        yield from drop_index(ctx, node=holding[0])
        try:
            yield from execute("FT.CREATE", *args, node=holding[0])
        except ServerResponseError as exc:
            if not already_exists(exc):  # another process rebuilt it first
                raise
    yield from await_backfill(ctx)
