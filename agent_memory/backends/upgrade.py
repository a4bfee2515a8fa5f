"""Lexical data of a store: record the analyzer and form, backfill, recount statistics.

``{name}:__mem_meta`` field ``lexical`` names the analyzer and the form in which the
store's memories carry their terms (:data:`~agent_memory.schema.lexical.VECTOR_FORM`, the
hashed ``lex`` vector, or :data:`~agent_memory.schema.lexical.TEXT_FORM`, the ``lex_text``
terms a server-side full-text index searches). The backend decides which form it needs
(``ctx.lexical_form``); :func:`ensure_lexical` converts a store recorded in another form
of the same analyzer once (every registered memory gets the new field, loses the old
one, and each namespace's term statistics are recounted), and upgrades a store written
before hybrid recall (no record). A store recorded with another analyzer raises
:class:`~agent_memory.errors.IndexMismatchError` (its terms would not match queries).
"""

from __future__ import annotations

import logging
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import unreadable
from agent_memory.cache.keys import glob_escape
from agent_memory.core.effects import Command, Operation, command, execute_batch, scan_keys
from agent_memory.core.replies import (
    lenient_text,
    optional_text,
    raise_first_error,
    raw_bytes,
    text,
)
from agent_memory.errors import IndexMismatchError, ReplyParseError, WrongTypeError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.encoding import SHARED_SESSION_TOKEN
from agent_memory.schema.lexical import (
    ANALYZER,
    LEGACY_VECTOR_FORM,
    TEXT_FORM,
    VECTOR_FORM,
    replace_args,
    stats_delta,
)
from agent_memory.schema.records import lexical_fields
from agent_memory.schema.versions import bump

_CHUNK = 500
_READ = (L.F_CONTENT, L.F_SESSION)
logger = logging.getLogger("agent_memory.store")


def _other_fields(form: str) -> tuple[str, ...]:
    """The fields of the lexical forms other than ``form`` (dropped by a conversion)."""
    return (L.F_LEX, L.F_LEX_TERMS) if form == TEXT_FORM else (L.F_LEX_TEXT,)


def choose_form(
    recorded: str | None, schema_version: int, *, wanted: str, server_has_text: bool
) -> str:
    """The lexical form a process uses on a store (pure).

    The form belongs to the store, not to the process: the first writer's choice stays,
    so processes of different settings sharing a store never convert it back and forth.
    A store of schema 2 in the vector form is upgraded to the text form where the server
    has full text (the point of schema 3), and one of schema 2 or 3 in the vector form
    otherwise gets its term tokens (:data:`LEGACY_VECTOR_FORM` -> :data:`VECTOR_FORM`,
    schema 4); a store in the text form is converted
    back only where the server has no full text (it moved to valkey-search, or lost its
    module), the one case where there is no other way.

    Raises:
        IndexMismatchError: the store is in the text form and this process may not send
            text queries to a server that has them (``ft_dialect="baseline"``).
    """
    if recorded is None or recorded == wanted:
        return wanted
    if recorded in (VECTOR_FORM, LEGACY_VECTOR_FORM):
        return TEXT_FORM if schema_version < 3 and wanted == TEXT_FORM else VECTOR_FORM
    if recorded == TEXT_FORM and server_has_text:
        raise IndexMismatchError(
            "the store keeps its lexical channel in a full-text index this process may not "
            "query (ft_dialect='baseline'); open it with ft_dialect='auto', or export and "
            "import it into a store written in the baseline dialect"
        )
    return wanted


def recorded_form(ctx: StoreContext) -> Operation[tuple[str | None, int]]:
    """The lexical form recorded in the store's metadata and its schema version."""
    replies = yield from execute_batch(
        [command("HMGET", ctx.keys.meta, L.META_LEXICAL, "schema_version")]
    )
    raise_first_error(replies)
    values = list(replies[0] or [None, None])
    version = optional_text(values[1])
    return optional_text(values[0]), int(version) if version and version.isdigit() else 0


def ensure_lexical(ctx: StoreContext, *, force: bool = False) -> Operation[bool]:
    """Make sure the store's memories carry their terms in ``ctx.lexical_form``; True
    when the lexical data were rebuilt now.

    A store of this schema version that records no form yet is a new one (the form is
    recorded before anything is written): the first process records it, and no process
    rebuilds anything. (A rebuild recounts the term statistics from a listing: run while
    other processes of a new store already write, it would lose their counts.)

    Raises:
        IndexMismatchError: the store records another analyzer.
    """
    wanted = ctx.lexical_form
    recorded, version = yield from recorded_form(ctx)
    if recorded is None and version == L.SCHEMA_VERSION and not force:
        claimed = yield from execute_batch(
            [
                command("HSETNX", ctx.keys.meta, L.META_LEXICAL, wanted),
                command("HGET", ctx.keys.meta, L.META_LEXICAL),
            ]
        )
        raise_first_error(claimed)
        recorded = optional_text(claimed[1])
    if recorded is not None and recorded.split(":", 1)[0] != ANALYZER:
        raise IndexMismatchError(
            f"store {ctx.keys.name!r} holds lexical data of analyzer {recorded!r}, not "
            f"{ANALYZER!r}; export and import the memories into a new store"
        )
    if recorded == wanted and not force:
        return False
    if recorded is not None and recorded != wanted:
        logger.warning(
            "store %s: converting the lexical data of every memory from %s to %s "
            "(once; every process sharing the store should use the same ft_dialect)",
            ctx.keys.name, recorded, wanted,
        )  # fmt: skip
    yield from rebuild_lexical(ctx)
    done = yield from execute_batch([command("HSET", ctx.keys.meta, L.META_LEXICAL, wanted)])
    raise_first_error(done)
    return True


def _session_vectors(
    ctx: StoreContext, read: list[tuple[str, Any, Any]]
) -> Operation[dict[str, bytes]]:
    """The embeddings of the session-scoped memories among ``(id, content, session)``
    (one round trip, none when there are none): their ``svec`` copies."""
    ids = [m for m, _, session in read if lenient_text(session) not in (None, SHARED_SESSION_TOKEN)]
    if not ids:
        return {}
    replies = yield from execute_batch(
        [command("HGET", ctx.keys.memory(m), L.F_VECTOR, binary=True) for m in ids]
    )
    raise_first_error(replies)
    return {m: raw_bytes(v) for m, v in zip(ids, replies, strict=True) if v is not None}


def _skip_damaged(ctx: StoreContext, key: str, why: str) -> None:
    logger.warning("store %s: %s is skipped by the lexical upgrade: %s", ctx.keys.name, key, why)
    ctx.count("corrupt_records")


def _readable_members(ctx: StoreContext, members: list[Any]) -> list[str]:
    """The registry's memory ids; one that is not UTF-8 is logged, counted and skipped
    (no memory key can be built from it), so one damaged entry does not stop the upgrade
    of the whole store."""
    ids: list[str] = []
    for member in members:
        try:
            ids.append(text(member))
        except ReplyParseError:
            unreadable(ctx, repr(member), "its registry entry is not valid UTF-8")
    return ids


def rebuild_lexical(ctx: StoreContext) -> Operation[int]:
    """Write the lexical field (``ctx.lexical_form``) of every registered memory (and the
    FLAT copy of the embedding of each session-scoped one), drop the other form's field,
    and recount each namespace's term statistics from the contents; returns how many
    memories were seen.

    Walks every namespace registry (one SCAN, then pipelined chunks): maintenance, not a
    hot path. Memories written concurrently may be counted twice or not at all; run it
    again on a quiet store for exact statistics.
    """
    prefix = f"{ctx.keys.name}:__mem_reg:"
    registries = yield from scan_keys(glob_escape(prefix) + "*")
    seen = 0
    for raw_key in sorted({text(k) for k in registries}):  # SCAN may repeat keys
        ns = raw_key[len(prefix) :]
        listing = yield from execute_batch([command("ZRANGE", raw_key, "0", "-1")])
        if isinstance(listing[0], WrongTypeError):
            _skip_damaged(ctx, raw_key, "the registry holds another type")
            continue
        raise_first_error(listing)
        ids = _readable_members(ctx, listing[0] or [])
        contents: list[str] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            fetched = yield from execute_batch(
                [command("HMGET", ctx.keys.memory(m), *_READ, binary=True) for m in chunk]
            )
            read: list[tuple[str, Any, Any]] = []
            for memory_id, values in zip(chunk, fetched, strict=True):
                if isinstance(values, WrongTypeError):
                    unreadable(ctx, memory_id, "its key holds no hash (left as it is)")
                    continue
                raise_first_error([values])
                read.append((memory_id, *(list(values or []) + [None] * 2)[:2]))
            vectors = yield from _session_vectors(ctx, read)
            writes: list[Command] = []
            owners: list[str] = []  # the memory id of each write, in order
            for memory_id, content_raw, _ in read:
                content = lenient_text(content_raw)
                if content is None:
                    if content_raw is not None:  # None: gone meanwhile
                        unreadable(ctx, memory_id, "its content is not valid UTF-8 (left as it is)")
                    continue
                contents.append(content)
                key = ctx.keys.memory(memory_id)
                fields = lexical_fields(content, ctx.lexical_form)
                if memory_id in vectors:
                    fields += [L.F_SESSION_VECTOR, vectors[memory_id]]
                writes.append(Command(("EVAL", scripts.UPDATE_IF_EXISTS, "1", key, "0", *fields)))
                writes.append(command("HDEL", key, *_other_fields(ctx.lexical_form)))
                owners += [memory_id, memory_id]
            written = yield from execute_batch(writes)
            # Two writes per memory: a key replaced meanwhile by another writer fails
            # both, and is one damaged record, reported once under its own id.
            replaced: dict[str, Any] = {}
            for memory_id, reply in zip(owners, written, strict=True):
                if isinstance(reply, WrongTypeError):
                    replaced.setdefault(memory_id, reply)
            for memory_id, reply in replaced.items():
                unreadable(ctx, memory_id, reply)
            raise_first_error([r for r in written if not isinstance(r, WrongTypeError)])
        seen += len(contents)
        stats_key = ctx.keys.term_stats(ns)
        done = yield from execute_batch(
            [Command(replace_args(stats_key, stats_delta(contents, 1)))]
        )
        raise_first_error(done)
        bumped = yield from execute_batch([bump(ctx.keys.epoch(ns))])
        raise_first_error(bumped)  # portable mirrors reload
    return seen
