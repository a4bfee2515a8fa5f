"""Learned usefulness and forgetting (pure functions; time from the store's clock).

* An eval outcome ``complete(selection, score)`` is one observation: the centred score
  ``score - 0.5`` is spread over the selection's ``n`` memories with weight ``1/n``
  each, so a memory's aggregates are ``eval_sum`` and ``eval_weight``.
* ``eval_mean = 2 * eval_sum / (eval_weight + PRIOR_WEIGHT)`` in [-1, 1]: the prior
  shrinks a memory seen in few evaluations towards neutral (conservative).
* ``utility = 0.6 * manual + 0.4 * eval_mean`` when a manual value is set (manual
  feedback is stronger), else ``eval_mean``; missing signals are neutral (0).
* Forgetting: ``retention = exp(-age / effective_half_life)`` with age counted from the
  last positive reinforcement; importance and utility stretch or shrink the half-life
  within ``[min_half_life, max_half_life]``; positive manual feedback protects a memory
  (retention 1), negative feedback shortens its half-life.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.errors import InvalidInputError

PRIOR_WEIGHT = 1.0
MANUAL_SHARE = 0.6
MANUAL_LOW, MANUAL_HIGH = -1.0, 1.0
"""The range of the manual usefulness ``feedback()`` takes."""
MIN_CONTEXT_WEIGHT = 0.5
MIN_HALF_LIFE_SHARE = 1 / 30  # default Forgetting.min_half_life / half_life_seconds
MAX_HALF_LIFE_SHARE = 365 / 30  # default Forgetting.max_half_life / half_life_seconds


@dataclass(frozen=True, slots=True)
class Forgetting:
    """Decay of memories that are not reinforced.

    Attributes:
        half_life_seconds: base half-life-like time constant of retention.
        min_half_life: shortest effective time constant (seconds); by default
            ``half_life_seconds / 30`` (one day for the default 30 days).
        max_half_life: longest effective time constant (seconds); by default
            ``half_life_seconds * 365 / 30`` (one year for the default 30 days).
        retention_threshold: memories whose retention falls below this stop appearing
            in recall (they stay inspectable until :meth:`MemoryStore.prune`).

    The bounds default relative to the half-life, so any half-life alone is a valid
    policy; bounds given explicitly must enclose it.

    Raises:
        InvalidInputError: a time or threshold that is not a number (text, a bool,
            ``None`` where a number is required) or not finite (an int beyond any
            float included), a non-positive time, bounds that do not enclose the
            half-life, or a threshold outside [0, 1).
    """

    half_life_seconds: float = 30 * 86400.0
    min_half_life: float | None = None
    max_half_life: float | None = None
    retention_threshold: float = 0.05

    def __post_init__(self) -> None:
        for name in ("half_life_seconds", "min_half_life", "max_half_life", "retention_threshold"):
            value = getattr(self, name)
            if value is not None or name in ("half_life_seconds", "retention_threshold"):
                object.__setattr__(self, name, _policy_number(value, name))
        half = self.half_life_seconds
        if not half > 0:
            raise InvalidInputError(
                "forgetting half-lives must be finite and > 0", field="forgetting"
            )
        if self.min_half_life is None:
            object.__setattr__(self, "min_half_life", half * MIN_HALF_LIFE_SHARE)
        if self.max_half_life is None:
            object.__setattr__(self, "max_half_life", half * MAX_HALF_LIFE_SHARE)
        values = (half, self.min_half_life, self.max_half_life)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in values):
            raise InvalidInputError(
                "forgetting half-lives must be finite and > 0", field="forgetting"
            )
        if not self.shortest <= half <= self.longest:
            raise InvalidInputError(
                "need min_half_life <= half_life_seconds <= max_half_life", field="forgetting"
            )
        if not 0 <= self.retention_threshold < 1:
            raise InvalidInputError("retention_threshold must be in [0, 1)", field="forgetting")

    @property
    def shortest(self) -> float:
        """The effective ``min_half_life`` (seconds)."""
        return float(self.min_half_life or self.half_life_seconds * MIN_HALF_LIFE_SHARE)

    @property
    def longest(self) -> float:
        """The effective ``max_half_life`` (seconds)."""
        return float(self.max_half_life or self.half_life_seconds * MAX_HALF_LIFE_SHARE)


def _policy_number(value: object, name: str) -> float:
    """A :class:`Forgetting` number as a float: an int or a float (not a bool, not text)
    that is finite as a float (an int beyond any float is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(
            f"forgetting {name} must be a number, got {type(value).__name__}", field="forgetting"
        )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InvalidInputError(f"forgetting {name} must be finite", field="forgetting")
    return number


Contexts = Mapping[str, tuple[float, float, int]]
"""Per-context aggregates of a memory: ``{context digest: (sum, weight, updated_ms)}``."""


@dataclass(frozen=True, slots=True)
class UtilityState:
    """The aggregates stored with a memory."""

    eval_sum: float = 0.0
    eval_weight: float = 0.0
    manual: float | None = None
    contexts: Contexts | None = None
    last_reinforced_at: int | None = None


def eval_mean(total: float, weight: float) -> float:
    """The prior-shrunk mean of the aggregates; ``weight`` is never negative (see
    :func:`impossible`), so the divisor is at least the prior."""
    return max(-1.0, min(1.0, 2.0 * total / (weight + PRIOR_WEIGHT)))


def impossible(state: UtilityState) -> str | None:
    """What in ``state`` no writer makes and :func:`utility` cannot weigh (``None``:
    nothing). Every evaluation adds a positive weight, so a negative ``eval_weight`` is
    damage: -1 would divide by zero and any other negative one turn or blow up the mean.
    An infinite aggregate is damage too (the server never adds up to one): infinity
    over infinity is NaN, which the clamp of :func:`eval_mean` turns into the best
    utility there is, and an infinite sum over a finite weight saturates it."""
    for name, value in (("eval_sum", state.eval_sum), ("eval_weight", state.eval_weight)):
        if not math.isfinite(value):
            return f"{name} {value!r} is not finite"
    if state.eval_weight < 0:
        return f"eval_weight {state.eval_weight!r} is negative"
    return None


def utility(state: UtilityState, context: str | None = None) -> float:
    """Blend of the eval mean (per context when one with enough weight matches) and the
    manual value, in [-1, 1]; 0 when nothing is known."""
    total, weight = state.eval_sum, state.eval_weight
    if context is not None and state.contexts and context in state.contexts:
        c_sum, c_weight, _ = state.contexts[context]
        if c_weight >= MIN_CONTEXT_WEIGHT:
            total, weight = c_sum, c_weight
    evaluated = eval_mean(total, weight)
    if state.manual is None:
        return evaluated
    return max(-1.0, min(1.0, MANUAL_SHARE * state.manual + (1 - MANUAL_SHARE) * evaluated))


def retention(
    state: UtilityState,
    *,
    importance: float,
    created_at: int,
    now_ms: int,
    forgetting: Forgetting | None,
) -> float:
    """How well a memory is retained, 1 (fresh or protected) to 0; 1 without forgetting."""
    if forgetting is None:
        return 1.0
    if state.manual is not None and state.manual > 0:
        return 1.0
    since = max(created_at, state.last_reinforced_at or 0)
    age = max(0.0, (now_ms - since) / 1000.0)
    stretch = (1.0 + importance) * 2.0 ** utility(state)
    if state.manual is not None and state.manual < 0:
        stretch *= 1.0 + state.manual  # -1 collapses to the minimum half-life
    effective = min(
        forgetting.longest,
        max(forgetting.shortest, forgetting.half_life_seconds * stretch),
    )
    return math.exp(-age / effective)


def parse_contexts(raw: str | None) -> tuple[dict[str, tuple[float, float, int]], str | None]:
    """The per-context aggregates JSON (``{digest: [sum, weight, updated_ms]}``) and what
    is wrong with it (``None``: nothing). As the learning script reads it, an entry that is
    not three finite numbers is left out and a text that is not a JSON object reads as no
    entries; the caller reports the damage, which the next evaluation repairs."""
    if raw is None:
        return {}, None
    try:
        data: Any = json.loads(raw)
    except ValueError as exc:
        return {}, f"not JSON ({exc})"
    except RecursionError:
        return {}, "JSON nested too deeply"
    if data == []:
        return {}, None  # Lua's empty table: the script reads it as no entries too
    if not isinstance(data, dict):
        return {}, f"a JSON {type(data).__name__}, not an object"
    out: dict[str, tuple[float, float, int]] = {}
    for key, value in data.items():
        if is_context_entry(value):
            out[key] = (float(value[0]), float(value[1]), int(value[2]))
    dropped = len(data) - len(out)
    if dropped:
        return out, f"{dropped} of its {len(data)} entries are not [sum, weight, updated_ms]"
    return out, None


def is_context_entry(value: Any) -> bool:
    """Whether a decoded ``utility_ctx`` value is an entry the learning script keeps:
    a list starting with three finite numbers (``[sum, weight, updated_ms]``)."""
    return isinstance(value, list) and len(value) >= 3 and all(map(_finite, value[:3]))


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
