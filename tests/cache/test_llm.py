"""LLM response cache against real servers (every kind, every client flavour)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.cache import (
    LlmCache,
    PriceTable,
    SyncLlmCache,
    SyncToolCache,
    TokenUsage,
    ToolCache,
)
from agent_memory.errors import InvalidInputError
from tests.cache.conftest import Env, Tier

PARAMS: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [{"role": "user", "content": "What is Valkey?"}],
    "temperature": 0,
}


def llm(env: Env, **kwargs: Any) -> Tier:
    return env.make(LlmCache, SyncLlmCache, **kwargs)


async def test_miss_store_hit(env: Env) -> None:
    cache = llm(env, clock=lambda: 1_700_000_000.0)
    miss = await cache.check(PARAMS)
    assert not miss.hit and miss.response is None and miss.model == "gpt-4o"
    key = await cache.store(PARAMS, "A key-value store.", tokens={"input": 10, "output": 5})
    assert key == miss.key == f"{env.name}:llm:{key.rsplit(':', 1)[1]}"
    hit = await cache.check({**PARAMS, "stream": True, "user": "u1"})
    assert hit.hit and hit.response == "A key-value store." and hit.key == key
    assert hit.tokens == TokenUsage(10, 5)
    assert hit.stored_at == 1_700_000_000.0
    entry = json.loads(env.raw.get(key))
    assert entry["model"] == "gpt-4o" and entry["tokens"] == {"input": 10, "output": 5}
    assert entry["storedAt"] == 1_700_000_000_000


async def test_single_text_block_shares_the_entry(env: Env) -> None:
    cache = llm(env)
    await cache.store(PARAMS, "answer")
    blocks = {
        **PARAMS,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "What is Valkey?"}]}],
    }
    assert (await cache.check(blocks)).hit


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("tool_choice", "toolChoice"),
        ("response_format", "responseFormat"),
        ("reasoning_effort", "reasoningEffort"),
    ],
)
async def test_a_parameter_set_to_none_is_absent_whatever_its_spelling(
    env: Env, ours: str, theirs: str
) -> None:
    """The names agent-cache hashes in camelCase too: ``toolChoice=None`` next to
    ``tool_choice`` means "default", as an absent ``toolChoice`` does."""
    cache = llm(env)
    params = {**PARAMS, ours: {"type": "auto"}}
    key = await cache.store(params, "answer")
    found = await cache.check({**params, theirs: None})
    assert found.hit and found.key == key
    assert (await cache.check({**PARAMS, theirs: {"type": "auto"}, ours: None})).key == key


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n", 3),
        ("presence_penalty", 1.0),
        ("frequency_penalty", 1.0),
        ("logit_bias", {"1": 5}),
        ("max_completion_tokens", 7),
        ("seed", 42),
        ("response_format", {"type": "json_object"}),
        ("stop", ["."]),
        ("tools", [{"type": "function", "function": {"name": "f"}}]),
        ("temperature", 0.9),
        ("top_p", 0.5),
    ],
)
async def test_output_params_never_share_an_entry(env: Env, name: str, value: Any) -> None:
    cache = llm(env)
    await cache.store(PARAMS, "base answer")
    variant = {**PARAMS, name: value}
    assert not (await cache.check(variant)).hit
    await cache.store(variant, "variant answer")
    assert (await cache.check(PARAMS)).response == "base answer"
    assert (await cache.check(variant)).response == "variant answer"


async def test_structured_response_round_trips(env: Env) -> None:
    cache = llm(env)
    response = {"choices": [{"message": {"content": "hé", "tool_calls": []}}], "n": 1.5}
    await cache.store(PARAMS, response)
    assert (await cache.check(PARAMS)).response == response


async def test_ttl(env: Env) -> None:
    cache = llm(env, ttl=100)
    key = await cache.store(PARAMS, "x")
    assert 99_000 < env.raw.pttl(key) <= 100_000
    key = await cache.store(PARAMS, "x", ttl=2.5)
    assert 2_000 < env.raw.pttl(key) <= 2_500
    forever = llm(env)
    key = await forever.store(PARAMS, "x")
    assert env.raw.pttl(key) == -1


async def test_invalidate_by_model_and_clear(env: Env) -> None:
    cache = llm(env)
    for i in range(5):
        await cache.store({**PARAMS, "seed": i}, f"a{i}")
        await cache.store({**PARAMS, "model": "claude-haiku-4-5", "seed": i}, f"c{i}")
    other = llm(env, name=env.name + "x")  # a name that starts like ours is not touched
    await other.store(PARAMS, "other")
    assert await cache.invalidate_by_model("gpt-4o") == 5
    assert await cache.invalidate_by_model("gpt-4o") == 0
    assert not (await cache.check({**PARAMS, "seed": 1})).hit
    assert (await cache.check({**PARAMS, "model": "claude-haiku-4-5", "seed": 1})).hit
    assert await cache.clear() == 5
    assert env.keys("llm:*") == []
    assert (await other.check(PARAMS)).hit


async def test_cost_accounting_and_stats(env: Env) -> None:
    cache = llm(env, prices={"my-model": {"input": 2.0, "output": 8.0}})
    await cache.store(PARAMS, "x", tokens={"prompt_tokens": 1000, "completion_tokens": 100})
    mine = {**PARAMS, "model": "my-model"}
    await cache.store(mine, "y", tokens=TokenUsage(input=500, output=50))
    unknown = {**PARAMS, "model": "unpriced"}
    await cache.store(unknown, "z", tokens={"input": 10, "output": 10})
    first = await cache.check(PARAMS)
    assert first.cost_saved_micros == 1000 * 2.5 + 100 * 10  # gpt-4o default price
    assert (await cache.check(mine)).cost_saved_micros == 500 * 2 + 50 * 8
    assert (await cache.check(unknown)).cost_saved_micros == 0
    await cache.check({**PARAMS, "seed": 99})  # miss
    stats = await cache.stats()
    assert (stats.llm_hits, stats.llm_misses) == (3, 1)
    assert stats.cost_saved_micros == 3500 + 1400
    assert stats.cost_saved == pytest.approx(0.0049)
    assert stats.llm_hit_rate == 0.75
    raw = env.raw.hgetall(f"{env.name}:__stats")
    assert raw == {"llm:hits": "3", "llm:misses": "1", "cost_saved_micros": "4900"}


async def test_no_prices_records_no_cost(env: Env) -> None:
    cache = llm(env, prices=PriceTable())
    await cache.store(PARAMS, "x", tokens={"input": 1000, "output": 1000})
    assert (await cache.check(PARAMS)).cost_saved_micros == 0


async def test_lookups_are_counted_in_their_own_round_trip(env: Env) -> None:
    cache = llm(env)
    await cache.check(PARAMS)  # miss, counted by the lookup's own script
    assert env.raw.hgetall(f"{env.name}:__stats") == {"llm:misses": "1"}
    await cache.store(PARAMS, "x", tokens={"input": 1000, "output": 1000})
    hit = await cache.check(PARAMS)
    stats = env.raw.hgetall(f"{env.name}:__stats")
    assert stats["llm:hits"] == "1"
    assert int(stats["cost_saved_micros"]) == hit.cost_saved_micros > 0
    await cache.flush_stats()  # nothing buffered: no change
    assert env.raw.hget(f"{env.name}:__stats", "llm:hits") == "1"


async def test_wrap_sync_function(env: Env) -> None:
    cache = llm(env)
    calls: list[dict[str, Any]] = []

    def complete(**params: Any) -> dict[str, Any]:
        calls.append(params)
        return {"text": f"answer {len(calls)}", "usage": {"input_tokens": 3, "output_tokens": 4}}

    cached = cache.wrap(complete, ttl=60)
    first = await cached(**PARAMS)
    second = await cached(**PARAMS, timeout=5)
    assert (
        first
        == second
        == {
            "text": "answer 1",
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }
    )
    assert len(calls) == 1
    third = await cached(**{**PARAMS, "seed": 1})
    assert third["text"] == "answer 2"
    streamed = await cached(**PARAMS, stream=True)
    assert streamed["text"] == "answer 3"  # streaming calls bypass the cache
    hit = await cache.check(PARAMS)
    assert hit.tokens == TokenUsage(3, 4)
    assert 0 < env.raw.pttl(hit.key) <= 60_000
    with pytest.raises(InvalidInputError):
        await cached("positional")


async def test_wrap_custom_usage(env: Env) -> None:
    cache = llm(env)
    cached = cache.wrap(lambda **p: "plain text", usage=lambda r: {"input": len(r), "output": 1})
    assert await cached(**PARAMS) == "plain text"
    assert (await cache.check(PARAMS)).tokens == TokenUsage(10, 1)


@pytest.mark.parametrize(
    "usage",
    [
        {"input": 3, "output_tokens": 4},
        {"prompt_tokens": 3, "output": 4},
        {"input_tokens": 3, "completion_tokens": 4},
        {"prompt_tokens": 3, "completion_tokens": None, "output_tokens": 4},
        {"input": 3, "input_tokens": 3, "output": 4},  # two spellings that agree
    ],
)
async def test_mixed_token_spellings_are_read_side_by_side(env: Env, usage: dict[str, Any]) -> None:
    """Each side's count comes from whichever of its spellings the usage gives."""
    cache = llm(env)
    await cache.wrap(lambda **p: {"text": "t", "usage": usage})(**PARAMS)
    assert (await cache.check(PARAMS)).tokens == TokenUsage(3, 4)
    await cache.store(PARAMS, "x", tokens=usage)
    assert (await cache.check(PARAMS)).tokens == TokenUsage(3, 4)


async def test_one_side_given_twice_differently_is_refused(env: Env) -> None:
    cache = llm(env)
    with pytest.raises(InvalidInputError, match="input count twice") as info:
        await cache.store(PARAMS, "x", tokens={"input": 3, "prompt_tokens": 5, "output": 1})
    assert info.value.field == "tokens"
    assert env.keys() == []


async def test_invalid_input_writes_nothing(env: Env) -> None:
    cache = llm(env)
    for bad in ({"messages": []}, {**PARAMS, "temperature": float("nan")}):
        with pytest.raises(InvalidInputError):
            await cache.store(bad, "x")
        with pytest.raises(InvalidInputError):
            await cache.check(bad)
    with pytest.raises(InvalidInputError):
        await cache.store(PARAMS, object())
    with pytest.raises(InvalidInputError):
        await cache.store(PARAMS, "x", tokens={"input": -1, "output": 0})
    with pytest.raises(InvalidInputError):
        await cache.store(PARAMS, "x", ttl=0)
    with pytest.raises(InvalidInputError):
        await cache.invalidate_by_model("")
    assert env.keys() == []


async def test_corrupt_entry_is_a_miss(env: Env) -> None:
    cache = llm(env)
    key = (await cache.check(PARAMS)).key
    env.raw.set(key, "not json")
    assert not (await cache.check(PARAMS)).hit
    env.raw.set(key, json.dumps({"no": "response"}))
    assert not (await cache.check(PARAMS)).hit


@pytest.mark.parametrize("clock", [None, 123, "now"], ids=["none", "int", "text"])
async def test_a_clock_that_is_not_callable_is_refused_by_the_constructor(
    env: Env, clock: Any
) -> None:
    """Not at the first store, as a TypeError from inside the library."""
    with pytest.raises(InvalidInputError) as caught:
        cache = llm(env, clock=clock)
        await cache.store(PARAMS, "x")
    assert caught.value.field == "clock"
    with pytest.raises(InvalidInputError) as caught:
        tools = env.make(ToolCache, SyncToolCache, clock=clock)
        await tools.store("t", {"q": 1}, "x")
    assert caught.value.field == "clock"
    assert env.keys() == []
