"""The operations of CrewAI's ``StorageBackend`` on a memory store (generators, no I/O).

Each function checks its arguments (raising before any store call), then yields the
:class:`~.calls.StoreCall` values it needs and returns CrewAI's value; :mod:`.calls` runs
it on a blocking or an asyncio store. Every call is confined to the storage's
:class:`~.layout.Binding`: writes land in its scope, reads and deletes filter on its
scope tags (:mod:`.layout`), so nothing outside the binding is read, found or deleted.

* ``save`` / ``update``: one ``import_records`` (an upsert by derived id: the record's
  vector, timestamps, categories and metadata are kept as given).
* ``search``: one ``recall_by_vector`` (one per category when categories are given,
  merged), ranked by cosine similarity alone, no reinforcement; the score is the cosine
  similarity clipped to ``[0, 1]``; at most :data:`CANDIDATES` results, whatever the
  ``limit``. With a ``metadata_filter`` the nearest
  :data:`CANDIDATES` memories of the prefix are filtered.
* ``get_record``: one ``get``; ``count``: one ``list``; ``reset`` and unfiltered
  ``delete``: one ``forget_by_scope``.
* ``list_records``: one ``list`` page (more past :data:`PAGE` records); scope info,
  child scopes, categories and filtered deletes read every record under the prefix
  (``list`` pages of :data:`PAGE`); a delete by ids reads its records with one
  ``get_many`` instead. A filtered delete then removes the matching records with one
  ``_forget_judged``, which reads them again and deletes each only while it still
  passes the filters and holds what it was judged on (a record another client updates
  meanwhile is deleted only if it still matches, and only then counted).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.integrations._optional import require
from agent_memory.integrations.crewai.calls import Plan, StoreCall
from agent_memory.integrations.crewai.layout import (
    Binding,
    Stored,
    category_tag,
    check_categories,
    check_embedding,
    check_record,
    check_record_id,
    child_of,
    import_record,
    matches,
    memory_id,
    normalize_path,
    scope_tag,
    stored_record,
    utc_naive,
)
from agent_memory.schema.types import SIMILARITY_ONLY, ListResult, MemoryItem, RecallResult

_backend = require("crewai.memory.storage.backend", extra="crewai")
_types = require("crewai.memory.types", extra="crewai")

#: Records per ``list`` page when a whole prefix is read (the store's largest page).
PAGE = 10_000
#: Most results of one ``search`` (the store's largest ``k``), and the candidates a
#: ``metadata_filter`` search filters.
CANDIDATES = 1000


class Dimension:
    """The store's embedding dimension, learnt once from ``ensure_index``."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: int | None = None


def _dimension(dim: Dimension) -> Plan[int]:
    if dim.value is None:
        status = yield StoreCall("ensure_index")
        dim.value = int(status.dim)
    return dim.value


def _check_dims(vectors: Sequence[list[float]], known: int | None) -> None:
    """Raise CrewAI's ``EmbeddingDimensionMismatchError`` for a vector whose length is not
    ``known`` (or not the first one's, within a batch)."""
    expected = known
    for vector in vectors:
        if expected is None:
            expected = len(vector)
        elif len(vector) != expected:
            raise _backend.EmbeddingDimensionMismatchError(expected, len(vector))


def _int(value: object, field: str, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise InvalidInputError(f"{field} must be an int {bound}, got {value!r}", field=field)
    return value


def _prefix(scope_prefix: object) -> str:
    return normalize_path(scope_prefix, field="scope_prefix")


def _older_than(value: object) -> datetime | None:
    return None if value is None else utc_naive(value, "older_than")


def _metadata_filter(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError(
            "metadata_filter must be a mapping with str keys", field="metadata_filter"
        )
    return dict(value)


def _record_ids(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInputError("record_ids must be a list of str", field="record_ids")
    return list(dict.fromkeys(check_record_id(r) for r in value))


def _records(value: object) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidInputError("records must be a list of crewai MemoryRecord", field="records")
    return [check_record(r) for r in value]


def _owned(binding: Binding, items: Sequence[MemoryItem]) -> Plan[list[Stored]]:
    out: list[Stored] = []
    for item in items:
        stored = yield from _readable(binding, item)
        if stored is not None:
            out.append(stored)
    return out


def _readable(binding: Binding, item: MemoryItem) -> Plan[Stored | None]:
    """``item`` as a record of ``binding``; ``None`` (reported to the store, which logs
    it and counts it in ``corrupt_records``) when it holds none. Every caller reads under
    the binding's own tags or derived ids, so such a memory is one whose metadata
    another writer damaged."""
    stored = stored_record(binding, item)
    if isinstance(stored, str):
        problem = f"not a readable CrewAI record of this storage: {stored}"
        yield StoreCall("report_corrupt_record", (item.id, problem))
        return None
    return stored


def save(binding: Binding, dim: Dimension, records: object) -> Plan[None]:
    """Store ``records`` (new ids are added, known ones replaced), all or none.

    Raises:
        InvalidInputError: not a list of ``MemoryRecord``, or a record the store refuses
            (blank or oversized content, metadata that is not JSON, too many tags...).
        EmbeddingDimensionMismatchError: an embedding whose length is not the store's.
    """
    checked = _records(records)
    if not checked:
        return None
    imports = [import_record(binding, r) for r in checked]
    vectors = [r["vector"] for r in imports if r["vector"] is not None]
    _check_dims(vectors, None)
    if vectors:
        _check_dims(vectors, (yield from _dimension(dim)))
    yield StoreCall("import_records", (imports,))
    return None


def get_record(binding: Binding, record_id: object) -> Plan[Any]:
    """The record with id ``record_id``, or ``None``.

    Raises:
        InvalidInputError: ``record_id`` is not a ``str``.
    """
    checked = check_record_id(record_id)
    item = yield StoreCall("get", (memory_id(binding, checked),))
    if item is None:
        return None
    stored = yield from _readable(binding, item)  # damaged: read as absent
    return None if stored is None else stored.record


def search(
    binding: Binding,
    dim: Dimension,
    query_embedding: object,
    scope_prefix: object,
    categories: object,
    metadata_filter: object,
    limit: object,
    min_score: object,
) -> Plan[list[tuple[Any, float]]]:
    """The ``limit`` records nearest to ``query_embedding`` under ``scope_prefix`` with
    any of ``categories`` and every ``metadata_filter`` pair, best first, each with its
    cosine similarity (clipped to ``[0, 1]``) when that is at least ``min_score``.

    Raises:
        InvalidInputError: a bad embedding (not numbers, zero length), prefix, category
            list, filter, ``limit`` (an int >= 1; more than :data:`CANDIDATES` returns
            at most that many) or ``min_score``.
        EmbeddingDimensionMismatchError: an embedding whose length is not the store's.
    """
    vector = check_embedding(query_embedding, "query_embedding")
    if vector is None:
        raise InvalidInputError("query_embedding must not be empty", field="query_embedding")
    prefix = _prefix(scope_prefix)
    wanted = check_categories(categories)
    meta = _metadata_filter(metadata_filter)
    # CrewAI passes any limit (its RecallFlow asks for twice the caller's): past the
    # store's largest k, the CANDIDATES nearest are all there is to return.
    k = min(_int(limit, "limit", 1), CANDIDATES)
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)):
        raise InvalidInputError("min_score must be a number", field="min_score")
    floor = float(min_score)
    if math.isnan(floor):  # else it reached the store as a NaN threshold, named so
        raise InvalidInputError("min_score must be a number, not NaN", field="min_score")
    _check_dims([vector], (yield from _dimension(dim)))
    if floor > 1.0:
        return []
    # A cosine distance of 2 admits everything: CrewAI's min_score 0 filters nothing.
    threshold = 2.0 if floor <= 0.0 else 1.0 - floor
    base = [scope_tag(binding, prefix)]
    tag_sets = [[*base, category_tag(binding, c)] for c in wanted] or [base]
    best: dict[str, tuple[Any, float]] = {}
    for tags in tag_sets:
        result: RecallResult = yield StoreCall(
            "recall_by_vector",
            (vector,),
            {
                "scope": binding.scope,
                "k": CANDIDATES if meta else k,
                "tags": tags,
                "threshold": threshold,
                "weights": SIMILARITY_ONLY,
                "reinforce": False,
            },
        )
        for hit in result:
            stored = yield from _readable(binding, hit.item)
            if stored is None:
                continue
            score = min(1.0, max(0.0, float(hit.similarity)))
            if score < floor or not matches(
                stored, prefix=prefix, categories=wanted, older_than=None, metadata_filter=meta
            ):
                continue
            known = best.get(stored.memory_id)
            if known is None or score > known[1]:
                best[stored.memory_id] = (stored.record, score)
    ranked = sorted(best.values(), key=lambda pair: pair[1], reverse=True)
    return ranked[:k]


def _scan(binding: Binding, prefix: str, *, include_suppressed: bool = False) -> Plan[list[Stored]]:
    """Every record of ``binding`` at or below ``prefix``, newest first."""
    found: list[Stored] = []
    offset = 0
    while True:
        page: ListResult = yield StoreCall(
            "list",
            (binding.scope,),
            {
                "tags": [scope_tag(binding, prefix)],
                "limit": PAGE,
                "offset": offset,
                "include_suppressed": include_suppressed,
            },
        )
        found += yield from _owned(binding, page.items)
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return found


def list_records(
    binding: Binding, scope_prefix: object, limit: object, offset: object
) -> Plan[list[Any]]:
    """A page of the records at or below ``scope_prefix``, newest first.

    Raises:
        InvalidInputError: a bad prefix, or ``limit`` / ``offset`` that is not an int >= 0.
    """
    prefix = _prefix(scope_prefix)
    wanted = _int(limit, "limit", 0)
    start = _int(offset, "offset", 0)
    records: list[Any] = []
    while len(records) < wanted:
        page: ListResult = yield StoreCall(
            "list",
            (binding.scope,),
            {
                "tags": [scope_tag(binding, prefix)],
                "limit": min(PAGE, wanted - len(records)),
                "offset": start,
            },
        )
        records += [s.record for s in (yield from _owned(binding, page.items))]
        start += len(page.items)
        if not page.items or start >= page.total:
            break
    return records


def count(binding: Binding, scope_prefix: object) -> Plan[int]:
    """How many records lie at or below ``scope_prefix``.

    Raises:
        InvalidInputError: a bad prefix.
    """
    prefix = _prefix(scope_prefix)
    page: ListResult = yield StoreCall(
        "list", (binding.scope,), {"tags": [scope_tag(binding, prefix)], "limit": 1}
    )
    return int(page.total)


def scope_info(binding: Binding, scope: object) -> Plan[Any]:
    """CrewAI's ``ScopeInfo`` of ``scope``: its records (descendants included), their
    categories and date range, and its immediate child scopes.

    Raises:
        InvalidInputError: a bad scope path.
    """
    prefix = _prefix(scope)
    stored = yield from _scan(binding, prefix)
    created = [s.record.created_at for s in stored]
    children = {child_of(s.path, prefix) for s in stored} - {None}
    return _types.ScopeInfo(
        path=prefix,
        record_count=len(stored),
        categories=sorted({c for s in stored for c in s.record.categories}),
        oldest_record=min(created) if created else None,
        newest_record=max(created) if created else None,
        child_scopes=sorted(c for c in children if c is not None),
    )


def list_scopes(binding: Binding, parent: object) -> Plan[list[str]]:
    """The immediate child scopes of ``parent`` that hold records.

    Raises:
        InvalidInputError: a bad scope path.
    """
    prefix = _prefix(parent)
    stored = yield from _scan(binding, prefix)
    return sorted({c for c in (child_of(s.path, prefix) for s in stored) if c is not None})


def list_categories(binding: Binding, scope_prefix: object) -> Plan[dict[str, int]]:
    """How many records at or below ``scope_prefix`` carry each category.

    Raises:
        InvalidInputError: a bad prefix.
    """
    prefix = _prefix(scope_prefix)
    counts: dict[str, int] = {}
    for stored in (yield from _scan(binding, prefix)):
        for category in stored.record.categories:
            counts[category] = counts.get(category, 0) + 1
    return counts


def delete(
    binding: Binding,
    scope_prefix: object,
    categories: object,
    record_ids: object,
    older_than: object,
    metadata_filter: object,
) -> Plan[int]:
    """Delete the records that pass every given filter (an empty list or mapping is no
    filter; no filter at all deletes everything at or below the prefix); returns how
    many were deleted.

    Raises:
        InvalidInputError: a bad prefix, category or id list, ``older_than`` that is not
            a ``datetime``, or a filter that is not a mapping.
    """
    prefix = _prefix(scope_prefix)
    wanted = check_categories(categories)
    ids = _record_ids(record_ids)
    cutoff = _older_than(older_than)
    meta = _metadata_filter(metadata_filter)
    if not (wanted or ids or cutoff or meta):
        deleted = yield StoreCall(
            "forget_by_scope", (binding.scope,), {"tags": [scope_tag(binding, prefix)]}
        )
        return int(deleted)
    if ids:
        items = yield StoreCall("get_many", ([memory_id(binding, r) for r in ids],))
        candidates = yield from _owned(binding, [i for i in items if i is not None])
    else:
        candidates = yield from _scan(binding, prefix, include_suppressed=True)

    def passes(stored: Stored) -> bool:
        return matches(
            stored, prefix=prefix, categories=wanted, older_than=cutoff, metadata_filter=meta
        )

    doomed = [stored.memory_id for stored in candidates if passes(stored)]
    if not doomed:
        return 0

    def choose(items: list[MemoryItem]) -> list[str]:
        # Judged again on the records as they are deleted: one another client changed
        # since the read above (an update) is deleted only if it still passes.
        chosen = []
        for item in items:
            stored = stored_record(binding, item)
            if not isinstance(stored, str) and passes(stored):
                chosen.append(item.id)
        return chosen

    deleted = yield StoreCall("_forget_judged", (doomed, choose))
    return int(deleted)


def reset(binding: Binding, scope_prefix: object) -> Plan[None]:
    """Delete every record at or below ``scope_prefix`` (``None``: the whole binding).

    Raises:
        InvalidInputError: a bad prefix.
    """
    prefix = _prefix(scope_prefix)
    yield StoreCall("forget_by_scope", (binding.scope,), {"tags": [scope_tag(binding, prefix)]})
    return None


__all__ = [
    "CANDIDATES",
    "PAGE",
    "SIMILARITY_ONLY",
    "Dimension",
    "count",
    "delete",
    "get_record",
    "list_categories",
    "list_records",
    "list_scopes",
    "reset",
    "save",
    "scope_info",
    "search",
]
