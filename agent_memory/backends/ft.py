"""Search backend over FT.SEARCH (valkey-search >= 1.0.2 or RediSearch).

Only the valkey-search 1.0.2 dialect is sent unless the detected dialect
(``ctx.dialect``) allows more: on RediSearch the lexical channel is a ``TEXT`` field
ranked by the server's BM25 (``lex_text``) and broad filtered KNN queries carry a
``HYBRID_POLICY`` (:mod:`agent_memory.search.plan`), chosen from the sizes of the
bookkeeping sets the filter is known to select from, read in the search round trip and
used by the next search.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from agent_memory.backends.base import KnnMatch, KnnQuery, SearchOutcome
from agent_memory.backends.context import StoreContext
from agent_memory.backends.ft_index import (
    already_exists,
    await_backfill,
    check_compatible,
    check_layout,
    create_args,
    drop_index,
    expected_fields,
    is_missing,
    mentions,
    read_index_info,
    read_info,
    repair_shards,
    width_mismatch,
)
from agent_memory.backends.upgrade import choose_form, ensure_lexical, recorded_form
from agent_memory.core.effects import (
    Command,
    Operation,
    command,
    execute,
    execute_batch,
    in_turns,
    pause,
)
from agent_memory.core.replies import integer, number, pairs, text
from agent_memory.errors import (
    AgentMemoryError,
    IndexMismatchError,
    OperationTimeoutError,
    ServerResponseError,
    ServerUnavailableError,
)
from agent_memory.schema.encoding import session_token
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.layout import (
    DISTANCE_ALIAS,
    F_SESSION,
)
from agent_memory.schema.lexical import TEXT_FORM, VECTOR_FORM, term_token
from agent_memory.schema.records import vector_blob
from agent_memory.search.dialect import NO_SEARCH
from agent_memory.search.parse import (
    SearchEntry,
    parse_index_info,
    search_entries,
)
from agent_memory.search.plan import hybrid_policy
from agent_memory.search.query import (
    LEX_DISTANCE_ALIAS,
    knn_search_args,
    text_search_args,
)

logger = logging.getLogger(__name__)

_INFO_REFRESH_SECONDS = 60.0
SHARD_CHECK_SECONDS = 10.0  # how often a cluster's primaries are checked for the index
_SHARED_SESSION = session_token(None)


def size_key(ctx: StoreContext, flt: MemoryFilter) -> str | None:
    """A bookkeeping set holding every memory ``flt`` can match, when the filter is
    known to select (about) all of that set: the shared pool of a namespace, an agent or
    a thread. ``None`` for filters whose selectivity is unknown (tags, labels, sources,
    a session's own pool)."""
    if flt.tags or flt.label_groups or flt.sources is not None or flt.exclude_sources:
        return None
    if flt.session is not None and flt.session != _SHARED_SESSION:
        return None
    if flt.thread is not None:
        return ctx.keys.thread_index(flt.namespace, flt.thread)
    if flt.agent is not None:
        return ctx.keys.agent_index(flt.namespace, flt.agent)
    return ctx.keys.registry(flt.namespace)


class FtBackend:
    """Filtered KNN through ``FT.SEARCH``; the valkey-search 1.0 dialect unless the
    server is known to accept more."""

    name = "ft"

    def __init__(self) -> None:
        self._sizes: dict[str, int] = {}
        self._index_docs: int | None = None
        self._info_due = 0.0
        # Cluster only: when to check next that every primary still has the index
        # (0: at the next search, e.g. after a search failed on an unreachable node).
        self._shards_due = 0.0

    def prepare(self, ctx: StoreContext) -> Operation[bool]:
        """Create the index, or check it. An index without the lexical field this server
        needs (schema version 1, or another lexical form) is upgraded in place: the
        memories get their lexical data and the term statistics are recounted, then the
        index is dropped (never its documents) and created again (the server re-indexes
        the hashes)."""
        dialect = ctx.dialect or NO_SEARCH
        recorded, version = yield from recorded_form(ctx)
        ctx.lexical_form = choose_form(
            recorded,
            version,
            wanted=TEXT_FORM if dialect.native_text else VECTOR_FORM,
            server_has_text=dialect.family == "redisearch",
        )
        native_text = ctx.lexical_form == TEXT_FORM
        # An index of an older schema lacks some (the lexical fields, ``svec``): upgraded.
        needed = tuple(expected_fields(ctx, native_text))
        found = yield from read_info(ctx)
        if found is not None:
            info, raw = found
            check_compatible(ctx, info)
            if not mentions(raw, F_SESSION):
                # Every schema this library ever wrote has a ``session`` tag; an index
                # without one belongs to another program (the BetterDB TypeScript
                # library, say): never drop or replace it.
                raise IndexMismatchError(
                    f"index {ctx.keys.index} was not created by agent-memory (it has no "
                    "'session' field; the BetterDB TypeScript library creates such "
                    "indexes); it is left as it is. To take the store over, keeping every "
                    "record, run adopt_foreign(replace_index=True) or `agent-memory adopt "
                    "--replace-index`; or use another store name."
                )
            check_layout(ctx, info)
            if all(mentions(raw, name) for name in needed):
                yield from ensure_lexical(ctx)
                self._index_docs = info.num_docs
                if ctx.settings.cluster:
                    yield from repair_shards(ctx)
                elif info.indexing:
                    # Another process has just created it over stored memories: the
                    # server is still indexing them, and a search now would miss some.
                    yield from await_backfill(ctx)
                return False
            yield from ensure_lexical(ctx, force=True)
            yield from self.drop(ctx)
        else:
            yield from ensure_lexical(ctx)
        args = create_args(ctx, native_text)
        try:
            yield from execute("FT.CREATE", *args)
        except ServerResponseError as exc:
            if not already_exists(exc):
                raise
            # Another process created it first: make sure it is compatible.
            other = yield from read_index_info(ctx)
            if other is not None:
                check_compatible(ctx, other)
                check_layout(ctx, other)
            if ctx.settings.cluster:
                yield from repair_shards(ctx)
            yield from await_backfill(ctx)
            return False
        yield from await_backfill(ctx)
        return True

    def knn(
        self, ctx: StoreContext, queries: Sequence[KnnQuery]
    ) -> Operation[list[list[KnnMatch]]]:
        outcome = yield from self.search(ctx, queries, ())
        # Nearest first, as the protocol promises: the server's order is not always
        # that (valkey-search 1.0's cluster coordinator merges the shards' replies
        # unsorted; RediSearch's filtered KNN after a memory of the filter expired).
        return [sorted(matches, key=_distance) for matches in outcome.matches]

    def _command(self, ctx: StoreContext, q: KnnQuery) -> Command:
        dialect = ctx.dialect or NO_SEARCH
        index = ctx.keys.index
        if q.lexical and ctx.lexical_form == TEXT_FORM:
            return Command(
                ("FT.SEARCH", *text_search_args(index, q.filter, q.terms, q.k, q.fields))
            )
        policy = None
        session_pool = q.filter.session is not None and q.filter.session != _SHARED_SESSION
        if dialect.hybrid_policy and not q.lexical and not session_pool:
            key = size_key(ctx, q.filter)
            subset = self._sizes.get(key) if key is not None else None
            policy = hybrid_policy(subset, self._index_docs, q.k)
        blob = vector_blob(q.vector)
        tokens = [term_token(t) for t in q.terms] if q.lexical else []
        args = knn_search_args(
            index,
            q.filter,
            q.k,
            blob,
            q.fields,
            lexical=q.lexical,
            term_tokens=tokens,
            hybrid_policy=policy,
            session_pool=session_pool and not q.lexical,
        )
        return Command(("FT.SEARCH", *args))

    def _plan_commands(self, ctx: StoreContext, queries: Sequence[KnnQuery]) -> list[Command]:
        """Reads that keep the plan's size estimates fresh (RediSearch only)."""
        dialect = ctx.dialect or NO_SEARCH
        if not dialect.hybrid_policy:
            return []
        keys = {size_key(ctx, q.filter) for q in queries if not q.lexical}
        commands = [command("ZCARD", key) for key in sorted(k for k in keys if k is not None)]
        if time.monotonic() >= self._info_due:
            self._info_due = time.monotonic() + _INFO_REFRESH_SECONDS
            commands.append(command("FT.INFO", ctx.keys.index))
        return commands

    def _learn_sizes(
        self, ctx: StoreContext, commands: Sequence[Command], replies: Sequence[Any]
    ) -> None:
        """Keep the sizes the query plan estimates from; one that cannot be read keeps
        its last value (an estimate: the next search reads it again), logged and counted
        (``bookkeeping_failures``)."""
        for cmd, reply in zip(commands, replies, strict=True):
            try:
                if isinstance(reply, AgentMemoryError):
                    raise reply
                if cmd.name == "ZCARD":
                    self._sizes[str(cmd.args[1])] = integer(reply)
                else:
                    self._index_docs = parse_index_info(reply).num_docs
            except AgentMemoryError as exc:
                logger.warning(
                    "store %s: %s for the query plan failed (%s); the last estimate is kept",
                    ctx.keys.name, cmd.name, exc,
                )  # fmt: skip
                ctx.count("bookkeeping_failures")

    def search(
        self, ctx: StoreContext, queries: Sequence[KnnQuery], extra: Sequence[Command]
    ) -> Operation[SearchOutcome]:
        commands = [self._command(ctx, q) for q in queries]
        plan = self._plan_commands(ctx, queries)
        batch = [*commands, *extra, *plan]
        if ctx.settings.cluster:
            replies = yield from self._search_cluster(ctx, batch)
        else:
            replies = yield from execute_batch(batch)
        if any(is_missing(r) for r in replies):
            # The server lost the index (restarted without persistence, FLUSHALL, an
            # operator's FT.DROPINDEX; on a cluster, one node restarted): re-create it
            # once (the server backfills the hashes already there) and search again. The
            # store's identity record may be gone with it: recorded again (or found to
            # name another width) at the next operation.
            ctx.identity_stale = True
            yield from self.prepare(ctx)
            replies = yield from execute_batch(batch)
        searched = len(commands) + len(extra)
        self._learn_sizes(ctx, plan, replies[searched:])
        results: list[list[KnnMatch]] = []
        for q, reply in zip(queries, replies, strict=False):
            mismatch = width_mismatch(ctx, reply)
            if mismatch is not None:
                raise mismatch from reply
            if isinstance(reply, AgentMemoryError):
                raise reply
            # Each reply holds ~50 documents: decoded in turns of their own (the first
            # one apart from reading the replies off the socket).
            _, entries = search_entries(reply)
            matches: list[KnnMatch] = []
            for part in in_turns(entries):
                yield from pause()
                matches += _matches(ctx, q, part)
            results.append(matches)
        return SearchOutcome(results, list(replies[len(commands) : searched]))

    def _search_cluster(self, ctx: StoreContext, batch: list[Command]) -> Operation[list[Any]]:
        """The batch on a cluster, after checking (every ``SHARD_CHECK_SECONDS``, and
        right after a search met an unreachable node) that every primary still has the
        index. valkey-search's coordinator can answer a search from the primaries that
        have the index and leave out, without an error, the memories of one that lost it
        (a node restarted from an append-only file begun before the index existed) or
        that is down (1.0): a check that cannot reach every primary fails the search as
        unavailable."""
        if time.monotonic() >= self._shards_due:
            self._shards_due = time.monotonic() + SHARD_CHECK_SECONDS
            try:
                yield from repair_shards(ctx)
            except (ServerUnavailableError, OperationTimeoutError):
                self._shards_due = 0.0
                raise
        try:
            replies = yield from execute_batch(batch)
        except (ServerUnavailableError, OperationTimeoutError):
            self._shards_due = 0.0
            raise
        if any(isinstance(r, (ServerUnavailableError, OperationTimeoutError)) for r in replies):
            self._shards_due = 0.0
        return replies

    def drop(self, ctx: StoreContext) -> Operation[None]:
        yield from drop_index(ctx)


def _distance(match: KnnMatch) -> float:
    return match.distance


def _matches(ctx: StoreContext, q: KnnQuery, entries: Sequence[SearchEntry]) -> list[KnnMatch]:
    """The matches among entries of a search reply (text searches have no distance:
    0)."""
    alias = None
    if not (q.lexical and ctx.lexical_form == TEXT_FORM):
        alias = LEX_DISTANCE_ALIAS if q.lexical else DISTANCE_ALIAS
    matches = []
    prefix = ctx.keys.prefix
    raw_prefix = prefix.encode("utf-8")
    clamp = not q.lexical
    # One document's decoding inlined (see :func:`document`): a recall decodes 50-70.
    for key, raw_fields in entries:
        fields = pairs(raw_fields) if raw_fields else {}  # a fresh dict: ours to change
        distance = fields.pop(alias, None) if alias is not None else 0.0
        if distance is None or not fields:
            continue  # deleted or expired between match and fetch
        if type(key) is bytes:
            memory_id = text(key[len(raw_prefix) :] if key.startswith(raw_prefix) else key)
        else:
            name = text(key)
            memory_id = name[len(prefix) :] if name.startswith(prefix) else name
        value = number(distance)
        if clamp:
            value = 0.0 if value < 0.0 else 2.0 if value > 2.0 else value
        matches.append(KnnMatch(memory_id, value, fields))
    return matches
