"""Pure checks and in-process runs: TTL and number bounds, batch embedders' shapes, the
metrics of wrapped calls and lookups, and a lookup's round trips."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from agent_memory.backends.inprocess import AsyncInProcessClient, InProcessClient
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
from agent_memory.cache._tier import Counted, corrections
from agent_memory.cache.embeddings import vectors_of
from agent_memory.cache.keys import MAX_JSON_DEPTH, plain, ttl_ms
from agent_memory.cache.prices import MAX_PRICE, ModelPrice, counted_micros, micros_of_usd
from agent_memory.cache.session import _decode as session_decode
from agent_memory.cache.tool_core import ToolCore, _parse_policies
from agent_memory.core.checks import MAX_TTL_SECONDS
from agent_memory.core.effects import Batch
from agent_memory.errors import InvalidInputError
from agent_memory.store.validation import check_ttl
from tests.cache.conftest import CHAT_PARAMS

TIERS = (LlmCache, ToolCache, SessionStore, EmbeddingCache)
SYNC_TIERS = (SyncLlmCache, SyncToolCache, SyncSessionStore, SyncEmbeddingCache)


@pytest.mark.parametrize("ttl", [MAX_TTL_SECONDS + 1, 1e16, 1e300, 10**400, math.inf, 0, -1])
def test_ttls_beyond_ten_years_are_refused_everywhere(ttl: Any) -> None:
    with pytest.raises(InvalidInputError):
        ttl_ms(ttl)
    with pytest.raises(InvalidInputError):
        check_ttl(ttl)  # the memory store's check is the same one
    for cls in SYNC_TIERS:
        with pytest.raises(InvalidInputError) as caught:
            cls(InProcessClient(), "b", ttl=ttl)
        assert caught.value.field == "ttl"
    assert ttl_ms(MAX_TTL_SECONDS) == MAX_TTL_SECONDS * 1000


def test_a_stored_policy_beyond_the_bound_is_read_as_absent() -> None:
    seen: list[str] = []
    stored = {"a": '{"ttl": Infinity}', "b": '{"ttl": 1e300}', "c": '{"ttl": 60}'}
    stored["d"] = '{"ttl": ' + "9" * 400 + "}"
    policies = _parse_policies(stored, lambda tool, why: seen.append(tool))
    assert list(policies) == ["c"] and seen == ["a", "b", "d"]


def test_stored_costs_are_read_as_the_script_counts_them() -> None:
    assert [counted_micros(v) for v in (12, 12.0, 0, 10**15)] == [12, 12, 0, 10**15]
    for damaged in (-1, 12.5, 10**15 + 1, 1e20, math.inf, math.nan, True, "7", None):
        assert counted_micros(damaged) is None
    assert micros_of_usd(0.00075) == 750
    for damaged in (-1, 1e300, 10**400, math.nan, True, "1"):
        assert micros_of_usd(damaged) is None


def test_prices_are_bounded() -> None:
    ModelPrice(MAX_PRICE, MAX_PRICE)
    with pytest.raises(InvalidInputError):
        ModelPrice(MAX_PRICE + 1, 0)


def test_corrections_turn_what_was_counted_into_what_was_returned() -> None:
    fields = (("h", "t:h"), ("m", "t:m"))
    assert corrections(Counted(True, 5, ()), True, fields, 5) == {}
    assert corrections(Counted(True, 5, ()), False, fields, 0) == {
        "h": -1, "t:h": -1, "m": 1, "t:m": 1, "cost_saved_micros": -5,
    }  # fmt: skip
    assert corrections(Counted(False, 0, ()), True, fields, 3) == {
        "h": 1, "t:h": 1, "m": -1, "t:m": -1, "cost_saved_micros": 3,
    }  # fmt: skip


def test_vectors_of_a_batch() -> None:
    assert len(vectors_of(np.ones((3, 4)), "v")) == 3
    assert vectors_of((v for v in [[1.0]]), "v") == [[1.0]]
    for bad in (5, "ab", b"ab", {"a": [1.0]}, np.ones(4), np.ones((2, 2, 2)), None):
        with pytest.raises(InvalidInputError):
            vectors_of(bad, "v")


def test_a_numpy_batch_embedder_works_with_the_cache() -> None:
    cache = SyncEmbeddingCache(InProcessClient(), "e")
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> Any:
        calls.append(texts)
        return np.arange(len(texts) * 2, dtype=np.float32).reshape(len(texts), 2)

    assert cache.embed_many("m", ["a", "b", "a"], embed) == [[0, 1], [2, 3], [0, 1]]
    assert cache.embed_many("m", ["b"], embed) == [[2, 3]]
    assert calls == [["a", "b"]]
    stats = cache.stats()
    # "a" twice in one batch: embedded once, so one call saved.
    assert (stats.embedding_hits, stats.embedding_misses) == (2, 2)


def test_a_lookup_is_one_round_trip_whatever_the_policy_refresh() -> None:
    core = ToolCore("rt", None, 0, lambda: 0.0)
    op = core.check("search", {"q": 1})
    effect = op.send(None)
    assert isinstance(effect, Batch) and [c.args[0] for c in effect.commands] == ["EVAL"]
    with pytest.raises(StopIteration):
        op.send([[None, 0, 0]])


def _sample(registry: CollectorRegistry, metric: str, **labels: str) -> float | None:
    return registry.get_sample_value(metric, labels)


def test_wrapped_calls_and_embedding_lookups_reach_the_metrics() -> None:
    registry = CollectorRegistry()

    async def main() -> None:
        llm = LlmCache(AsyncInProcessClient(), "w", registry=registry)

        def complete(**params: Any) -> dict[str, Any]:
            return {"text": "hi", "usage": {"prompt_tokens": 1000, "completion_tokens": 1000}}

        cached = llm.wrap(complete)
        for _ in range(3):
            await cached(**CHAT_PARAMS)
        emb = EmbeddingCache(AsyncInProcessClient(), "w", registry=registry)
        wrapped = emb.wrap(lambda t: [1.0, 2.0], embedder_id="m")
        await wrapped("a")
        await wrapped("a")
        await emb.get_many("m", ["a", "b"])

    asyncio.run(main())
    requests = "agent_cache_requests_total"
    assert _sample(registry, requests, name="w", tier="llm", result="hit") == 2
    assert _sample(registry, requests, name="w", tier="llm", result="miss") == 1
    assert _sample(registry, "agent_cache_cost_saved_micros_total", name="w") == 1500
    assert _sample(registry, requests, name="w", tier="embedding", result="hit") == 2
    assert _sample(registry, requests, name="w", tier="embedding", result="miss") == 2


@pytest.mark.parametrize(
    "usage",
    [lambda r: 1 / 0, lambda r: {"input": 10**20}, lambda r: "x", lambda r: None],
    ids=["raises", "huge", "text", "none"],
)
def test_a_failing_usage_function_keeps_the_paid_for_response(usage: Any) -> None:
    registry = CollectorRegistry()
    llm = SyncLlmCache(InProcessClient(), "u", registry=registry)
    calls: list[int] = []

    def complete(**params: Any) -> str:
        calls.append(1)
        return "paid"

    cached = llm.wrap(complete, usage=usage)
    assert cached(**CHAT_PARAMS) == "paid"
    assert cached(**CHAT_PARAMS) == "paid" and calls == [1]  # stored, without token usage
    assert llm.check(CHAT_PARAMS).tokens is None
    events = _sample(registry, "agent_memory_events_total", name="u", event="usage_failures")
    assert events == 1


def test_a_response_that_cannot_be_stored_is_still_returned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    llm = SyncLlmCache(InProcessClient(), "s", registry=registry)
    calls: list[int] = []

    def complete(**params: Any) -> Any:
        calls.append(1)
        return {"text": "paid", "ids": {1, 2}}  # a set: not JSON

    cached = llm.wrap(complete)
    with caplog.at_level(logging.WARNING, logger="agent_memory.cache"):
        assert cached(**CHAT_PARAMS) == {"text": "paid", "ids": {1, 2}}
        assert cached(**CHAT_PARAMS)["text"] == "paid"
    assert calls == [1, 1] and not llm.check(CHAT_PARAMS).hit  # never stored
    assert "could not be stored" in caplog.text
    assert _sample(registry, "agent_memory_events_total", name="s", event="store_failures") == 2


def test_an_async_usage_function_is_awaited() -> None:
    async def usage(response: Any) -> dict[str, int]:
        return {"input": 10, "output": 0}

    async def main() -> Any:
        llm = LlmCache(AsyncInProcessClient(), "a")
        await llm.wrap(lambda **p: "r", usage=usage)(**CHAT_PARAMS)
        return (await llm.check(CHAT_PARAMS)).tokens

    tokens = asyncio.run(main())
    assert tokens is not None and tokens.input == 10


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_values_nested_beyond_the_bound_are_refused_and_a_paid_response_kept() -> None:
    assert plain(_nested(MAX_JSON_DEPTH), "value") == _nested(MAX_JSON_DEPTH)
    session = SyncSessionStore(InProcessClient(), "d")
    with pytest.raises(InvalidInputError, match="nested") as info:
        session.set("t", "k", _nested(3000))
    assert info.value.field == "value"
    registry = CollectorRegistry()
    llm = SyncLlmCache(InProcessClient(), "d", registry=registry)
    response = {"choices": _nested(3000)}
    assert llm.wrap(lambda **params: response)(**CHAT_PARAMS) is response
    assert _sample(registry, "agent_memory_events_total", name="d", event="store_failures") == 1


def test_stored_json_nested_beyond_recursion_is_read_as_unreadable() -> None:
    deep = "[" * 5000 + "]" * 5000
    assert session_decode(deep) == (None, False)
    seen: list[str] = []
    assert _parse_policies({"a": deep}, lambda tool, why: seen.append(tool)) == {}
    assert seen == ["a"]


@pytest.mark.parametrize(
    ("response", "failures"),
    [({"usage": {"input": "lots"}}, 1), ({"usage": "x"}, 1), ({"text": "no usage"}, 0)],
    ids=["bad-field", "not-a-mapping", "absent"],
)
def test_a_responses_own_usage_that_is_unreadable_is_counted(
    response: dict[str, Any], failures: int
) -> None:
    registry = CollectorRegistry()
    llm = SyncLlmCache(InProcessClient(), "o", registry=registry)
    assert llm.wrap(lambda **params: response)(**CHAT_PARAMS) == response
    events = _sample(registry, "agent_memory_events_total", name="o", event="usage_failures")
    assert (events or 0) == failures


def test_counters_taken_by_an_abandoned_batch_go_back_to_the_buffer() -> None:
    from agent_memory.cache.keys import KeyLayout
    from agent_memory.cache.stats import StatsBuffer, batch_with_stats

    buffer = StatsBuffer()
    buffer.add({"llm:hits": 2})
    op = batch_with_stats(KeyLayout("c"), buffer, [])
    assert isinstance(op.send(None), Batch)  # the counters are in flight...
    op.close()  # ...when a cancellation abandons the operation
    assert buffer.take() == {"llm:hits": 2}


@pytest.mark.parametrize("name", ["app:session", "app:session:b", "x:session:"])
def test_session_names_that_would_share_another_names_threads_are_refused(name: str) -> None:
    """Thread ids are any text: name ``app:session:b`` with thread ``c`` would be the key
    of name ``app`` with thread ``b:session:c``."""
    for make in (SyncSessionStore, SessionStore):
        with pytest.raises(InvalidInputError, match="session") as info:
            make(InProcessClient() if make is SyncSessionStore else AsyncInProcessClient(), name)
        assert info.value.field == "name"
    SyncSessionStore(InProcessClient(), "app:sessions").set("t", "k", "v")  # a mere prefix
