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

from agent_memory.integrations.langgraph.values import (  # noqa: E402
    check_namespace,
    clean_text,
    digest,
    matches_filter,
    prefix_tag,
    to_datetime,
)
from agent_memory.schema.types import MemoryItem, Scope  # noqa: E402
from agent_memory.store.ops.write import MemoryInput  # noqa: E402

T = TypeVar("T")

MARKER_TAG = "langgraph:item"
NOINDEX_TAG = "langgraph:unindexed"
META_KEY = "langgraph"
SOURCE = "langgraph"
#: Nearest items a filtered semantic search considers (the store's largest ``k``).
MAX_SEMANTIC_CANDIDATES = 1000
_PAGE = 1000

# An operation plan yields (method name, args, kwargs) of store calls and receives each
# call's result: one body serves the sync and the async runner.
Call = tuple[str, tuple[Any, ...], dict[str, Any]]
Plan = Generator[Call, Any, T]


def _call(method: str, *args: Any, **kwargs: Any) -> Generator[Call, Any, Any]:
    return (yield (method, args, kwargs))


def _document(value: Mapping[str, Any], fields: Sequence[str]) -> str | None:
    """The text to embed for ``value``; ``None`` when no index field has text."""
    texts: list[str] = []
    for path in fields:
        if path == "$":
            texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
        else:
            texts.extend(get_text_at_path(value, tokenize_path(path)))
    text = clean_text("\n".join(t for t in texts if t))
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
    _clock: Callable[[], float]
    ttl_config: TTLConfig | None

    def _plan(self, ops: list[Op]) -> Plan[list[Result]]:
        results: list[Result] = [None] * len(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, PutOp):
                j = i
                while j < len(ops) and isinstance(ops[j], PutOp):
                    j += 1
                puts: list[PutOp] = [p for p in ops[i:j] if isinstance(p, PutOp)]
                yield from self._put(puts)
                i = j
                continue
            if isinstance(op, GetOp):
                results[i] = yield from self._get(op)
            elif isinstance(op, SearchOp):
                results[i] = yield from self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = yield from self._list_namespaces(op)
            else:
                raise InvalidInputError(f"unknown operation {type(op).__name__}", field="ops")
            i += 1
        return results

    def _id(self, namespace: tuple[str, ...], key: str) -> str:
        return "lg" + digest([self._scope.namespace, list(namespace), key])[:40]

    def _item(self, memory: MemoryItem, score: float | None = None) -> SearchItem | None:
        meta = memory.metadata.get(META_KEY)
        if not isinstance(meta, Mapping):
            return None
        written = memory.created_at / 1000
        return SearchItem(
            namespace=tuple(meta["namespace"]),
            key=str(meta["key"]),
            value=dict(meta["value"]),
            created_at=to_datetime(float(meta.get("created_at") or written)),
            updated_at=to_datetime(float(meta.get("updated_at") or written)),
            score=score,
        )

    def _refresh(self, memories: Sequence[MemoryItem], refresh: bool) -> Plan[None]:
        if not refresh:
            return
        for memory in memories:
            meta = memory.metadata.get(META_KEY)
            minutes = meta.get("ttl_minutes") if isinstance(meta, Mapping) else None
            if minutes:
                yield from _call("update", memory.id, ttl=float(minutes) * 60)

    def _get(self, op: GetOp) -> Plan[Item | None]:
        check_namespace(op.namespace, what="namespace", allow_empty=True)
        memory = yield from _call("get", self._id(op.namespace, str(op.key)))
        found = self._item(memory) if isinstance(memory, MemoryItem) else None
        if found is None or found.namespace != op.namespace or found.key != str(op.key):
            return None
        yield from self._refresh([memory], op.refresh_ttl)
        return Item(
            value=found.value,
            key=found.key,
            namespace=found.namespace,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    def _put(self, ops: Sequence[PutOp]) -> Plan[None]:
        latest: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            check_namespace(op.namespace, what="namespace", allow_empty=False)
            latest[(op.namespace, str(op.key))] = op
        writes: list[MemoryInput] = []
        for (namespace, key), op in latest.items():
            memory_id = self._id(namespace, key)
            previous = yield from _call("get", memory_id)
            # Always delete first: a rewrite must not inherit fields or a TTL of the old
            # hash (even one expired by the store's clock but not yet reaped).
            yield from _call("forget", memory_id)
            if op.value is None:
                continue
            writes.append(self._input(op, namespace, key, memory_id, previous))
        if writes:
            # Caller-chosen ids: the store refreshes portable vector mirrors itself.
            yield from _call("remember_many", writes)

    def _input(
        self,
        op: PutOp,
        namespace: tuple[str, ...],
        key: str,
        memory_id: str,
        previous: MemoryItem | None,
    ) -> MemoryInput:
        if not isinstance(op.value, Mapping):
            raise InvalidInputError("a LangGraph value must be a mapping", field="value")
        value = dict(op.value)
        fields = self._fields if op.index is None else (op.index or ())
        content = _document(value, fields) if fields else None
        now = float(self._clock())
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
            content=content or "/".join([*namespace, key]),
            importance=self._importance,
            tags=tags,
            ttl=None if op.ttl is None else float(op.ttl) * 60,
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
            page = yield from _call("list", self._scope, tags=tags, limit=_PAGE, offset=len(items))
            items.extend(page.items)
            if len(page.items) < _PAGE or len(items) >= page.total:
                return items

    def _search(self, op: SearchOp) -> Plan[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        check_namespace(prefix, what="namespace prefix", allow_empty=True)
        limit, offset = int(op.limit), int(op.offset)
        if limit <= 0 or offset < 0:
            return []
        tags = self._tags(prefix)
        flt = op.filter or None
        matched: list[tuple[MemoryItem, float | None]] = []
        if op.query:
            scored = yield from self._nearest(op.query, tags, flt, offset + limit)
            scored.sort(key=lambda pair: -pair[1])
            matched.extend(scored)
            if len(matched) < offset + limit:
                unindexed = yield from self._list_all([*tags, NOINDEX_TAG])
                matched.extend((m, None) for m in unindexed if matches_filter(self._value(m), flt))
        elif flt:
            everything = yield from self._list_all(tags)
            matched.extend((m, None) for m in everything if matches_filter(self._value(m), flt))
        else:
            page = yield from _call(
                "list", self._scope, tags=tags, limit=min(limit, 10_000), offset=offset
            )
            matched.extend((m, None) for m in page.items)
            offset = 0
        window = matched[offset : offset + limit]
        yield from self._refresh([m for m, _ in window], op.refresh_ttl)
        results = [self._item(m, score) for m, score in window]
        return [r for r in results if r is not None]

    def _nearest(
        self, query: str, tags: list[str], flt: Mapping[str, Any] | None, wanted: int
    ) -> Plan[list[tuple[MemoryItem, float]]]:
        """Indexed items passing ``flt``, nearest first, at least ``wanted`` when there
        are (unindexed items hold vectors of their path: they are skipped, and ``k``
        grows past them)."""
        k = MAX_SEMANTIC_CANDIDATES if flt else min(MAX_SEMANTIC_CANDIDATES, wanted)
        while True:
            hits = yield from _call(
                "recall", query, scope=self._scope, k=k, tags=tags, threshold=2.0,
                reinforce=False,
            )  # fmt: skip
            indexed = [hit for hit in hits if NOINDEX_TAG not in hit.item.tags]
            grown = min(MAX_SEMANTIC_CANDIDATES, wanted + len(hits) - len(indexed))
            if flt or len(hits) < k or len(indexed) >= wanted or grown <= k:
                break
            k = grown
        return [
            (hit.item, hit.similarity)
            for hit in indexed
            if matches_filter(self._value(hit.item), flt)
        ]

    @staticmethod
    def _value(memory: MemoryItem) -> Mapping[str, Any]:
        meta = memory.metadata.get(META_KEY)
        value = meta.get("value") if isinstance(meta, Mapping) else None
        return value if isinstance(value, Mapping) else {}

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        conditions = tuple(op.match_conditions or ())
        lead: tuple[str, ...] = ()
        for condition in conditions:
            check_namespace(tuple(condition.path), what="namespace path", allow_empty=True)
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
