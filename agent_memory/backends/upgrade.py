"""Lexical data of a store: record the analyzer, backfill ``lex`` and recount statistics.

``{name}:__mem_meta`` field ``lexical`` names the analyzer (``lex-v1:d=256``) whose
vectors the store holds. A store without it (written by schema version 1, before hybrid
recall) is upgraded once by :func:`ensure_lexical`: every registered memory gets its
``lex`` vector (only if it still exists) and each namespace's term statistics are
recounted from the contents. A store recorded with another analyzer raises
:class:`~agent_memory.errors.IndexMismatchError` (its vectors would not match queries).
"""

from __future__ import annotations

from agent_memory.core.effects import Command, Operation, command, execute_batch, scan_keys
from agent_memory.core.replies import optional_text, text
from agent_memory.errors import AgentMemoryError, IndexMismatchError
from agent_memory.store import layout as L
from agent_memory.store import scripts
from agent_memory.store.context import StoreContext
from agent_memory.store.lexical import ANALYZER_ID, adjust_args, lex_blob, stats_delta

_CHUNK = 500
_GLOB_SPECIAL = set("*?[]\\")


def _glob_escape(value: str) -> str:
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in value)


def _raise_errors(replies: list[object]) -> None:
    for reply in replies:
        if isinstance(reply, AgentMemoryError):
            raise reply


def ensure_lexical(ctx: StoreContext, *, force: bool = False) -> Operation[bool]:
    """Make sure the store's lexical data match :data:`ANALYZER_ID`; True when rebuilt.

    Raises:
        IndexMismatchError: the store records another analyzer.
    """
    replies = yield from execute_batch([command("HGET", ctx.keys.meta, L.META_LEXICAL)])
    _raise_errors(replies)
    recorded = optional_text(replies[0])
    if recorded is not None and recorded != ANALYZER_ID:
        raise IndexMismatchError(
            f"store {ctx.keys.name!r} holds lexical vectors of analyzer {recorded!r}, not "
            f"{ANALYZER_ID!r}; export and import the memories into a new store"
        )
    if recorded == ANALYZER_ID and not force:
        return False
    yield from rebuild_lexical(ctx)
    done = yield from execute_batch([command("HSET", ctx.keys.meta, L.META_LEXICAL, ANALYZER_ID)])
    _raise_errors(done)
    return True


def rebuild_lexical(ctx: StoreContext) -> Operation[int]:
    """Write the ``lex`` vector of every registered memory and recount each namespace's
    term statistics from the contents; returns how many memories were seen.

    Walks every namespace registry (one SCAN, then pipelined chunks): maintenance, not a
    hot path. Memories written concurrently may be counted twice or not at all; run it
    again on a quiet store for exact statistics.
    """
    prefix = f"{ctx.keys.name}:__mem_reg:"
    registries = yield from scan_keys(_glob_escape(prefix) + "*")
    seen = 0
    for raw_key in sorted({text(k) for k in registries}):  # SCAN may repeat keys
        ns = raw_key[len(prefix) :]
        listing = yield from execute_batch([command("ZRANGE", raw_key, "0", "-1")])
        _raise_errors(listing)
        ids = [text(x) for x in listing[0] or []]
        contents: list[str] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            fetched = yield from execute_batch(
                [command("HGET", ctx.keys.memory(m), L.F_CONTENT) for m in chunk]
            )
            _raise_errors(fetched)
            writes: list[Command] = []
            for memory_id, value in zip(chunk, fetched, strict=True):
                content = optional_text(value)
                if content is None:
                    continue
                contents.append(content)
                key = ctx.keys.memory(memory_id)
                writes.append(
                    Command(("EVAL", scripts.UPDATE_IF_EXISTS, "1", key, "0", L.F_LEX,
                             lex_blob(content)))
                )  # fmt: skip
            written = yield from execute_batch(writes)
            _raise_errors(written)
        seen += len(contents)
        stats_key = ctx.keys.term_stats(ns)
        recount = [command("DEL", stats_key)]
        adjust = adjust_args(stats_key, stats_delta(contents, 1))
        if adjust is not None:
            recount.append(Command(adjust))
        recount.append(command("INCR", ctx.keys.epoch(ns)))  # portable mirrors reload
        done = yield from execute_batch(recount[:-1], atomic=True)
        _raise_errors(done)
        bumped = yield from execute_batch(recount[-1:])
        _raise_errors(bumped)
    return seen
