"""Checks of the LangGraph store's arguments, run on every operation of a batch before
any of them touches the store: a refused operation writes (and deletes) nothing (pure;
raises :class:`~agent_memory.errors.InvalidInputError`)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.integrations._optional import require

require("langgraph.store.base", extra="langgraph", package="langgraph")

from langgraph.store.base import (  # noqa: E402 - after the check naming the extra
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
)

from agent_memory.core.checks import MAX_TTL_SECONDS, check_ttl_seconds  # noqa: E402
from agent_memory.integrations.langgraph.values import (  # noqa: E402
    FILTER_OPERATORS,
    MAX_VALUE_DEPTH,
    check_namespace,
    check_unicode,
    fits_float,
)
from agent_memory.store.validation import check_importance  # noqa: E402


def check_count(value: object, *, field: str) -> int:
    """A limit or an offset: an ``int`` >= 0 (not a bool, a float or a string)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{field} must be an int >= 0, got {value!r}", field=field)
    return value


def ttl_seconds(minutes: object) -> float | None:
    """A LangGraph TTL (minutes, or ``None`` for none) as the store's seconds, within the
    library's TTL bound (``check_ttl_seconds``: at most ten years)."""
    if minutes is None:
        return None
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
        raise InvalidInputError(
            f"ttl must be a number of minutes or None, got {type(minutes).__name__}", field="ttl"
        )
    try:
        return check_ttl_seconds(minutes * 60, field="ttl")
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"ttl must be > 0 and at most {MAX_TTL_SECONDS // 60} minutes, got {minutes!r:.40}",
            field="ttl",
        ) from exc


def _check_json(value: object, path: str, field: str, depth: int = 0) -> None:
    # JSON would turn a key 1 into "1" and a tuple into a list silently; keys must be
    # text so that the value reads back as it was written. The nesting and the size of
    # ints are bounded so that every JSON library (and Python's, within its recursion
    # and int-digit limits) reads the value back, and a filter compares it as a number.
    if isinstance(value, (Mapping, list, tuple)) and depth >= MAX_VALUE_DEPTH:
        raise InvalidInputError(
            f"{field} nests more than {MAX_VALUE_DEPTH} objects or arrays (at {path:.200})",
            field=field,
        )
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(
                    f"{field} keys must be strings, got {key!r:.40} at {path:.200}", field=field
                )
            _check_json(inner, f"{path}.{key}", field, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, inner in enumerate(value):
            _check_json(inner, f"{path}[{i}]", field, depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"{field} holds {value} at {path:.200} (not JSON)", field=field)
    elif isinstance(value, int) and not isinstance(value, bool) and not fits_float(value):
        raise InvalidInputError(
            f"{field} holds an int beyond the float range at {path:.200} "
            f"(at most {sys.float_info.max:.3g} in magnitude)",
            field=field,
        )
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise InvalidInputError(
            f"{field} holds a {type(value).__name__} at {path:.200} (not JSON)", field=field
        )


def check_value(value: object) -> dict[str, Any]:
    """A LangGraph item value: a JSON object (mapping with string keys, JSON values,
    nesting at most :data:`MAX_VALUE_DEPTH` objects or arrays, ints within the float
    range)."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"a LangGraph value must be a mapping, got {type(value).__name__}", field="value"
        )
    _check_json(value, "$", "value")
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            "value holds a string that is not valid Unicode", field="value"
        ) from exc
    return dict(value)


def check_index(index: object) -> tuple[str, ...] | None:
    """``put(index=...)``: ``None`` (the store's fields), ``False`` (unindexed) or a list
    of paths. A bare string is refused, not read as one path per character (LangGraph's
    ``InMemoryStore`` does split it)."""
    if index is None:
        return None
    if index is False:
        return ()
    if isinstance(index, str):
        raise InvalidInputError(
            f"index must be a list of paths, False or None; got the string {index!r} "
            f"(write [{index!r}])",
            field="index",
        )
    if not isinstance(index, (list, tuple)) or not all(isinstance(p, str) and p for p in index):
        raise InvalidInputError(
            f"index must be a list of non-empty paths, False or None; got {index!r}",
            field="index",
        )
    return tuple(index)


def check_filter(flt: object) -> Mapping[str, Any] | None:
    """A search filter: ``None`` or a mapping of value fields to conditions, each
    operator one of ``$eq $ne $gt $gte $lt $lte`` and each operand a JSON value as a
    stored value is (:func:`check_value`'s rules: a ``10**400`` or a value nested too
    deeply is refused, not compared)."""
    if flt is None:
        return None
    if not isinstance(flt, Mapping) or not all(isinstance(k, str) for k in flt):
        raise InvalidInputError(
            f"filter must be a mapping of field names to conditions, got {flt!r:.60}",
            field="filter",
        )
    for key, condition in flt.items():
        _check_condition(condition, f"$.{key}", 1)
    return flt or None


def _check_condition(condition: object, path: str, depth: int) -> None:
    if not isinstance(condition, Mapping):
        _check_json(condition, path, "filter", depth)
        return
    if depth >= MAX_VALUE_DEPTH:
        raise InvalidInputError(
            f"filter nests more than {MAX_VALUE_DEPTH} objects or arrays (at {path:.200})",
            field="filter",
        )
    if any(isinstance(key, str) and key.startswith("$") for key in condition) and not all(
        isinstance(key, str) and key.startswith("$") for key in condition
    ):
        # The matcher reads a mapping with an operator as operators only (as LangGraph's
        # own stores do): a field name beside them could never match.
        raise InvalidInputError(
            f"a filter condition mixes operators and field names at {path:.200}", field="filter"
        )
    for key, inner in condition.items():
        if not isinstance(key, str):
            raise InvalidInputError(
                f"filter keys must be strings, got {key!r:.40} at {path:.200}", field="filter"
            )
        if key.startswith("$"):
            if key not in FILTER_OPERATORS:
                raise InvalidInputError(f"unsupported filter operator {key!r}", field="filter")
            _check_json(inner, f"{path}.{key}", "filter", depth + 1)
        else:
            _check_condition(inner, f"{path}.{key}", depth + 1)


def check_op(op: Op) -> None:
    """Every argument of one operation (the namespace, key, value, TTL, index, filter,
    limit, offset, depth...)."""
    if isinstance(op, PutOp):
        check_namespace(op.namespace, what="namespace", allow_empty=False)
        _check_key(op.key)
        if op.value is not None:
            check_value(op.value)
            ttl_seconds(op.ttl)
            check_index(op.index)
    elif isinstance(op, GetOp):
        check_namespace(op.namespace, what="namespace", allow_empty=True)
        _check_key(op.key)
    elif isinstance(op, SearchOp):
        check_namespace(op.namespace_prefix, what="namespace prefix", allow_empty=True)
        if op.query is not None and not isinstance(op.query, str):
            raise InvalidInputError("query must be a string or None", field="query")
        check_filter(op.filter)
        check_count(op.limit, field="limit")
        check_count(op.offset, field="offset")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInputError(
                    f"unsupported match type {condition.match_type!r}", field="match_conditions"
                )
            check_namespace(tuple(condition.path), what="namespace path", allow_empty=True)
        if op.max_depth is not None and check_count(op.max_depth, field="max_depth") == 0:
            raise InvalidInputError("max_depth must be >= 1 or None", field="max_depth")
        check_count(op.limit, field="limit")
        check_count(op.offset, field="offset")
    else:
        raise InvalidInputError(f"unknown operation {type(op).__name__}", field="ops")


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise InvalidInputError(f"key must be a string, got {type(key).__name__}", field="key")
    check_unicode(key, what="key", field="key")


def check_config(ttl: object, importance: object) -> None:
    """The store's ``ttl`` (a LangGraph ``TTLConfig``) and ``importance``, checked when it
    is built rather than at every put."""
    check_importance(importance)
    if ttl is None:
        return
    if not isinstance(ttl, Mapping):
        raise InvalidInputError("ttl must be a TTLConfig mapping or None", field="ttl")
    try:
        ttl_seconds(ttl.get("default_ttl"))
    except InvalidInputError as exc:
        raise InvalidInputError(f"ttl['default_ttl']: {exc}", field="ttl") from exc
    refresh = ttl.get("refresh_on_read", True)
    if not isinstance(refresh, bool):
        raise InvalidInputError(
            f"ttl['refresh_on_read'] must be a bool, got {refresh!r}", field="ttl"
        )


__all__ = [
    "check_config",
    "check_count",
    "check_filter",
    "check_index",
    "check_op",
    "check_value",
    "ttl_seconds",
]
