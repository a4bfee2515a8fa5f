"""Pure tests of key building, canonical JSON, LLM parameter normalisation and prices."""

from __future__ import annotations

import fnmatch
import math
from typing import Any

import pytest

from agent_memory.cache.keys import (
    KeyLayout,
    canonical_json,
    digest,
    glob_escape,
    tool_segment,
    ttl_ms,
)
from agent_memory.cache.llm_params import EXCLUDED_PARAMS, key_params, request_digest
from agent_memory.cache.prices import ModelPrice, PriceTable, resolve_prices
from agent_memory.errors import InvalidInputError

BASE: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [{"role": "user", "content": "hello"}],
}

# Each variant changes exactly one output-affecting parameter of BASE (or adds one).
OUTPUT_VARIANTS: list[tuple[str, Any]] = [
    ("model", "gpt-4o-mini"),
    ("messages", [{"role": "user", "content": "hello!"}]),
    ("messages", [{"role": "system", "content": "hello"}]),
    ("messages", [{"role": "user", "content": [{"type": "text", "text": "hello", "x": 1}]}]),
    ("n", 2),
    ("presence_penalty", 0.5),
    ("frequency_penalty", 0.5),
    ("logit_bias", {"50256": -100}),
    ("max_completion_tokens", 10),
    ("max_tokens", 10),
    ("seed", 7),
    ("response_format", {"type": "json_object"}),
    ("stop", ["\n"]),
    ("tools", [{"type": "function", "function": {"name": "f", "parameters": {}}}]),
    ("tool_choice", "required"),
    ("temperature", 0.2),
    ("top_p", 0.9),
    ("top_k", 5),
    ("logprobs", True),
    ("top_logprobs", 3),
    ("reasoning_effort", "high"),
    ("parallel_tool_calls", False),
    ("system", "be brief"),
    ("extra_body", {"guided_json": {}}),
    ("some_future_param", 1),
]


def test_every_output_affecting_param_changes_the_key() -> None:
    base = request_digest(BASE)
    seen = {base}
    for name, value in OUTPUT_VARIANTS:
        variant = {**BASE, name: value}
        key = request_digest(variant)
        assert key != base, name
        seen.add(key)
    assert len(seen) == len(OUTPUT_VARIANTS) + 1


@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        ("temperature", 0.0, 0.7),
        ("n", 1, 2),
        ("seed", 1, 2),
        ("stop", ["a"], ["b"]),
        ("stop", ["a", "b"], ["b", "a"]),
        ("logit_bias", {"1": 1}, {"1": 2}),
        ("response_format", {"type": "text"}, {"type": "json_object"}),
        ("max_completion_tokens", 5, 6),
        ("tools", [{"name": "a"}, {"name": "b"}], [{"name": "b"}, {"name": "a"}]),
    ],
)
def test_values_of_one_param_never_collide(name: str, first: Any, second: Any) -> None:
    assert request_digest({**BASE, name: first}) != request_digest({**BASE, name: second})


@pytest.mark.parametrize("name", sorted(EXCLUDED_PARAMS))
def test_excluded_params_do_not_change_the_key(name: str) -> None:
    assert request_digest({**BASE, name: "anything"}) == request_digest(BASE)


def test_normalisations_keep_the_key() -> None:
    base = request_digest(BASE)
    block = {**BASE, "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]}
    assert request_digest(block) == base
    reordered = {"messages": BASE["messages"], "model": "gpt-4o"}
    assert request_digest(reordered) == base
    assert request_digest({**BASE, "temperature": None}) == base
    assert request_digest({**BASE, "temperature": 1}) == request_digest(
        {**BASE, "temperature": 1.0}
    )
    # gpt-4o's documented defaults: absent temperature / top_p mean 1 (as agent-cache keys it)
    assert request_digest({**BASE, "temperature": 1, "top_p": 1.0}) == base
    other = {"model": "mistral-large", "messages": BASE["messages"]}
    assert request_digest({**other, "temperature": 1}) != request_digest(other)  # not its default
    tuple_messages = {**BASE, "messages": ({"role": "user", "content": "hello"},)}
    assert request_digest(tuple_messages) == base
    system_block = {**BASE, "system": [{"type": "text", "text": "sys"}]}
    assert request_digest(system_block) == request_digest({**BASE, "system": "sys"})
    assert "stream" not in key_params({**BASE, "stream": True})


@pytest.mark.parametrize(
    "params",
    [
        {"messages": []},
        {"model": ""},
        {"model": 3},
        {**BASE, "temperature": math.nan},
        {**BASE, "logit_bias": {1: 2}},
        {**BASE, "response_format": object()},
        "not a mapping",
    ],
)
def test_invalid_params_raise(params: Any) -> None:
    with pytest.raises(InvalidInputError):
        request_digest(params)


def test_canonical_json_and_digest() -> None:
    assert canonical_json({"b": 1, "a": [1.0, 2.5]}) == '{"a":[1,2.5],"b":1}'
    assert canonical_json({"é": "ü"}) == '{"é":"ü"}'
    assert digest({"x": 1, "y": 2}) == digest({"y": 2, "x": 1})
    assert len(digest(None)) == 64
    with pytest.raises(InvalidInputError):
        canonical_json({"x": math.inf})
    with pytest.raises(InvalidInputError):
        canonical_json({"x": {1, 2}})


@pytest.mark.parametrize("tool", ["search", "web.search-v2", "a:b", "*", "a?b", "[x]", "\\", "é"])
def test_tool_segment_is_glob_safe(tool: str) -> None:
    segment = tool_segment(tool)
    assert not any(c in segment for c in "*?[]\\:{}")
    layout = KeyLayout("n")
    key = layout.tool(tool, "0" * 64)
    assert fnmatch.fnmatchcase(key, layout.tool_pattern(tool).replace("\\", ""))
    other = layout.tool(tool + "x", "0" * 64)
    assert not fnmatch.fnmatchcase(other, layout.tool_pattern(tool).replace("\\", ""))


def test_distinct_tools_get_distinct_segments() -> None:
    tools = ["a:b", "a_b", "a*b", "a?b", "A:b", "~" + "0" * 32]
    assert len({tool_segment(t) for t in tools}) == len(tools)


def test_glob_escape() -> None:
    assert glob_escape("a*b?c[d]e\\f") == "a\\*b\\?c\\[d\\]e\\\\f"


def test_ttl_ms() -> None:
    assert ttl_ms(None) is None
    assert ttl_ms(1.5) == 1500
    assert ttl_ms(0.0001) == 1
    for bad in (0, -1, math.inf, True, "3"):
        with pytest.raises(InvalidInputError):
            ttl_ms(bad)


def test_layout_validates_name() -> None:
    for bad in ("", 3, None, "x" * 300):
        with pytest.raises(InvalidInputError):
            KeyLayout(bad)  # type: ignore[arg-type]


def test_price_lookup_and_cost() -> None:
    table = PriceTable.default()
    assert table.lookup("gpt-4o") == ModelPrice(2.5, 10.0)
    assert table.lookup("openai/gpt-4o-2024-08-06") == ModelPrice(2.5, 10.0)
    assert table.lookup("claude-sonnet-4-20250514") == ModelPrice(3.0, 15.0)
    assert table.lookup("claude-3-5-sonnet-latest") == ModelPrice(3.0, 15.0)
    assert table.lookup("no-such-model") is None
    assert ModelPrice(2.5, 10.0).cost_micros(1000, 500) == 7500
    merged = resolve_prices({"mine": {"input": 1, "output": 2}, "gpt-4o": ModelPrice(0, 0)})
    assert merged.lookup("mine") == ModelPrice(1, 2)
    assert merged.lookup("gpt-4o") == ModelPrice(0, 0)
    assert merged.lookup("gpt-4o-mini") == ModelPrice(0.15, 0.6)
    assert len(resolve_prices(PriceTable())) == 0
    for bad in ({"m": {"input": -1, "output": 0}}, {"m": {"input": 1}}, {"": ModelPrice(1, 1)}):
        with pytest.raises(InvalidInputError):
            resolve_prices(bad)
