"""A lookup's counters never fail it and stay exact; damaged values (numbers out of
range, bytes that are not UTF-8) are reported misses or fields, on every client
flavour and server kind."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_memory.cache import (
    EmbeddingCache,
    LlmCache,
    SessionStore,
    SyncEmbeddingCache,
    SyncLlmCache,
    SyncSessionStore,
    SyncToolCache,
    ToolCache,
)
from agent_memory.errors import InvalidInputError
from tests.cache.conftest import CHAT_PARAMS, Env


async def test_a_stats_key_of_another_type_never_fails_a_lookup(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    tool = env.make(ToolCache, SyncToolCache, registry=registry)
    await llm.store(CHAT_PARAMS, "answer")
    await tool.store("t", {"q": 1}, "r")
    env.raw.set(f"{env.name}:__stats", "not a hash")
    with caplog.at_level(logging.WARNING, logger="agent_memory.cache"):
        assert (await llm.check(CHAT_PARAMS)).response == "answer"
        assert (await tool.check("t", {"q": 1})).result == "r"
        assert not (await tool.check("t", {"q": 2})).hit
    assert env.events(registry, "stats_failures") == 5  # 1 + 2 + 2 counters refused
    assert "counter update failed" in caplog.text
    assert env.raw.get(f"{env.name}:__stats") == "not a hash"


async def test_a_stats_field_that_is_not_a_count_fails_only_itself(env: Env) -> None:
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    await llm.store(CHAT_PARAMS, "answer", tokens={"input": 1000, "output": 1000})
    env.raw.hset(f"{env.name}:__stats", "llm:hits", "lots")
    found = await llm.check(CHAT_PARAMS)
    assert found.hit and found.cost_saved_micros == 750
    assert not (await llm.check({**CHAT_PARAMS, "seed": 1})).hit
    assert env.events(registry, "stats_failures") == 1
    stats = env.raw.hgetall(f"{env.name}:__stats")
    assert stats == {"llm:hits": "lots", "llm:misses": "1", "cost_saved_micros": "750"}


@pytest.mark.parametrize(
    ("stored", "saved"),
    [(1e20, 0), (-5000, 0), (750.5, 750), (750.0, 750), (12, 12), (0, 0), ("7", 750)],
)
async def test_what_a_hit_saved_is_what_the_stats_count(env: Env, stored: Any, saved: int) -> None:
    """An entry's ``costMicros`` (damaged or not): the call and the stats agree."""
    llm = env.make(LlmCache, SyncLlmCache)
    key = await llm.store(CHAT_PARAMS, "answer", tokens={"input": 1000, "output": 1000})
    entry = json.loads(env.raw.get(key))
    assert entry["costMicros"] == 750
    env.raw.set(key, json.dumps({**entry, "costMicros": stored}))
    if stored in (1e20, -5000):  # nothing to price it from either
        env.raw.set(key, json.dumps({"response": "answer", "costMicros": stored}))
    found = await llm.check(CHAT_PARAMS)
    assert found.hit and found.cost_saved_micros == saved
    stats = await llm.stats()
    assert (stats.llm_hits, stats.cost_saved_micros) == (1, saved)


async def test_a_value_another_decoder_reads_otherwise_is_counted_as_returned(
    env: Env,
) -> None:
    """Bytes that are not UTF-8 inside a JSON string: the server's decoder takes them,
    this library reads a miss, and the counters follow what the lookup returned."""
    llm = env.make(LlmCache, SyncLlmCache)
    key = await llm.store(CHAT_PARAMS, "answer")
    env.raw.set(key, b'{"response":"\xff","costMicros":40}')
    assert not (await llm.check(CHAT_PARAMS)).hit
    stats = await llm.stats()
    assert (stats.llm_hits, stats.llm_misses, stats.cost_saved_micros) == (0, 1, 0)


@pytest.mark.parametrize("count", [10**9 + 1, 10**20, 10**400, -1])
async def test_token_counts_out_of_range_are_refused_before_writing(env: Env, count: int) -> None:
    llm = env.make(LlmCache, SyncLlmCache)
    with pytest.raises(InvalidInputError) as caught:
        await llm.store(CHAT_PARAMS, "answer", tokens={"input": count, "output": 0})
    assert caught.value.field == "tokens"
    assert env.keys() == []


async def test_entry_numbers_out_of_range_are_reported(env: Env) -> None:
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    key = await llm.store(CHAT_PARAMS, "answer")
    huge = "9" * 400
    env.raw.set(key, f'{{"response":"x","model":"gpt-4o-mini","storedAt":{huge}}}')
    found = await llm.check(CHAT_PARAMS)
    assert found.hit and found.stored_at is None
    env.raw.set(key, f'{{"response":"x","tokens":{{"input":{huge},"output":0}},"cost":{huge}}}')
    found = await llm.check(CHAT_PARAMS)
    assert found.hit and found.tokens is None and found.cost_saved_micros == 0
    assert env.events(registry, "corrupt_entries") == 2


async def test_values_that_are_not_utf8_are_reported_misses(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    tool = env.make(ToolCache, SyncToolCache, registry=registry)
    env.raw.set(await llm.store(CHAT_PARAMS, "x"), b"\xff\xfe not utf8")
    env.raw.set(await tool.store("t", {"a": 1}, "x"), b"\xff\xfe")
    with caplog.at_level(logging.WARNING, logger="agent_memory.cache"):
        assert not (await llm.check(CHAT_PARAMS)).hit
        assert not (await tool.check("t", {"a": 1})).hit
    assert env.events(registry, "corrupt_entries") == 2
    stats = await llm.stats()
    assert (stats.llm_hits, stats.llm_misses, stats.tool_hits, stats.tool_misses) == (0, 1, 0, 1)


async def test_session_fields_that_are_not_utf8_are_left_out(env: Env) -> None:
    registry = CollectorRegistry()
    store = env.make(SessionStore, SyncSessionStore, registry=registry)
    await store.set("th", "good", {"v": 1})
    env.raw.hset(f"{env.name}:session:th", mapping={"bad": b"\xff\xfe", "text": "plain"})
    env.raw.hset(f"{env.name}:session:th", b"\xfe\xff", "1")
    assert await store.get_all("th") == {"good": {"v": 1}, "text": "plain"}
    assert env.events(registry, "corrupt_entries") == 2
    assert await store.get("th", "bad") is None
    assert await store.get("th", "good") == {"v": 1}
    assert env.events(registry, "corrupt_entries") == 3


async def test_reads_of_threads_that_do_not_exist_are_not_active_sessions(env: Env) -> None:
    registry = CollectorRegistry()
    store = env.make(SessionStore, SyncSessionStore, registry=registry)

    def gauge() -> float | None:
        return registry.get_sample_value("agent_cache_active_sessions", {"name": env.name})

    for i in range(3):
        assert await store.get(f"nope-{i}", "k") is None
    assert await store.get_all("nope-0") == {}
    assert gauge() == 0
    await store.set("th", "k", 1)
    assert gauge() == 1
    await store.delete("th", "k")  # its last field: the thread is gone
    assert gauge() == 0


async def test_on_a_cluster(cluster_env: Env) -> None:
    registry = CollectorRegistry()
    llm = cluster_env.make(LlmCache, SyncLlmCache, registry=registry)
    key = await llm.store(CHAT_PARAMS, "x", tokens={"input": 1000, "output": 0})
    assert (await llm.check(CHAT_PARAMS)).cost_saved_micros == 150
    cluster_env.raw.set(key, b"\xff\xfe")
    assert not (await llm.check(CHAT_PARAMS)).hit
    stats = await llm.stats()
    assert (stats.llm_hits, stats.llm_misses, stats.cost_saved_micros) == (1, 1, 150)
    assert cluster_env.events(registry, "corrupt_entries") == 1


async def test_an_operation_that_fails_still_reports_what_it_met(env: Env) -> None:
    """The lookups, unreadable entries and failed counter updates of an operation that
    then fails (a wrapped completion or an embed function raising) reach the metrics
    when it ends, not at the tier's next operation, which may never come."""
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    vectors = env.make(EmbeddingCache, SyncEmbeddingCache, registry=registry)
    key = (await llm.check(CHAT_PARAMS)).key
    env.raw.set(key, "not json")

    def failing(*_: Any, **__: Any) -> Any:
        raise RuntimeError("the provider is down")

    with pytest.raises(RuntimeError):
        await llm.wrap(failing)(**CHAT_PARAMS)
    assert env.events(registry, "corrupt_entries") == 1
    requests = "agent_cache_requests_total"
    labels = {"name": env.name, "tier": "llm", "result": "miss"}
    assert registry.get_sample_value(requests, labels) == 2
    with pytest.raises(RuntimeError):
        await vectors.embed_many("m", ["a", "b"], failing)
    labels = {"name": env.name, "tier": "embedding", "result": "miss"}
    assert registry.get_sample_value(requests, labels) == 2
