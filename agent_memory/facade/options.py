"""Checks of ``AgentMemory``'s arguments (pure; shared by the asyncio facade and its
generated blocking twin)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

from agent_memory.errors import InvalidInputError

_SET_BY_THE_FACADE = frozenset({"self", "client", "name", "embed", "registry"})


def tier_options(value: object, field: str, target: Callable[..., Any]) -> dict[str, Any]:
    """The keyword arguments ``value`` gives ``target`` (a tier's or the store's
    constructor), each one it takes; what the facade sets itself is not an option.

    Raises:
        InvalidInputError: ``value`` is not a mapping, or names an option ``target``
            does not take.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"{field} must be a mapping of keyword arguments, got {type(value).__name__}",
            field=field,
        )
    parameters = inspect.signature(target).parameters.values()
    taken = {
        p.name
        for p in parameters
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in _SET_BY_THE_FACADE
    }
    unknown = sorted(str(k) for k in value if k not in taken)
    if unknown:
        raise InvalidInputError(
            f"{field} takes no option {', '.join(map(repr, unknown))} "
            f"(it takes {', '.join(sorted(taken))})",
            field=field,
        )
    return dict(value)


def cache_options(value: object) -> dict[str, object]:
    """The ``cache`` argument: per-tier options of the ``llm``, ``tool`` and ``session``
    tiers (checked against each tier by :func:`tier_options`).

    Raises:
        InvalidInputError: not a mapping, or an unknown tier.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"cache must be a mapping of tier options, got {type(value).__name__}",
            field="cache",
        )
    unknown = sorted(str(k) for k in value if k not in ("llm", "tool", "session"))
    if unknown:
        raise InvalidInputError(f"unknown cache tiers {unknown}", field="cache")
    return dict(value)


def check_flag(value: object, field: str) -> bool:
    """``value`` as a flag.

    Raises:
        InvalidInputError: not ``True`` or ``False``.
    """
    if not isinstance(value, bool):
        raise InvalidInputError(f"{field} must be True or False", field=field)
    return value


def check_interval(value: object, field: str, *, maximum: float = math.inf) -> float:
    """``value`` as a finite number of seconds > 0 and <= ``maximum``.

    Raises:
        InvalidInputError: anything else.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{field} must be a finite number of seconds > 0", field=field)
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond any float
        seconds = math.inf
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidInputError(f"{field} must be a finite number of seconds > 0", field=field)
    if seconds > maximum:
        raise InvalidInputError(f"{field} must be at most {maximum:g} seconds", field=field)
    return seconds
