"""Script writes that valkey-search 1.0.x would leave pending.

valkey-search 1.0.x indexes a key written inside a script or ``MULTI`` only at the next
``FT.SEARCH`` of the index (or once such writes fill its queue), and until then holds back
the reply of any client that writes the same key with a plain command: an ``HSET`` or
``DEL`` from ``valkey-cli``, the application, another library, held until some search,
for ever on a store nobody searches. The store writes memories through scripts, so on
those servers (standalone; :attr:`~agent_memory.search.dialect.Dialect.defers_script_writes`)
each batch that writes memory records ends with a search that matches nothing: the
server indexes the batch's writes before answering it, as any recall would have made it
do. Valkey-search 1.1 and later, RediSearch and the portable backend need nothing.

On a cluster a search received by one node does not reach the other shards' queues.
There ``remember`` writes plain commands (never held back); the single-key scripts of
``update``, ``feedback``, ``complete`` and ``forget`` are not settled (README,
"Limits"). A write under a caller-chosen id deletes the memory it replaces by plain
commands: it first sends every primary a search (:func:`settle_each_primary`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.backends.ft_index import cluster_size
from agent_memory.core.effects import Command, Operation, execute_batch
from agent_memory.errors import AgentMemoryError
from agent_memory.search.query import settle_search_args

logger = logging.getLogger("agent_memory.store")


def _settle_search(ctx: StoreContext) -> Command | None:
    """A search that matches nothing, where the store's server holds back plain writes
    after script writes (``None`` elsewhere)."""
    dialect, backend, dim = ctx.dialect, ctx.backend, ctx.dim
    if (
        dialect is None
        or backend is None
        or backend.name != "ft"
        or dim is None
        or not dialect.defers_script_writes
    ):
        return None
    args = ("FT.SEARCH", *settle_search_args(ctx.keys.index, dim))
    return Command(args, after_scripts=True)  # also after a script sent again


def settle_commands(ctx: StoreContext) -> list[Command]:
    """The search that makes the server index a batch's script writes, where needed."""
    search = None if ctx.settings.cluster else _settle_search(ctx)
    return [search] if search is not None else []


def settle_each_primary(ctx: StoreContext) -> Operation[None]:
    """On a cluster whose module holds back plain writes after script writes, send each
    primary a search that makes it index the script writes it holds (one round trip to
    learn the primaries, one for the searches): the plain commands sent next to keys a
    script changed are then answered. Failures are logged and counted
    (``settle_failures``); the plain commands may then wait."""
    search = _settle_search(ctx)
    if not ctx.settings.cluster or search is None:
        return
    size = yield from cluster_size()
    replies = yield from execute_batch([replace(search, node=i) for i in range(size)])
    for reply in replies:
        if isinstance(reply, AgentMemoryError):
            _report(ctx, reply)


def _report(ctx: StoreContext, failure: AgentMemoryError) -> None:
    logger.warning(
        "store %s: the search that makes valkey-search 1.0 index the store's "
        "writes failed (%s); a plain write of those keys may wait for the next search",
        ctx.keys.name, failure,
    )  # fmt: skip
    ctx.count("settle_failures")


def execute_writes(ctx: StoreContext, commands: Sequence[Command]) -> Operation[list[Any]]:
    """:func:`~agent_memory.core.effects.execute_batch` for commands that write memory
    records through scripts, settled where the server needs it (its reply is not among
    the returned ones). A settling search that fails is logged and counted
    (``settle_failures``), never raised: the writes themselves were applied."""
    settle = settle_commands(ctx) if commands else []
    replies = yield from execute_batch([*commands, *settle])
    if settle:
        reply = replies.pop()
        if isinstance(reply, AgentMemoryError):
            _report(ctx, reply)
    return replies
