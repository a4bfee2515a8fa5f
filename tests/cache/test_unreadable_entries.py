"""Damaged cache data (another writer's, or a bit rot's) is read as absent, and never
silently: each unreadable entry, policy or stats field is logged and counted in the
cache's ``agent_memory_events{event="corrupt_entries"}``, a failed counter update in
``stats_failures`` (every server kind, every client flavour)."""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np
import pytest
import redis
import valkey
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
from agent_memory.cache.stats import ToolStats
from agent_memory.errors import WrongTypeError
from tests.cache.conftest import CHAT_PARAMS, Env, Tier


def _core(cache: Tier) -> Any:
    return cache.tier._core


async def test_llm_entry_not_json_or_without_response(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    cache = env.make(LlmCache, SyncLlmCache, registry=registry)
    key = (await cache.check(CHAT_PARAMS)).key
    assert env.events(registry, "corrupt_entries") == 0
    env.raw.set(key, "not json")
    with caplog.at_level(logging.WARNING, logger="agent_memory.cache"):
        assert not (await cache.check(CHAT_PARAMS)).hit
    assert env.events(registry, "corrupt_entries") == 1
    assert key in caplog.text and "unreadable" in caplog.text
    env.raw.set(key, json.dumps({"no": "response"}))
    assert not (await cache.check(CHAT_PARAMS)).hit
    assert env.events(registry, "corrupt_entries") == 2
    await cache.store(CHAT_PARAMS, "fresh")  # a store replaces the damaged entry
    assert (await cache.check(CHAT_PARAMS)).response == "fresh"
    assert env.events(registry, "corrupt_entries") == 2


async def test_llm_token_usage_unreadable(env: Env) -> None:
    registry = CollectorRegistry()
    cache = env.make(LlmCache, SyncLlmCache, registry=registry)
    key = await cache.store(CHAT_PARAMS, "answer", tokens={"input_tokens": 3, "output_tokens": 4})
    entry = json.loads(env.raw.get(key))
    entry["tokens"] = {"input_tokens": "many"}
    env.raw.set(key, json.dumps(entry))
    result = await cache.check(CHAT_PARAMS)
    assert result.hit and result.response == "answer" and result.tokens is None
    assert env.events(registry, "corrupt_entries") == 1


async def test_invalidate_by_model_counts_what_it_cannot_read(env: Env) -> None:
    registry = CollectorRegistry()
    cache = env.make(LlmCache, SyncLlmCache, registry=registry)
    kept = await cache.store(CHAT_PARAMS, "answer")
    other = {**CHAT_PARAMS, "messages": [{"role": "user", "content": "other"}]}
    damaged = await cache.store(other, "answer")
    env.raw.set(damaged, "\x00 not json")
    assert await cache.invalidate_by_model("gpt-4o-mini") == 1
    assert env.raw.exists(kept) == 0 and env.raw.exists(damaged) == 1
    assert env.events(registry, "corrupt_entries") == 1


async def test_tool_entry_and_policies(env: Env) -> None:
    registry = CollectorRegistry()
    cache = env.make(ToolCache, SyncToolCache, registry=registry)
    key = await cache.store("search", {"q": "x"}, {"rows": 1})
    env.raw.set(key, "[1, 2")
    assert not (await cache.check("search", {"q": "x"})).hit
    assert env.events(registry, "corrupt_entries") == 1
    policies = _core(cache).tier.layout.tool_policies
    env.raw.hset(policies, mapping={"search": "not json", "fetch": json.dumps({"ttl": -1})})
    assert await cache.get_policy("search") is None
    assert await cache.get_policy("fetch") is None
    assert env.events(registry, "corrupt_entries") == 3
    await cache.set_policy("lookup", ttl=60)
    assert (await cache.get_policy("lookup")).ttl == 60  # the readable one still reads
    assert env.events(registry, "corrupt_entries") == 3


async def test_a_policies_key_of_another_type_is_read_as_absent(env: Env) -> None:
    """Every read of the tool policies (a store's refresh, ``get_policy``,
    ``tool_effectiveness``) reads a policies key another writer gave another type as
    holding none, logged and counted; setting a policy raises WrongTypeError."""
    registry = CollectorRegistry()
    cache = env.make(ToolCache, SyncToolCache, registry=registry, ttl=30)
    env.raw.set(_core(cache).tier.layout.tool_policies, "not a hash")
    await cache.store("search", {"q": "x"}, {"rows": 1})
    assert env.events(registry, "corrupt_entries") == 1
    assert await cache.get_policy("search") is None
    assert env.events(registry, "corrupt_entries") == 2
    for _ in range(10):
        assert (await cache.check("search", {"q": "x"})).hit
    (report,) = await cache.tool_effectiveness()
    assert (report.tool, report.hits, report.ttl) == ("search", 10, 30)
    assert env.events(registry, "corrupt_entries") == 3
    with pytest.raises(WrongTypeError):
        await cache.set_policy("search", ttl=60)
    assert env.raw.get(_core(cache).tier.layout.tool_policies) == "not a hash"


async def test_stats_field_that_is_not_a_count(env: Env) -> None:
    registry = CollectorRegistry()
    cache = env.make(LlmCache, SyncLlmCache, registry=registry)
    await cache.check(CHAT_PARAMS)  # one miss
    stats_key = _core(cache).tier.layout.stats
    env.raw.hset(stats_key, "llm:hits", "lots")
    stats = await cache.stats()
    assert stats.llm_misses == 1 and stats.llm_hits == 0
    assert env.events(registry, "corrupt_entries") == 1


async def test_stats_fields_a_counter_update_would_refuse_are_not_counts(env: Env) -> None:
    """A field is a count when the server's HINCRBY takes it: the text of a 64-bit
    integer. Text Python's ``int`` reads otherwise (a fraction, an exponent, spaces,
    underscores, a plus sign, leading zeros) is left out and reported, never read as
    another number."""
    registry = CollectorRegistry()
    cache = env.make(ToolCache, SyncToolCache, registry=registry)
    stats_key = _core(cache).tier.layout.stats
    damaged = {
        "tool:hits": "1.5",
        "tool:misses": "1e3",
        "tool:a:hits": " 7",
        "tool:a:misses": "1_000",
        "tool:b:hits": "+4",
        "tool:b:misses": "007",
        "session:reads": "-0",
    }
    for field, value in damaged.items():
        env.raw.hset(stats_key, field, value)
        with pytest.raises(valkey.ResponseError):
            env.raw.hincrby(stats_key, field, 0)  # the server says it is not a count
    env.raw.hset(stats_key, mapping={"tool:c:hits": "-12", "session:writes": "0"})
    stats = await cache.stats()
    assert (stats.tool_hits, stats.tool_misses, stats.session_reads) == (0, 0, 0)
    assert stats.tools == (ToolStats("c", -12, 0),) and stats.session_writes == 0
    assert env.events(registry, "corrupt_entries") == len(damaged)


async def test_embedding_value_that_is_not_a_vector(env: Env) -> None:
    registry = CollectorRegistry()
    cache = env.make(EmbeddingCache, SyncEmbeddingCache, registry=registry)
    await cache.put_many("m1", ["a", "b"], [[1.0, 2.0], [3.0, 4.0]])
    env.raw.set(_core(cache)._key("m1", "a"), "abc")  # 3 bytes: not float32s
    got = await cache.get_many("m1", ["a", "b"])
    assert got[0] is None and got[1] == pytest.approx([3.0, 4.0])
    assert env.events(registry, "corrupt_entries") == 1


async def test_an_embedding_holding_a_non_finite_number_is_read_as_absent(env: Env) -> None:
    """No writer of this library stores NaN or an infinity (``put_many`` refuses them):
    such a blob is damage, a miss, so the text is embedded again and the write replaces
    it, instead of a vector every store refuses for as long as the entry lives."""
    registry = CollectorRegistry()
    cache = env.make(EmbeddingCache, SyncEmbeddingCache, registry=registry)
    raw = redis.Redis.from_url(env.url)  # writes bytes as they are
    try:
        for i, bad in enumerate((np.nan, np.inf, -np.inf), start=1):
            raw.set(_core(cache)._key("m1", "a"), np.array([1.0, bad], dtype="<f4").tobytes())
            assert await cache.get_many("m1", ["a"]) == [None]
            assert env.events(registry, "corrupt_entries") == i
        assert await cache.embed_many("m1", ["a"], lambda texts: [[1.0, 2.0]]) == [[1.0, 2.0]]
        assert await cache.get_many("m1", ["a"]) == [[1.0, 2.0]]
        assert env.events(registry, "corrupt_entries") == 4
    finally:
        raw.close()


async def test_failed_counter_update_is_counted(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    cache = env.make(EmbeddingCache, SyncEmbeddingCache, registry=registry)
    env.raw.set(_core(cache).tier.layout.stats, "not a hash")
    with caplog.at_level(logging.WARNING):
        assert await cache.get_many("m1", ["a"]) == [None]  # the read itself succeeds
        assert await cache.get_many("m1", ["a"]) == [None]  # its counters are tried again
    assert env.events(registry, "stats_failures") >= 1
    assert "counter update failed" in caplog.text


async def test_on_a_cluster(cluster_env: Env) -> None:
    """A cluster's lookups count their outcome on the tier's next batch: the damaged
    entry is reported all the same."""
    registry = CollectorRegistry()
    cache = cluster_env.make(LlmCache, SyncLlmCache, registry=registry)
    key = await cache.store(CHAT_PARAMS, "answer")
    cluster_env.raw.set(key, "not json")
    assert not (await cache.check(CHAT_PARAMS)).hit
    assert cluster_env.events(registry, "corrupt_entries") == 1


async def test_bytes_that_are_not_utf8_are_read_as_absent_by_every_operation(env: Env) -> None:
    """Whatever the client decodes: one damaged value or field name never fails a whole
    operation (the replies are read undecoded, each value decoded on its own)."""
    registry = CollectorRegistry()
    raw = redis.Redis.from_url(env.url)  # writes bytes as they are
    try:
        tools = env.make(ToolCache, SyncToolCache, registry=registry)
        policies = _core(tools).tier.layout.tool_policies
        raw.hset(policies, mapping={b"search": b"\xff\xfe", b"\xff\xfd": json.dumps({"ttl": 5})})
        await tools.store("fetch", {"q": "x"}, {"rows": 1})  # reads every policy first
        assert (await tools.check("fetch", {"q": "x"})).hit
        assert await tools.get_policy("search") is None
        llm = env.make(LlmCache, SyncLlmCache, registry=registry)
        kept = await llm.store(CHAT_PARAMS, "answer")
        other = {**CHAT_PARAMS, "messages": [{"role": "user", "content": "other"}]}
        damaged = await llm.store(other, "answer")
        raw.set(damaged, b"\xff\xfe")
        raw.hset(f"{env.name}:llm:" + "0" * 64, "a", "hash")  # an entry's key, not a string
        assert await llm.invalidate_by_model("gpt-4o-mini") == 1
        assert env.raw.exists(kept) == 0
        stats_key = _core(llm).tier.layout.stats
        raw.hset(stats_key, mapping={b"\xff\xfe": b"1", b"llm:misses": b"\xff"})
        stats = await llm.stats()
        assert stats.llm_misses == 0
        # the policy value (read by store and by get_policy) and name, the entry, the key
        # of another type, the two stats fields
        assert env.events(registry, "corrupt_entries") == 7
    finally:
        raw.close()


async def _entry_of_another_type_is_a_miss_until_stored_again(env: Env) -> None:
    """An entry's key that another writer gave another type: each lookup reads it as an
    unreadable miss (logged, counted), a wrapped call runs and its store replaces it."""
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    key = (await llm.check(CHAT_PARAMS)).key
    env.raw.hset(key, "x", "1")
    assert not (await llm.check(CHAT_PARAMS)).hit
    assert env.events(registry, "corrupt_entries") == 1
    calls: list[int] = []

    def complete(**params: Any) -> str:
        calls.append(1)
        return "answer"

    cached = llm.wrap(complete)
    assert await cached(**CHAT_PARAMS) == "answer"
    assert await cached(**CHAT_PARAMS) == "answer"
    assert calls == [1] and env.raw.type(key) == "string"
    assert env.events(registry, "corrupt_entries") == 2
    assert env.events(registry, "store_failures") == 0
    stats = await llm.stats()
    assert (stats.llm_hits, stats.llm_misses) == (1, 3)

    tools = env.make(ToolCache, SyncToolCache, registry=registry)
    tool_key = (await tools.check("search", {"q": 1})).key
    env.raw.rpush(tool_key, "junk")
    assert not (await tools.check("search", {"q": 1})).hit
    assert env.events(registry, "corrupt_entries") == 3
    await tools.store("search", {"q": 1}, {"rows": 1})
    assert (await tools.check("search", {"q": 1})).result == {"rows": 1}
    tool_stats = await tools.stats()
    assert (tool_stats.tool_hits, tool_stats.tool_misses) == (1, 2)

    vectors = env.make(EmbeddingCache, SyncEmbeddingCache, registry=registry)
    await vectors.put_many("m", ["a", "b"], [[1.0], [2.0]])
    env.raw.delete(_core(vectors)._key("m", "a"))
    env.raw.sadd(_core(vectors)._key("m", "a"), "x")
    assert await vectors.get_many("m", ["a", "b"]) == [None, [2.0]]
    assert env.events(registry, "corrupt_entries") == 4
    embedded: list[str] = []

    def embed(texts: list[str]) -> list[list[float]]:
        embedded.extend(texts)
        return [[9.0]] * len(texts)

    assert await vectors.embed_many("m", ["a", "b"], embed) == [[9.0], [2.0]]
    assert await vectors.embed_many("m", ["a", "b"], embed) == [[9.0], [2.0]]
    assert embedded == ["a"]
    assert env.events(registry, "corrupt_entries") == 5


async def test_a_thread_key_of_another_type_reads_as_empty_and_destroy_clears_it(
    env: Env,
) -> None:
    """A session thread whose key another writer gave another type reads as empty
    (logged, counted), a write to it raises WrongTypeError, and destroying the thread
    counts no field and clears the key for new writes (logged, counted)."""
    registry = CollectorRegistry()
    sessions = env.make(SessionStore, SyncSessionStore, registry=registry)
    hkey = _core(sessions).tier.layout.session("t1")
    env.raw.set(hkey, "not a hash")
    assert await sessions.get("t1", "k") is None
    assert await sessions.get_all("t1") == {}
    assert env.events(registry, "corrupt_entries") == 2
    with pytest.raises(WrongTypeError):
        await sessions.set("t1", "k", "v")
    assert await sessions.destroy_thread("t1") == 0
    assert env.events(registry, "corrupt_entries") == 3
    assert env.raw.exists(hkey) == 0
    await sessions.set("t1", "k", "v")
    assert await sessions.get("t1", "k") == "v"
    assert await sessions.destroy_thread("t1") == 1


@pytest.mark.parametrize("ttl", [100.0, None])
async def test_a_thread_key_of_another_type_keeps_its_ttl(env: Env, ttl: float | None) -> None:
    """No read, write or touch of a thread changes a key another writer gave another
    type: its TTL (none, or the one it had) stays; ``touch`` reports it as no thread."""
    registry = CollectorRegistry()
    sessions = env.make(SessionStore, SyncSessionStore, registry=registry, ttl=ttl)
    forever, expiring = (_core(sessions).tier.layout.session(t) for t in ("s", "l"))
    env.raw.set(forever, "not a hash")
    env.raw.rpush(expiring, "not", "a hash")
    env.raw.pexpire(expiring, 5_000)
    for thread in ("s", "l"):
        assert await sessions.get(thread, "k") is None
        assert await sessions.get_all(thread) == {}
        assert await sessions.touch(thread) is False
        for write in (sessions.set(thread, "k", "v"), sessions.delete(thread, "k")):
            with pytest.raises(WrongTypeError):
                await write
    assert env.raw.pttl(forever) == -1 and env.raw.get(forever) == "not a hash"
    assert 0 < env.raw.pttl(expiring) <= 5_000
    assert env.raw.lrange(expiring, 0, -1) == ["not", "a hash"]
    assert env.events(registry, "corrupt_entries") == 6  # two reads and a touch each


async def test_an_entry_key_of_another_type_is_a_miss_and_a_store_replaces_it(env: Env) -> None:
    await _entry_of_another_type_is_a_miss_until_stored_again(env)


async def test_an_entry_key_of_another_type_on_a_cluster(cluster_env: Env) -> None:
    await _entry_of_another_type_is_a_miss_until_stored_again(cluster_env)
