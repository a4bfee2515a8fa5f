"""Model prices for cost accounting, in USD per one million tokens.

A default table of common OpenAI and Anthropic models ships as package data
(``default_prices.json``). A model name is looked up exactly, then without a provider
prefix (``openai/gpt-4o`` -> ``gpt-4o``), then without a date or ``-latest`` suffix
(``gpt-4o-2024-08-06`` -> ``gpt-4o``, ``claude-sonnet-4-20250514`` ->
``claude-sonnet-4``). Unknown models cost nothing (no saving is recorded).

Since prices are per million tokens, a price is also micro-dollars per token:
``cost_micros = input_tokens * input_price + output_tokens * output_price``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from agent_memory.cache.scripts import MAX_COST_MICROS
from agent_memory.errors import InvalidInputError

MAX_PRICE = 100_000
"""The highest price a table takes, in USD per one million tokens."""

_DATE_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """Price of one model in USD per one million tokens.

    Raises:
        InvalidInputError: a price is negative, over :data:`MAX_PRICE`, not finite or not
            a number.
    """

    input: float
    output: float

    def __post_init__(self) -> None:
        for label in ("input", "output"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidInputError(f"price {label} must be a number", field="prices")
            if not math.isfinite(value) or not 0 <= value <= MAX_PRICE:
                raise InvalidInputError(
                    f"price {label} must be in [0, {MAX_PRICE}] USD per 1M tokens, got {value!r}",
                    field="prices",
                )

    def cost_micros(self, input_tokens: int, output_tokens: int) -> int:
        """Cost of a call in micro-dollars (rounded to a whole micro-dollar; at most
        :data:`~agent_memory.cache.scripts.MAX_COST_MICROS` for token counts a
        :class:`~agent_memory.cache.llm.TokenUsage` takes)."""
        return round(input_tokens * self.input + output_tokens * self.output)


def counted_micros(value: Any) -> int | None:
    """An entry's stored ``costMicros`` as the lookup script counts it (pure): a whole
    number in [0, ``MAX_COST_MICROS``], else ``None`` (absent or damaged)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if 0 <= value <= MAX_COST_MICROS else None


def micros_of_usd(value: Any) -> int | None:
    """An entry's stored ``cost`` (USD) in whole micro-dollars (pure): ``None`` unless a
    finite number in [0, ``MAX_COST_MICROS``] micro-dollars."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        micros = float(value) * 1_000_000
    except OverflowError:  # an int beyond any float
        return None
    if not math.isfinite(micros) or not 0 <= micros <= MAX_COST_MICROS:
        return None
    return round(micros)


def _as_price(value: ModelPrice | Mapping[str, Any]) -> ModelPrice:
    if isinstance(value, ModelPrice):
        return value
    if isinstance(value, Mapping) and {"input", "output"} <= set(value):
        return ModelPrice(value["input"], value["output"])
    raise InvalidInputError(
        "a price must be a ModelPrice or a mapping with 'input' and 'output' (USD per 1M tokens)",
        field="prices",
    )


class PriceTable(Mapping[str, ModelPrice]):
    """An immutable model -> :class:`ModelPrice` table with forgiving lookup."""

    __slots__ = ("_prices",)

    def __init__(self, prices: Mapping[str, ModelPrice | Mapping[str, Any]] | None = None) -> None:
        """Build a table from ``{model: price}``.

        Raises:
            InvalidInputError: a model name is not a non-empty string or a price is invalid.
        """
        table: dict[str, ModelPrice] = {}
        for model, price in (prices or {}).items():
            if not isinstance(model, str) or not model:
                raise InvalidInputError("model names must be non-empty strings", field="prices")
            table[model] = _as_price(price)
        self._prices = table

    @classmethod
    def default(cls) -> PriceTable:
        """The table shipped with the package."""
        raw = resources.files("agent_memory.cache").joinpath("default_prices.json").read_text()
        return cls(json.loads(raw)["models"])

    def merged(self, overrides: Mapping[str, ModelPrice | Mapping[str, Any]]) -> PriceTable:
        """A new table: this one with ``overrides`` added or replacing entries."""
        return PriceTable({**self._prices, **overrides})

    def lookup(self, model: str) -> ModelPrice | None:
        """The price of ``model`` (exact, then without provider prefix, then date suffix)."""
        candidates = [model]
        if "/" in model:
            candidates.append(model.rsplit("/", 1)[1])
        candidates += [_DATE_SUFFIX.sub("", c) for c in list(candidates)]
        for candidate in candidates:
            price = self._prices.get(candidate)
            if price is not None:
                return price
        return None

    def __getitem__(self, model: str) -> ModelPrice:
        return self._prices[model]

    def __iter__(self) -> Iterator[str]:
        return iter(self._prices)

    def __len__(self) -> int:
        return len(self._prices)


def resolve_prices(
    prices: PriceTable | Mapping[str, ModelPrice | Mapping[str, Any]] | None,
) -> PriceTable:
    """``None`` -> the default table; a mapping -> the default table with it merged over;
    a :class:`PriceTable` -> used as is (pass ``PriceTable()`` to record no costs).

    Raises:
        InvalidInputError: a price is invalid.
    """
    if prices is None:
        return PriceTable.default()
    if isinstance(prices, PriceTable):
        return prices
    if not isinstance(prices, Mapping):
        raise InvalidInputError("prices must be a mapping or a PriceTable", field="prices")
    return PriceTable.default().merged(prices)
