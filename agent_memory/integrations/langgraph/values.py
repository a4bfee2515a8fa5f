"""LangGraph store helpers without the ``langgraph`` dependency: namespace checks and
tags, text cleaning, and the value filters of ``search(filter=...)``."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from agent_memory.errors import InvalidInputError

#: Namespaces deeper than this are refused (one tag per level; 64 tags per memory).
MAX_DEPTH = 60
#: Longest text embedded for an item (UTF-8 bytes); the value itself is kept whole.
MAX_CONTENT_BYTES = 16 * 1024
#: Objects and arrays a value (or a filter) may nest: every JSON library reads that
#: back (Python's within its recursion limit, serde_json's 128, Ruby's 100).
MAX_VALUE_DEPTH = 100
#: The operators of ``search(filter=...)``, as LangGraph's ``InMemoryStore`` has them.
FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def digest(value: object) -> str:
    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def prefix_tag(prefix: Sequence[str]) -> str:
    """The tag every item whose namespace starts with ``prefix`` carries."""
    return f"langgraph:ns:{digest(list(prefix))[:32]}"


def check_namespace(namespace: tuple[str, ...], *, what: str, allow_empty: bool) -> None:
    if not isinstance(namespace, tuple):
        raise InvalidInputError(f"{what} must be a tuple of strings", field="namespace")
    if not namespace and not allow_empty:
        raise InvalidInputError(f"{what} must not be empty", field="namespace")
    if len(namespace) > MAX_DEPTH:
        raise InvalidInputError(f"{what} is deeper than {MAX_DEPTH} levels", field="namespace")
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise InvalidInputError(
                f"{what} labels must be non-empty strings, got {label!r}", field="namespace"
            )
        check_unicode(label, what=f"{what} label", field="namespace")


def check_unicode(text: str, *, what: str, field: str) -> None:
    """Refuse a lone surrogate: the item's id digests the text as UTF-8 and its metadata
    stores it as JSON text, neither of which can hold one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} is not valid Unicode (lone surrogate at {exc.start}): {text!r:.80}",
            field=field,
        ) from None


def to_datetime(epoch_seconds: float) -> datetime:
    return datetime.fromtimestamp(epoch_seconds, tz=timezone.utc)


def clean_text(text: str, max_bytes: int = MAX_CONTENT_BYTES) -> str:
    """``text`` without control characters or lone surrogates, cut at ``max_bytes``."""
    text = _CONTROL.sub(" ", text)
    data = text.encode("utf-8", "replace")
    return data[:max_bytes].decode("utf-8", "ignore")


def _compare(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, Mapping):
        if any(str(k).startswith("$") for k in filter_value):
            return all(_operator(item_value, k, v) for k, v in filter_value.items())
        if not isinstance(item_value, Mapping):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(i, f) for i, f in zip(item_value, filter_value, strict=True))
        )
    return bool(item_value == filter_value)


def fits_float(value: int) -> bool:
    """Whether an int converts to a float (a ``10**400`` does not)."""
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _number(value: Any) -> float | None:
    # None (no match) for what is not a number, including what another writer may have
    # stored: an int beyond the float range
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        result = float(value)
    except (ValueError, OverflowError):
        return None
    return result if not math.isnan(result) else None


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator not in FILTER_OPERATORS:
        raise InvalidInputError(f"unsupported filter operator {operator!r}", field="filter")
    left, right = _number(value), _number(operand)
    if left is None or right is None:
        return False
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def matches_filter(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether an item value passes a LangGraph search filter.

    Raises:
        InvalidInputError: an operator other than ``$eq $ne $gt $gte $lt $lte``.
    """
    return not flt or all(_compare(value.get(k), v) for k, v in flt.items())
