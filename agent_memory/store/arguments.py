"""Argument checks and conversions of the memory store facades (pure; no I/O).

Shared by :class:`~agent_memory.store.memory_store.MemoryStore` and its generated
blocking twin, so both validate exactly alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agent_memory.backends.context import LiveConfig
from agent_memory.errors import InvalidInputError
from agent_memory.schema.types import MemoryItem, RecallWeights, Scope
from agent_memory.store.ops.consolidate import Selection
from agent_memory.store.ops.write import MemoryInput
from agent_memory.store.validation import check_importance, check_scope, check_tags, check_threshold


def validated_config(
    threshold: Any, weights: RecallWeights | None, half_life: float, cap: int | None
) -> LiveConfig:
    if isinstance(half_life, bool) or not isinstance(half_life, (int, float)) or not half_life > 0:
        raise InvalidInputError("half_life_seconds must be > 0", field="half_life_seconds")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise InvalidInputError(
            "max_items_per_scope must be an int >= 1 or None", field="max_items_per_scope"
        )
    if weights is not None and not isinstance(weights, RecallWeights):
        raise InvalidInputError("weights must be a RecallWeights", field="weights")
    return LiveConfig(
        threshold=check_threshold(threshold),
        weights=weights or RecallWeights(),
        half_life_seconds=float(half_life),
        max_items_per_scope=cap,
    )


def checked(value: Any, cls: type, field: str) -> Any:
    if value is not None and not isinstance(value, cls):
        raise InvalidInputError(f"{field} must be a {cls.__name__} or None", field=field)
    return value


def callable_or_none(value: Any, field: str) -> Any:
    if value is not None and not callable(value):
        raise InvalidInputError(f"{field} must be callable or None", field=field)
    return value


def positive_int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{field} must be an int >= 1", field=field)
    return value


def count_or_zero(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{field} must be an int >= 0", field=field)
    return value


def positive_number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 10**9:
        raise InvalidInputError(f"{field} must be a number > 0", field=field)
    return float(value)


def consolidation_args(
    mode: str,
    scope: Scope | None,
    tags: Sequence[str] | None,
    older_than_seconds: float | None,
    max_importance: float | None,
    summarize: Callable[[list[MemoryItem]], Any] | None,
    extract_facts: Callable[[list[MemoryItem]], Any] | None,
    importance: float | None,
    delete_sources: bool = True,
) -> tuple[Selection, Callable[[list[MemoryItem]], Any]]:
    """The checked arguments of ``consolidate``: its selection and callback.

    Raises:
        InvalidInputError: the first argument that is not what ``consolidate`` takes.
    """
    if mode not in ("summary", "facts"):
        raise InvalidInputError("mode must be 'summary' or 'facts'", field="mode")
    check_scope(scope)
    checked_tags = check_tags(tags)
    if scope is None and not checked_tags and older_than_seconds is None and max_importance is None:
        raise InvalidInputError(
            "consolidate needs at least one of scope, tags, older_than_seconds, max_importance",
            field="scope",
        )
    if older_than_seconds is not None and (
        isinstance(older_than_seconds, bool)
        or not isinstance(older_than_seconds, (int, float))
        or not 0 <= older_than_seconds < math.inf
    ):
        raise InvalidInputError(
            "older_than_seconds must be a finite number >= 0", field="older_than_seconds"
        )
    if max_importance is not None:
        check_importance(max_importance)
    if importance is not None:
        check_importance(importance)
    if not isinstance(delete_sources, bool):
        raise InvalidInputError("delete_sources must be True or False", field="delete_sources")
    callback = summarize if mode == "summary" else extract_facts
    name = "summarize" if mode == "summary" else "extract_facts"
    if callback is None or not callable(callback):
        raise InvalidInputError(f"mode={mode!r} needs a callable {name}", field=name)
    selection = Selection(scope, checked_tags, older_than_seconds, max_importance)
    return selection, callback


def memory_inputs(items: Iterable[MemoryInput | Mapping[str, Any]]) -> list[MemoryInput]:
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise InvalidInputError("items must be an iterable of memories", field="items")
    out = []
    for item in items:
        if isinstance(item, MemoryInput):
            out.append(item)
        elif isinstance(item, Mapping):
            try:
                out.append(MemoryInput(**item))
            except TypeError as exc:
                raise InvalidInputError(f"bad memory item: {exc}", field="items") from exc
        else:
            raise InvalidInputError("each item must be a MemoryInput or a mapping", field="items")
    return out
