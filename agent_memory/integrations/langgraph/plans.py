"""The operation plans of the LangGraph store (see the package docstring): each
LangGraph operation as a generator of store calls, so one body serves the sync and the
async runner."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, TypeVar

from agent_memory.errors import InvalidInputError
from agent_memory.integrations._optional import require

require("langgraph.store.base", extra="langgraph", package="langgraph")

from langgraph.store.base import (  # noqa: E402 - after the check naming the extra
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
)

from agent_memory.integrations.langgraph.checks import (  # noqa: E402
    check_filter,
    check_index,
    check_op,
    check_value,
    ttl_seconds,
)
from agent_memory.integrations.langgraph.values import (  # noqa: E402
    clean_text,
    digest,
    matches_filter,
    prefix_tag,
    to_datetime,
)
from agent_memory.schema.types import SIMILARITY_ONLY, MemoryItem, Scope  # noqa: E402
from agent_memory.store.memory_store import MemoryStore  # noqa: E402
from agent_memory.store.ops.write import MemoryInput, validate_input  # noqa: E402
from agent_memory.store.sync_store import SyncMemoryStore  # noqa: E402

T = TypeVar("T")

MARKER_TAG = "langgraph:item"
NOINDEX_TAG = "langgraph:unindexed"
META_KEY = "langgraph"
SOURCE = "langgraph"
#: Nearest items a semantic search ranks (the store's largest ``k``); past them the
#: other items of the prefix follow unscored.
MAX_SEMANTIC_CANDIDATES = 1000
#: Most items one store ``list`` call returns: longer listings take several calls
#: (each call ranks the whole prefix: few large calls cost less than many small ones).
_LIST_CHUNK = 10_000
#: Items the first call of a filtered listing reads, per item wanted: reading the whole
#: prefix to fill a page of ten is most of a filtered search's cost at 10k items.
_FILTERED_READ_AHEAD = 4
_FILTERED_FIRST_CALL = 100

# An operation plan yields (method name, args, kwargs) of store calls and receives each
# call's result: one body serves the sync and the async runner.
Call = tuple[str, tuple[Any, ...], dict[str, Any]]
Plan = Generator[Call, Any, T]


def _call(method: str, *args: Any, **kwargs: Any) -> Generator[Call, Any, Any]:
    return (yield (method, args, kwargs))


def check_uncapped(store: MemoryStore | SyncMemoryStore | None) -> None:
    """Refuse a store with ``max_items_per_scope`` in force: every LangGraph item shares
    one exact scope, so a cap would evict items.

    Raises:
        InvalidInputError: the store has a cap (given, or set since in its live config).
    """
    if store is not None and store.current_config().max_items_per_scope is not None:
        raise InvalidInputError(
            "a LangGraph store needs a MemoryStore without max_items_per_scope "
            "(every item shares one scope: the cap would evict items)",
            field="store",
        )


def _document(value: Mapping[str, Any], fields: Sequence[str], max_bytes: int) -> str | None:
    """The text to embed for ``value``; ``None`` when no index field has text."""
    texts: list[str] = []
    for path in fields:
        if path == "$":
            texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
        else:
            texts.extend(get_text_at_path(value, tokenize_path(path)))
    text = clean_text("\n".join(t for t in texts if t), max_bytes)
    return text if text.strip() else None


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInputError(
            f"unsupported match type {condition.match_type!r}", field="match_conditions"
        )
    return all(p in ("*", n) for n, p in pairs)


class OperationPlans:
    """The plans of :class:`~agent_memory.integrations.langgraph.AgentMemoryStore`
    (a mixin: the store sets these attributes in its constructor)."""

    _scope: Scope
    _fields: tuple[str, ...]
    _importance: float
    _content_limit: int
    _served: MemoryStore | SyncMemoryStore
    _clock: Callable[[], float]
    ttl_config: TTLConfig | None

    def _plan(self, ops: list[Op]) -> Plan[list[Result]]:
        # Every operation is checked before the first one runs: a refused batch writes
        # (and deletes) nothing.
        for op in ops:
            check_op(op)
            if isinstance(op, PutOp) and op.value is not None:
                # the store's checks of the memory too (content, metadata size...)
                memory_id = self._id(op.namespace, op.key)
                validate_input(
                    self._input(op, op.namespace, op.key, memory_id, None, now=0.0),
                    self._content_limit,
                )
        results: list[Result] = [None] * len(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, (PutOp, GetOp)):
                # a run of puts (or of gets) is one batched step: one store call per
                # step, never one per item
                kind = type(op)
                j = i
                while j < len(ops) and isinstance(ops[j], kind):
                    j += 1
                if kind is PutOp:
                    yield from self._put([p for p in ops[i:j] if isinstance(p, PutOp)])
                else:
                    gets = [g for g in ops[i:j] if isinstance(g, GetOp)]
                    results[i:j] = yield from self._get(gets)
                i = j
                continue
            if isinstance(op, SearchOp):
                results[i] = yield from self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = yield from self._list_namespaces(op)
            i += 1
        return results

    def _id(self, namespace: tuple[str, ...], key: str) -> str:
        return "lg" + digest([self._scope.namespace, list(namespace), key])[:40]

    def _item(self, memory: MemoryItem, score: float | None = None) -> SearchItem | None:
        """The LangGraph item a memory holds; ``None`` for another kind of memory, and
        for an item whose metadata another writer damaged (reported and skipped)."""
        meta = memory.metadata.get(META_KEY)
        if not isinstance(meta, Mapping):
            return None
        namespace, key, value = meta.get("namespace"), meta.get("key"), meta.get("value")
        written = memory.created_at / 1000
        try:
            if not (
                isinstance(namespace, list)
                and all(isinstance(label, str) for label in namespace)
                and isinstance(key, str)
                and isinstance(value, Mapping)
            ):
                raise InvalidInputError("namespace, key or value missing or of another type")
            created = to_datetime(float(meta.get("created_at") or written))
            updated = to_datetime(float(meta.get("updated_at") or written))
        except (InvalidInputError, TypeError, ValueError, OverflowError, OSError) as exc:
            self._served.report_corrupt_record(memory.id, f"LangGraph item: {exc}")
            return None
        return SearchItem(
            namespace=tuple(namespace),
            key=key,
            value=dict(value),
            created_at=created,
            updated_at=updated,
            score=score,
        )

    def _refresh(self, memories: Sequence[MemoryItem]) -> Plan[None]:
        """Restart the TTL of the items read, all in one store call (a write: the
        expiry of each indexed record is rewritten)."""
        ttls: dict[str, float] = {}
        for memory in memories:
            meta = memory.metadata.get(META_KEY)
            minutes = meta.get("ttl_minutes") if isinstance(meta, Mapping) else None
            if minutes is None:
                continue
            try:
                ttls[memory.id] = ttl_seconds(minutes) or 0.0
            except InvalidInputError as exc:
                # written by another writer: the item is read, its TTL left as it is
                self._served.report_corrupt_record(memory.id, f"LangGraph ttl: {exc}")
        if ttls:
            yield from _call("expire_many", ttls)

    def _get(self, ops: Sequence[GetOp]) -> Plan[list[Item | None]]:
        ids = [self._id(op.namespace, op.key) for op in ops]
        memories = yield from _call("get_many", ids)
        results: list[Item | None] = []
        refreshed: dict[str, MemoryItem] = {}
        for op, memory in zip(ops, memories, strict=True):
            found = self._item(memory) if isinstance(memory, MemoryItem) else None
            if found is None or found.namespace != op.namespace or found.key != op.key:
                results.append(None)
                continue
            if op.refresh_ttl:
                refreshed[memory.id] = memory
            results.append(
                Item(
                    value=found.value,
                    key=found.key,
                    namespace=found.namespace,
                    created_at=found.created_at,
                    updated_at=found.updated_at,
                )
            )
        yield from self._refresh(list(refreshed.values()))
        return results

    def _put(self, ops: Sequence[PutOp]) -> Plan[None]:
        latest: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            latest[(op.namespace, op.key)] = op
        ids = [self._id(namespace, key) for namespace, key in latest]
        previous = yield from _call("get_many", ids)
        now = float(self._clock())
        writes = [
            self._input(op, namespace, key, memory_id, before, now=now)
            for ((namespace, key), op), memory_id, before in zip(
                latest.items(), ids, previous, strict=True
            )
            if op.value is not None
        ]
        # The store's own checks, on the final inputs, before anything is written; and
        # no cap set since through the live config (it would evict items).
        for write in writes:
            validate_input(write, self._content_limit)
        if writes:
            check_uncapped(self._served)
        deletes = [
            memory_id
            for ((_, _), op), memory_id in zip(latest.items(), ids, strict=True)
            if op.value is None
        ]
        if deletes:
            yield from _call("forget_many", deletes)
        if writes:
            # A write under a caller-chosen id replaces the memory that holds it entirely
            # (no field or TTL of the old hash survives), and only once the new text is
            # embedded: a put that fails leaves the old value. Never deduplicated: two
            # keys may hold equal values.
            yield from _call("remember_many", writes, dedupe=False)

    def _input(
        self,
        op: PutOp,
        namespace: tuple[str, ...],
        key: str,
        memory_id: str,
        previous: MemoryItem | None,
        *,
        now: float,
    ) -> MemoryInput:
        value = check_value(op.value)
        index = check_index(op.index)
        fields = self._fields if index is None else index
        content = _document(value, fields, self._content_limit) if fields else None
        created, updated = now, now
        if previous is not None:
            before = self._item(previous)
            if before is not None:
                created = before.created_at.timestamp()
                # strictly later than the previous write, whatever the clock resolution
                updated = max(now, before.updated_at.timestamp() + 1e-6)
        tags = [MARKER_TAG, *(prefix_tag(namespace[:n]) for n in range(1, len(namespace) + 1))]
        if content is None:
            tags.append(NOINDEX_TAG)
        meta = {
            "namespace": list(namespace),
            "key": key,
            "value": value,
            "created_at": created,
            "updated_at": updated,
            "ttl_minutes": op.ttl,
        }
        return MemoryInput(
            content=content or clean_text("/".join([*namespace, key]), self._content_limit),
            importance=self._importance,
            tags=tags,
            ttl=ttl_seconds(op.ttl),
            scope=self._scope,
            source=SOURCE,
            metadata={META_KEY: meta},
            id=memory_id,
        )

    def _tags(self, prefix: tuple[str, ...]) -> list[str]:
        return [prefix_tag(prefix)] if prefix else [MARKER_TAG]

    def _list_all(self, tags: list[str]) -> Generator[Call, Any, list[MemoryItem]]:
        items: list[MemoryItem] = []
        while True:
            page = yield from _call(
                "list", self._scope, tags=tags, limit=_LIST_CHUNK, offset=len(items)
            )
            items.extend(page.items)
            if len(page.items) < _LIST_CHUNK or len(items) >= page.total:
                return items

    def _filtered(
        self,
        tags: list[str],
        flt: Mapping[str, Any] | None,
        wanted: int,
        skip: frozenset[str] = frozenset(),
    ) -> Generator[Call, Any, list[MemoryItem]]:
        """Readable items of the listing that pass ``flt``, newest first, not in
        ``skip``: at least ``wanted`` when there are, read in calls that start small and
        double up to :data:`_LIST_CHUNK` (a page found early reads a fraction of the
        prefix; a rare match costs a few more calls than one read of everything)."""
        found: list[MemoryItem] = []
        seen: set[str] = set(skip)
        size = min(_LIST_CHUNK, max(_FILTERED_FIRST_CALL, _FILTERED_READ_AHEAD * wanted))
        start = 0
        while True:
            page = yield from _call("list", self._scope, tags=tags, limit=size, offset=start)
            start += len(page.items)
            for memory in page.items:
                # a write between two calls moves the offsets: an item read twice counts once
                if memory.id in seen:
                    continue
                seen.add(memory.id)
                if self._item(memory) is not None and matches_filter(self._value(memory), flt):
                    found.append(memory)
            if len(found) >= wanted or len(page.items) < size or start >= page.total:
                return found
            size = min(_LIST_CHUNK, size * 2)

    def _search(self, op: SearchOp) -> Plan[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        limit, offset = op.limit, op.offset  # checked ints >= 0 (check_op)
        if limit == 0:
            return []
        tags = self._tags(prefix)
        flt = check_filter(op.filter)
        matched: list[tuple[MemoryItem, float | None]] = []
        if op.query:
            scored = yield from self._semantic(op.query, tags, flt, offset + limit)
            matched.extend(scored)
        elif flt:
            passing = yield from self._filtered(tags, flt, offset + limit)
            matched.extend((m, None) for m in passing)
        else:
            page = yield from self._listed_page(tags, limit, offset)
            matched.extend(page)
            offset = 0
        # Items another writer damaged are reported and left out before the page is
        # cut, so a page is short only at the end; the items past the page are not
        # converted (a search may have read the whole prefix).
        readable: list[tuple[MemoryItem, SearchItem]] = []
        for memory, score in matched:
            item = self._item(memory, score)
            if item is not None:
                readable.append((memory, item))
                if len(readable) >= offset + limit:
                    break
        window = readable[offset : offset + limit]
        if op.refresh_ttl:
            yield from self._refresh([memory for memory, _ in window])
        return [item for _, item in window]

    def _listed_page(
        self, tags: list[str], limit: int, offset: int
    ) -> Plan[list[tuple[MemoryItem, float | None]]]:
        """``limit`` items of the listing from ``offset`` (which counts every stored
        item), topped up past the items another writer damaged (reported, left out), in
        store calls of at most :data:`_LIST_CHUNK` items (the store's maximum)."""
        found: list[tuple[MemoryItem, float | None]] = []
        start = offset
        while len(found) < limit:
            wanted = min(limit - len(found), _LIST_CHUNK)
            page = yield from _call("list", self._scope, tags=tags, limit=wanted, offset=start)
            start += len(page.items)
            found.extend((m, None) for m in page.items if self._item(m) is not None)
            if len(page.items) < wanted:
                break
        return found

    def _semantic(
        self, query: str, tags: list[str], flt: Mapping[str, Any] | None, wanted: int
    ) -> Plan[list[tuple[MemoryItem, float | None]]]:
        """At least ``wanted`` items passing ``flt`` (when there are): the nearest
        indexed ones by similarity, then the unindexed ones unscored. When the nearest
        read stops at :data:`MAX_SEMANTIC_CANDIDATES` and that is not enough, every
        other item of the prefix follows unscored (newest first), so a page is short
        only at the end and a filtered item is found past the nearest too."""
        scored, capped = yield from self._nearest(query, tags, flt, wanted)
        scored.sort(key=lambda pair: -pair[1])
        matched: list[tuple[MemoryItem, float | None]] = list(scored)
        if len(matched) >= wanted:
            return matched
        missing = wanted - len(matched)
        if capped:
            ranked = frozenset(memory.id for memory, _ in scored)
            rest = yield from self._filtered(tags, flt, missing, skip=ranked)
        else:
            rest = yield from self._filtered([*tags, NOINDEX_TAG], flt, missing)
        matched.extend((m, None) for m in rest)
        return matched

    def _nearest(
        self, query: str, tags: list[str], flt: Mapping[str, Any] | None, wanted: int
    ) -> Plan[tuple[list[tuple[MemoryItem, float]], bool]]:
        """Indexed items passing ``flt``, nearest first, at least ``wanted`` when there
        are (unindexed items hold vectors of their path: they are skipped, and ``k``
        grows past them); and whether the read stopped at the cap with items left."""
        cap = MAX_SEMANTIC_CANDIDATES
        k = cap if flt else min(cap, wanted)
        while True:
            hits = yield from _call(
                "recall", query, scope=self._scope, k=k, tags=tags, threshold=2.0,
                reinforce=False, weights=SIMILARITY_ONLY,
            )  # fmt: skip
            indexed = [hit for hit in hits if NOINDEX_TAG not in hit.item.tags]
            grown = min(cap, wanted + len(hits) - len(indexed))
            if flt or len(hits) < k or len(indexed) >= wanted or grown <= k:
                break
            k = grown
        scored = [
            (hit.item, hit.similarity)
            for hit in indexed
            if matches_filter(self._value(hit.item), flt)
        ]
        return scored, k == cap and len(hits) == cap

    @staticmethod
    def _value(memory: MemoryItem) -> Mapping[str, Any]:
        meta = memory.metadata.get(META_KEY)
        value = meta.get("value") if isinstance(meta, Mapping) else None
        return value if isinstance(value, Mapping) else {}

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        conditions = tuple(op.match_conditions or ())
        lead: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                fixed = []
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                if len(fixed) > len(lead):
                    lead = tuple(fixed)
        memories = yield from self._list_all(self._tags(lead))
        namespaces: set[tuple[str, ...]] = set()
        for memory in memories:
            found = self._item(memory)
            if found is None or not all(_matches(c, found.namespace) for c in conditions):
                continue
            ns = found.namespace
            namespaces.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        ordered = sorted(namespaces)
        return ordered[op.offset : op.offset + op.limit]
