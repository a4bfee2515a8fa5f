"""Parse FT.SEARCH and FT.INFO replies of valkey-search and RediSearch, RESP2 and RESP3."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from agent_memory.core.replies import integer, pairs, text
from agent_memory.errors import OperationTimeoutError, ReplyParseError
from agent_memory.schema.layout import F_VECTOR


class SearchDocument(NamedTuple):
    """One document of a search reply: its key and the returned fields (raw values, in
    a dict built for this document alone). A named tuple: built for every match."""

    key: str
    fields: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SearchReply:
    total: int
    documents: tuple[SearchDocument, ...]


def _check_timeout(reply: Any) -> None:
    # valkey-search 1.0 answers a timeout with a simple string, not an error.
    if isinstance(reply, (str, bytes)) and text(reply).lower().startswith("request timed out"):
        raise OperationTimeoutError("FT.SEARCH timed out on the server")


class SearchEntry(NamedTuple):
    """One document of a search reply as received: its key and its fields' map reply
    (``None`` for a key-only entry), not decoded yet (see :func:`document`)."""

    key: Any
    fields: Any


def _map_shape_entries(reply: Mapping[Any, Any]) -> tuple[int, list[SearchEntry]]:
    top = pairs(reply)
    if "results" not in top:
        raise ReplyParseError(f"FT.SEARCH map reply without 'results' (keys: {sorted(top)})")
    results = top["results"] or []
    if not isinstance(results, Sequence):
        raise ReplyParseError("FT.SEARCH 'results' is not a list")
    entries = []
    for entry in results:
        item = pairs(entry)
        attributes = item.get("extra_attributes") or item.get("values") or None
        entries.append(SearchEntry(item.get("id"), attributes))
    return integer(top.get("total_results", len(entries))), entries


def _array_shape_entries(reply: Sequence[Any]) -> tuple[int, list[SearchEntry]]:
    if not reply:
        raise ReplyParseError("FT.SEARCH reply is an empty array")
    total = integer(reply[0])
    entries: list[SearchEntry] = []
    i, size = 1, len(reply)
    while i < size:
        following = reply[i + 1] if i + 1 < size else None
        if isinstance(following, (list, tuple, dict)):
            entries.append(SearchEntry(reply[i], following))
            i += 2
        else:
            entries.append(SearchEntry(reply[i], None))  # NOCONTENT-style entry: key only
            i += 1
    return total, entries


def search_entries(reply: Any) -> tuple[int, list[SearchEntry]]:
    """The total and the documents of an ``FT.SEARCH`` reply of either server in either
    protocol, with each document's key and field map as received: decoding them
    (:func:`document`) is the larger cost, which a caller may spread over several
    event-loop turns.

    Raises:
        OperationTimeoutError: valkey-search 1.0 reported a timeout as a simple string.
        ReplyParseError: the reply has no recognisable shape.
    """
    _check_timeout(reply)
    if isinstance(reply, Mapping):
        return _map_shape_entries(reply)
    if isinstance(reply, (list, tuple)):
        return _array_shape_entries(reply)
    raise ReplyParseError(f"unexpected FT.SEARCH reply type {type(reply).__name__}")


def document(entry: SearchEntry) -> SearchDocument:
    """A search entry decoded: its key as text and its fields as a fresh dict.

    Raises:
        ReplyParseError: the key or a field name is not text, or the map is malformed.
    """
    return SearchDocument(text(entry.key), pairs(entry.fields) if entry.fields else {})


def parse_search_reply(reply: Any) -> SearchReply:
    """Parse an ``FT.SEARCH`` reply of either server in either protocol.

    Raises:
        OperationTimeoutError: valkey-search 1.0 reported a timeout as a simple string.
        ReplyParseError: the reply has no recognisable shape.
    """
    total, entries = search_entries(reply)
    return SearchReply(total, tuple(map(document, entries)))


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """What the library needs from ``FT.INFO``."""

    num_docs: int
    dim: int | None
    metric: str | None
    indexing: bool
    failures: int
    progress: float | None = None  # share of the backfill done (0..1), when reported
    # the key prefixes the index covers, when the reply lists them
    prefixes: tuple[str, ...] | None = None
    # (attribute, type) of each attribute listed: ``("session", "TAG")``
    field_types: tuple[tuple[str, str], ...] = ()


def _flatten(value: Any) -> list[Any]:
    """Walk nested lists/maps of FT.INFO and yield a flat key/value stream."""
    out: list[Any] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            out.append(k)
            out.extend(_flatten(v) if isinstance(v, (list, tuple, Mapping)) else [v])
    elif isinstance(value, (list, tuple)):
        for v in value:
            out.extend(_flatten(v) if isinstance(v, (list, tuple, Mapping)) else [v])
    else:
        out.append(value)
    return out


def _lookup(stream: list[Any], *names: str) -> Any:
    wanted = {n.lower() for n in names}
    for i in range(len(stream) - 1):
        item = stream[i]
        if isinstance(item, (str, bytes)) and text(item).lower() in wanted:
            return stream[i + 1]
    return None


def _entry(reply: Any, name: str) -> Any:
    """The value of ``name`` in a flat key/value list or a map (``None``: absent)."""
    if isinstance(reply, Mapping):
        entries: list[tuple[Any, Any]] = list(reply.items())
    elif isinstance(reply, (list, tuple)):
        entries = list(zip(reply[::2], reply[1::2], strict=False))
    else:
        return None
    return next((v for k, v in entries if isinstance(k, (str, bytes)) and text(k) == name), None)


def _shown(value: str | bytes) -> str:
    """Text of a name in an FT.INFO reply; bytes that are not UTF-8 escaped (a name the
    library never writes, compared and shown, never used as a key)."""
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value


def _attributes(reply: Any) -> list[Any]:
    attributes = _entry(reply, "attributes")
    return list(attributes) if isinstance(attributes, (list, tuple)) else []


def _field_types(reply: Any) -> tuple[tuple[str, str], ...]:
    """(attribute, type) of each attribute an FT.INFO reply lists (both servers)."""
    found: list[tuple[str, str]] = []
    for attribute in _attributes(reply):
        flat = _flatten(attribute)
        name = _lookup(flat, "attribute")
        if not isinstance(name, (str, bytes)):
            name = _lookup(flat, "identifier")
        kind = _lookup(flat, "type")
        if isinstance(name, (str, bytes)) and isinstance(kind, (str, bytes)):
            found.append((_shown(name), _shown(kind).upper()))
    return tuple(found)


def _prefixes(reply: Any) -> tuple[str, ...] | None:
    """The key prefixes of an FT.INFO reply's ``index_definition`` (``None``: not
    listed)."""
    prefixes = _entry(_entry(reply, "index_definition"), "prefixes")
    if not isinstance(prefixes, (list, tuple)):
        return None
    return tuple(_shown(p) for p in prefixes if isinstance(p, (str, bytes)))


def _attribute_stream(reply: Any, field: str) -> list[Any] | None:
    """The flattened description of one attribute (by identifier or alias) among the
    ``attributes`` of an FT.INFO reply, if the reply lists it."""
    for attribute in _attributes(reply):
        flat = _flatten(attribute)
        names = {_lookup(flat, "identifier"), _lookup(flat, "attribute")}
        if any(isinstance(n, (str, bytes)) and text(n) == field for n in names):
            return flat
    return None


def parse_index_info(reply: Any, vector_field: str = F_VECTOR) -> IndexInfo:
    """Parse ``FT.INFO`` of valkey-search (``num_docs``, ``dimensions``, ``state``...) or
    RediSearch (``num_docs``, ``attributes``, ``indexing``...). The width and metric are
    those of ``vector_field`` (an index may have several vector fields, listed in any
    order: valkey-search sorts them by name, or not, after a restart), else of the first
    vector field listed.

    Raises:
        ReplyParseError: the reply has no document count.
    """
    stream = _flatten(reply)
    docs = _lookup(stream, "num_docs")
    if docs is None:
        raise ReplyParseError("FT.INFO reply has no num_docs")
    vector = _attribute_stream(reply, vector_field) or stream
    dim = _lookup(vector, "dimensions", "dim")
    metric = _lookup(vector, "distance_metric", "distance metric")
    indexing = _lookup(stream, "indexing", "backfill_in_progress")
    failures = _lookup(stream, "hash_indexing_failures")
    percent = _lookup(stream, "percent_indexed", "backfill_complete_percent")
    return IndexInfo(
        num_docs=integer(docs),
        dim=integer(dim) if dim is not None else None,
        metric=text(metric).upper() if metric is not None else None,
        indexing=bool(integer(indexing)) if indexing is not None else False,
        failures=integer(failures) if failures is not None else 0,
        progress=_share(percent),
        prefixes=_prefixes(reply),
        field_types=_field_types(reply),
    )


def _share(raw: Any) -> float | None:
    """RediSearch reports ``percent_indexed`` as a share (0..1), valkey-search
    ``backfill_complete_percent`` as a percentage: both as a share."""
    if raw is None:
        return None
    try:
        value = float(text(raw))
    except (ValueError, ReplyParseError):
        return None
    return value / 100.0 if value > 1.0 else value
