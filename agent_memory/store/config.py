"""Live configuration read from ``{name}:__mem_config`` (BetterDB field names).

Fields: ``recall.threshold`` (cosine distance, 0..2), ``recall.weights.similarity``,
``recall.weights.recency``, ``recall.weights.importance`` (each >= 0, not all 0),
``recall.halfLifeSeconds`` (> 0) and ``maxItemsPerScope`` (integer >= 1). A field absent
from the hash falls back to the constructor value. An invalid value is rejected with a
logged reason and the previous value stays.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agent_memory.core.effects import Operation, execute
from agent_memory.core.replies import pairs, text
from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.store.context import LiveConfig, StoreContext
from agent_memory.store.types import RecallWeights

logger = logging.getLogger("agent_memory.store")

_WEIGHT_FIELDS = {
    "recall.weights.similarity": "similarity",
    "recall.weights.recency": "recency",
    "recall.weights.importance": "importance",
}


def _number(raw: Any) -> float:
    value = float(text(raw))
    if not math.isfinite(value):
        raise ValueError("not finite")
    return value


def apply_config(
    raw: Mapping[str, Any], initial: LiveConfig, current: LiveConfig
) -> tuple[LiveConfig, list[str]]:
    """New live config from the hash fields, and the reasons values were rejected (pure)."""
    rejected: list[str] = []
    result = initial

    def reject(name: str, why: str) -> None:
        rejected.append(f"{name}={raw.get(name)!r}: {why}")

    if "recall.threshold" in raw:
        try:
            value = _number(raw["recall.threshold"])
            if not 0 <= value <= 2:
                raise ValueError("must be a cosine distance in [0, 2]")
            result = replace(result, threshold=value)
        except (ValueError, ReplyParseError) as exc:
            reject("recall.threshold", str(exc))
            result = replace(result, threshold=current.threshold)
    weights = {
        "similarity": initial.weights.similarity,
        "recency": initial.weights.recency,
        "importance": initial.weights.importance,
        "utility": initial.weights.utility,
        "labels": initial.weights.labels,
        "lexical": initial.weights.lexical,
    }
    weight_error = False
    for name, attr in _WEIGHT_FIELDS.items():
        if name in raw:
            try:
                value = _number(raw[name])
                if value < 0:
                    raise ValueError("must be >= 0")
                weights[attr] = value
            except (ValueError, ReplyParseError) as exc:
                reject(name, str(exc))
                weight_error = True
    try:
        result = replace(
            result,
            weights=current.weights if weight_error else RecallWeights(**weights),
        )
    except InvalidInputError as exc:
        rejected.append(f"recall.weights: {exc}")
        result = replace(result, weights=current.weights)
    if "recall.halfLifeSeconds" in raw:
        try:
            value = _number(raw["recall.halfLifeSeconds"])
            if value <= 0:
                raise ValueError("must be > 0")
            result = replace(result, half_life_seconds=value)
        except (ValueError, ReplyParseError) as exc:
            reject("recall.halfLifeSeconds", str(exc))
            result = replace(result, half_life_seconds=current.half_life_seconds)
    if "maxItemsPerScope" in raw:
        try:
            value = _number(raw["maxItemsPerScope"])
            if value < 1 or not float(value).is_integer():
                raise ValueError("must be an integer >= 1")
            result = replace(result, max_items_per_scope=int(value))
        except (ValueError, ReplyParseError) as exc:
            reject("maxItemsPerScope", str(exc))
            result = replace(result, max_items_per_scope=current.max_items_per_scope)
    return result, rejected


def refresh_config(ctx: StoreContext) -> Operation[LiveConfig]:
    """Re-read ``{name}:__mem_config`` now and apply it."""
    reply = yield from execute("HGETALL", ctx.keys.config)
    raw = {k: v for k, v in pairs(reply).items()}
    config, rejected = apply_config(raw, ctx.initial_config, ctx.config)
    for reason in rejected:
        logger.warning("store %s: rejected live config %s", ctx.keys.name, reason)
    ctx.count("config_rejections", len(rejected))
    ctx.config = config
    return config
