"""Search backend over FT.SEARCH (valkey-search >= 1.0.2 or RediSearch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.backends.base import KnnMatch, KnnQuery, SearchOutcome
from agent_memory.backends.upgrade import ensure_lexical
from agent_memory.core.effects import Command, Operation, execute, execute_batch
from agent_memory.core.replies import error_text, number, text
from agent_memory.errors import AgentMemoryError, IndexMismatchError, ServerResponseError
from agent_memory.search.parse import IndexInfo, parse_index_info, parse_search_reply
from agent_memory.search.query import (
    LEX_DISTANCE_ALIAS,
    VectorIndexSpec,
    create_index_args,
    knn_search_args,
)
from agent_memory.store.context import StoreContext
from agent_memory.store.layout import DISTANCE_ALIAS, F_LEX
from agent_memory.store.records import vector_blob


def _missing_index(exc: AgentMemoryError) -> bool:
    message = error_text(exc)
    return "unknown index" in message or "not found" in message or "no such index" in message


def _already_exists(exc: AgentMemoryError) -> bool:
    return "already exists" in error_text(exc)


def _read_info(ctx: StoreContext) -> Operation[tuple[IndexInfo, bool] | None]:
    """FT.INFO of the store's index and whether it has the ``lex`` field (``None``: no
    index)."""
    try:
        reply = yield from execute("FT.INFO", ctx.keys.index)
    except ServerResponseError as exc:
        if _missing_index(exc):
            return None
        raise
    return parse_index_info(reply), _mentions(reply, F_LEX)


def read_index_info(ctx: StoreContext) -> Operation[IndexInfo | None]:
    """FT.INFO of the store's index, or ``None`` when it does not exist."""
    found = yield from _read_info(ctx)
    return found[0] if found is not None else None


def _mentions(reply: Any, name: str) -> bool:
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


def _check_compatible(ctx: StoreContext, info: IndexInfo) -> None:
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


class FtBackend:
    """Filtered KNN through ``FT.SEARCH``; emits only the valkey-search 1.0 dialect."""

    name = "ft"

    def prepare(self, ctx: StoreContext) -> Operation[bool]:
        """Create the index, or check it; an index of schema version 1 (no ``lex``
        field) is upgraded in place: the memories get their ``lex`` vectors and the term
        statistics are counted, then the index is dropped (never its documents) and
        created again with the ``lex`` field (the server re-indexes the hashes)."""
        found = yield from _read_info(ctx)
        if found is not None:
            info, has_lex = found
            _check_compatible(ctx, info)
            if has_lex:
                yield from ensure_lexical(ctx)
                return False
            yield from ensure_lexical(ctx, force=True)
            yield from self.drop(ctx)
        else:
            yield from ensure_lexical(ctx)
        assert ctx.dim is not None
        args = create_index_args(ctx.keys.index, ctx.keys.prefix, VectorIndexSpec(dim=ctx.dim))
        try:
            yield from execute("FT.CREATE", *args)
        except ServerResponseError as exc:
            if not _already_exists(exc):
                raise
            # Another process created it first: make sure it is compatible.
            other = yield from read_index_info(ctx)
            if other is not None:
                _check_compatible(ctx, other)
            return False
        return True

    def knn(
        self, ctx: StoreContext, queries: Sequence[KnnQuery]
    ) -> Operation[list[list[KnnMatch]]]:
        outcome = yield from self.search(ctx, queries, ())
        return outcome.matches

    def search(
        self, ctx: StoreContext, queries: Sequence[KnnQuery], extra: Sequence[Command]
    ) -> Operation[SearchOutcome]:
        commands = [
            Command(
                (
                    "FT.SEARCH",
                    *knn_search_args(
                        ctx.keys.index,
                        q.filter,
                        q.k,
                        vector_blob(q.vector),
                        q.fields,
                        lexical=q.lexical,
                    ),
                )
            )
            for q in queries
        ]
        replies = yield from execute_batch([*commands, *extra])
        if any(isinstance(r, ServerResponseError) and _missing_index(r) for r in replies):
            # The server lost the index (restarted without persistence, FLUSHALL, an
            # operator's FT.DROPINDEX): re-create it once (the server backfills the
            # hashes already there) and search again.
            yield from self.prepare(ctx)
            replies = yield from execute_batch([*commands, *extra])
        results: list[list[KnnMatch]] = []
        for q, reply in zip(queries, replies, strict=False):
            if isinstance(reply, AgentMemoryError):
                raise reply
            alias = LEX_DISTANCE_ALIAS if q.lexical else DISTANCE_ALIAS
            parsed = parse_search_reply(reply)
            matches = []
            for doc in parsed.documents:
                fields = dict(doc.fields)
                distance = fields.pop(alias, None)
                if distance is None or "content" not in fields:
                    continue  # deleted or expired between match and fetch
                memory_id = text(fields.get("id")) if "id" in fields else ctx.keys.id_of(doc.key)
                value = number(distance)
                if not q.lexical:
                    value = min(max(value, 0.0), 2.0)
                matches.append(KnnMatch(memory_id, value, fields))
            results.append(matches)
        return SearchOutcome(results, list(replies[len(commands) :]))

    def drop(self, ctx: StoreContext) -> Operation[None]:
        try:
            yield from execute("FT.DROPINDEX", ctx.keys.index)
        except ServerResponseError as exc:
            if not _missing_index(exc):
                raise
