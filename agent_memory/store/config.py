"""Live configuration read from ``{name}:__mem_config`` (BetterDB field names).

Fields: ``recall.threshold`` (cosine distance, 0..2), ``recall.weights.similarity``,
``recall.weights.recency``, ``recall.weights.importance`` (each >= 0, not all 0),
``recall.halfLifeSeconds`` (> 0) and ``maxItemsPerScope`` (integer >= 1). A field absent
from the hash falls back to the constructor value. An invalid value is rejected with a
logged reason and the previous value stays.

``ensure_index`` publishes the store's effective values into the fields that are not set
(so the BetterDB Monitor shows them) and records what it published in the field
``agent_memory.published``; a published value is not an operator's override, so a
refresh ignores a field that still holds it (another process keeps its own
configuration), and applies it once an operator changed it. Nothing an operator set is
ever overwritten.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agent_memory.backends.context import LiveConfig, StoreContext
from agent_memory.core.effects import Operation, execute
from agent_memory.core.replies import pairs, text
from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.schema.scripts import PUBLISH as PUBLISH_CONFIG
from agent_memory.schema.types import RecallWeights

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


PUBLISHED_FIELD = "agent_memory.published"


def published_fields(config: LiveConfig) -> list[str]:
    """``field, value`` pairs of the effective configuration (BetterDB field names)."""
    values = [
        ("recall.threshold", config.threshold),
        ("recall.weights.similarity", config.weights.similarity),
        ("recall.weights.recency", config.weights.recency),
        ("recall.weights.importance", config.weights.importance),
        ("recall.halfLifeSeconds", config.half_life_seconds),
    ]
    out = [x for name, value in values for x in (name, repr(float(value)))]
    if config.max_items_per_scope is not None:
        out += ["maxItemsPerScope", str(config.max_items_per_scope)]
    return out


def publish_config(ctx: StoreContext) -> Operation[None]:
    """Fill the unset fields of ``{name}:__mem_config`` with this store's values."""
    yield from execute(
        "EVAL", PUBLISH_CONFIG, "1", ctx.keys.config, PUBLISHED_FIELD,
        *published_fields(ctx.settings.initial_config),
    )  # fmt: skip


def overrides(raw: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The fields an operator set: those not holding the value the library published;
    and what is wrong with the published values, if they cannot be read (every field
    then counts as set: the values are checked as the operator's)."""
    damage = None
    try:
        published = json.loads(text(raw.get(PUBLISHED_FIELD) or "{}"))
    except (ValueError, ReplyParseError) as exc:
        published, damage = {}, f"not JSON ({exc})"
    if not isinstance(published, dict):
        published, damage = {}, f"a JSON {type(published).__name__}, not an object"
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name == PUBLISHED_FIELD:
            continue
        try:
            if name in published and text(value) == str(published[name]):
                continue  # a library default, not an override
        except ReplyParseError:
            pass  # unreadable: let apply_config reject it with its reason
        out[name] = value
    return out, damage


def refresh_config(ctx: StoreContext) -> Operation[LiveConfig]:
    """Re-read ``{name}:__mem_config`` now and apply the operator's overrides."""
    reply = yield from execute("HGETALL", ctx.keys.config)
    raw, damage = overrides(pairs(reply))
    if damage is not None:
        logger.warning(
            "store %s: the library's published config (%s) is unreadable: %s",
            ctx.keys.name, PUBLISHED_FIELD, damage,
        )  # fmt: skip
        ctx.count("corrupt_records")
    config, rejected = apply_config(raw, ctx.settings.initial_config, ctx.config)
    for reason in rejected:
        logger.warning("store %s: rejected live config %s", ctx.keys.name, reason)
    ctx.count("config_rejections", len(rejected))
    ctx.config = config
    return config
