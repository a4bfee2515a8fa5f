"""Tool result cache against real servers (every kind, every client flavour)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.cache import SyncToolCache, ToolCache, ToolPolicy
from agent_memory.cache.tool_core import recommend
from agent_memory.errors import InvalidInputError
from tests.cache.conftest import Env, Tier

ODD_TOOLS = ["a:b", "*", "x?y", "[abc]", "back\\slash", "{tag}", "é ü", "a b", "tool*"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def tools(env: Env, **kwargs: Any) -> Tier:
    return env.make(ToolCache, SyncToolCache, **kwargs)


async def test_miss_store_hit_and_arg_order(env: Env) -> None:
    cache = tools(env)
    miss = await cache.check("weather", {"city": "Paris", "units": "C"})
    assert not miss.hit and miss.result is None and miss.tool == "weather"
    key = await cache.store("weather", {"city": "Paris", "units": "C"}, {"temp": 21.5})
    assert key == miss.key and key.startswith(f"{env.name}:tool:weather:")
    hit = await cache.check("weather", {"units": "C", "city": "Paris"})
    assert hit.hit and hit.result == {"temp": 21.5}
    assert not (await cache.check("weather", {"city": "Rome", "units": "C"})).hit
    assert not (await cache.check("forecast", {"city": "Paris", "units": "C"})).hit
    entry = json.loads(env.raw.get(key))
    assert entry["toolName"] == "weather" and entry["args"] == {"city": "Paris", "units": "C"}
    assert (await cache.check("noargs", None)).hit is False
    await cache.store("noargs", None, [1, 2])
    assert (await cache.check("noargs", {})).result == [1, 2]


async def test_any_tool_name_works(env: Env) -> None:
    cache = tools(env)
    for i, tool in enumerate(ODD_TOOLS):
        await cache.store(tool, {"i": i}, f"r{i}")
        await cache.store(tool, {"i": i + 100}, f"s{i}")
    for i, tool in enumerate(ODD_TOOLS):
        assert (await cache.check(tool, {"i": i})).result == f"r{i}"
    # "*" and "tool*" must not sweep other tools' entries
    assert await cache.invalidate_by_tool("*") == 2
    assert await cache.invalidate_by_tool("tool*") == 2
    assert (await cache.check("a:b", {"i": 0})).hit
    assert await cache.invalidate_by_tool("a:b") == 2
    remaining = [t for t in ODD_TOOLS if t not in ("*", "tool*", "a:b")]
    for tool in remaining:
        assert await cache.invalidate_by_tool(tool) == 2
    assert env.keys("tool:*") == []


async def test_invalidate(env: Env) -> None:
    cache = tools(env)
    await cache.store("t", {"a": 1, "b": 2}, "x")
    await cache.store("t", {"a": 2}, "y")
    assert await cache.invalidate("t", {"b": 2, "a": 1}) is True
    assert await cache.invalidate("t", {"b": 2, "a": 1}) is False
    assert not (await cache.check("t", {"a": 1, "b": 2})).hit
    assert (await cache.check("t", {"a": 2})).hit
    other = tools(env, name=env.name + ":tool:t")  # a name that nests ours is not swept
    await other.store("t", {"a": 3}, "z")
    assert await cache.invalidate_by_tool("t") == 1
    assert (await other.check("t", {"a": 3})).hit


async def test_policies_ttl_and_refresh(env: Env) -> None:
    clock = Clock()
    cache = tools(env, ttl=50, policy_refresh=30, clock=clock)
    writer = tools(env, clock=clock)
    key = await cache.store("search", {"q": 1}, "r")
    assert 49_000 < env.raw.pttl(key) <= 50_000
    assert await cache.get_policy("search") is None
    await writer.set_policy("search", ttl=300)
    assert await writer.get_policy("search") == ToolPolicy(300.0)
    assert json.loads(env.raw.hget(f"{env.name}:__tool_policies", "search")) == {"ttl": 300}
    # `cache` read the policies at its first store: it sees the new one after refresh
    key = await cache.store("search", {"q": 2}, "r")
    assert env.raw.pttl(key) <= 50_000
    clock.now += 31
    key = await cache.store("search", {"q": 3}, "r")
    assert 299_000 < env.raw.pttl(key) <= 300_000
    key = await cache.store("search", {"q": 4}, "r", ttl=7)
    assert 6_000 < env.raw.pttl(key) <= 7_000
    # a check refreshes stale policies in its own batch
    await writer.set_policy("search", ttl=120)
    clock.now += 31
    await cache.check("search", {"q": 9})
    key = await cache.store("search", {"q": 5}, "r")
    assert 119_000 < env.raw.pttl(key) <= 120_000
    assert await writer.delete_policy("search") is True
    assert await writer.delete_policy("search") is False
    assert await cache.get_policy("search") is None
    key = await cache.store("search", {"q": 6}, "r")
    assert 49_000 < env.raw.pttl(key) <= 50_000


async def test_stats_and_effectiveness(env: Env) -> None:
    cache = tools(env, ttl=600)
    await cache.set_policy("slow:api", ttl=100_000)
    await cache.store("good", {}, 1)
    for _ in range(10):
        await cache.check("good", {})
    for i in range(10):
        await cache.check("bad", {"i": i})
    await cache.store("slow:api", {}, 1)
    for i in range(10):
        await cache.check("slow:api", {} if i < 9 else {"i": i})
    await cache.check("rare", {})
    stats = await cache.stats()
    assert (stats.tool_hits, stats.tool_misses) == (19, 12)
    assert stats.tool("good").hits == 10 and stats.tool("bad").misses == 10
    assert stats.tool("slow:api").hit_rate == 0.9
    fields = env.raw.hgetall(f"{env.name}:__stats")
    assert fields["tool:slow:api:hits"] == "9" and fields["tool:hits"] == "19"
    report = {e.tool: e for e in await cache.tool_effectiveness()}
    assert report["good"].recommendation == "increase_ttl"
    assert report["good"].ttl == 600 and report["good"].suggested_ttl == 1200
    assert report["slow:api"].recommendation == "optimal"  # TTL already over a day
    assert report["bad"].recommendation == "decrease_ttl_or_disable"
    assert report["bad"].suggested_ttl == 300
    assert report["rare"].recommendation == "insufficient_data"
    assert [e.tool for e in await cache.tool_effectiveness()][-1] == "rare"


def test_recommendation_rule() -> None:
    assert recommend(5, 4, 60) == ("insufficient_data", 60)
    assert recommend(8, 2, 60) == ("increase_ttl", 120)
    assert recommend(8, 2, 80_000) == ("increase_ttl", 86_400)
    assert recommend(8, 2, None) == ("optimal", None)
    assert recommend(4, 6, 60) == ("optimal", 60)
    assert recommend(3, 7, 100) == ("decrease_ttl_or_disable", 60)
    assert recommend(0, 10, None) == ("decrease_ttl_or_disable", 3600)


async def test_invalid_input(env: Env) -> None:
    cache = tools(env)
    for call in (
        cache.check("", {}),
        cache.store("t", {"x": float("inf")}, 1),
        cache.store("t", {}, object()),
        cache.store("t", {}, 1, ttl=-1),
        cache.set_policy("t", ttl=0),
        cache.set_policy(3, ttl=5),
        cache.invalidate_by_tool(""),
    ):
        with pytest.raises(InvalidInputError):
            await call
    with pytest.raises(InvalidInputError):
        tools(env, policy_refresh=-1)
    assert env.keys() == []
