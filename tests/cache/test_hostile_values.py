"""Text that is not valid Unicode and numbers beyond a float, in what the cache tiers key
and store (every server kind, every client flavour).

What is hashed into a key must be valid Unicode and its integers within a float's range:
anything else is refused with :class:`InvalidInputError` naming the argument, before
anything is sent. A value to be stored that holds a lone surrogate is kept as a JSON
escape, so a store never fails half-way and a later lookup returns the same text.
"""

from __future__ import annotations

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
from agent_memory.cache.keys import MAX_JSON_INT
from agent_memory.errors import InvalidInputError
from tests.cache.conftest import CHAT_PARAMS, Env

LONE = "x\ud800y"
HUGE = (10**5000, -(10**400), MAX_JSON_INT + 1)


def _params(content: Any = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}], **extra}


async def _refused(call: Any, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await call
    assert caught.value.field == field, caught.value


async def test_a_lone_surrogate_in_what_is_hashed_is_refused_before_anything_is_sent(
    env: Env,
) -> None:
    llm = env.make(LlmCache, SyncLlmCache)
    tools = env.make(ToolCache, SyncToolCache)
    vectors = env.make(EmbeddingCache, SyncEmbeddingCache)
    await _refused(llm.check(_params(LONE)), "params")
    await _refused(llm.check({**CHAT_PARAMS, "stop": [LONE]}), "params")
    await _refused(llm.store(_params(LONE), "answer"), "params")
    await _refused(tools.check("search", {"q": LONE}), "args")
    await _refused(tools.check("search", {LONE: 1}), "args")
    await _refused(tools.store("search", {"q": LONE}, "rows"), "args")
    await _refused(vectors.get_many("m", ["a", LONE]), "texts")
    await _refused(vectors.put_many("m", [LONE], [[1.0]]), "texts")
    await _refused(vectors.embed_many("m", [LONE], lambda texts: [[1.0]] * len(texts)), "texts")
    assert env.keys() == []  # not even a counter


async def test_integers_beyond_a_float_are_refused_before_anything_is_sent(env: Env) -> None:
    llm = env.make(LlmCache, SyncLlmCache)
    tools = env.make(ToolCache, SyncToolCache)
    sessions = env.make(SessionStore, SyncSessionStore)
    vectors = env.make(EmbeddingCache, SyncEmbeddingCache)
    for number in HUGE:
        await _refused(llm.check(_params(seed=number)), "params")
        await _refused(llm.store(CHAT_PARAMS, {"n": [number]}), "response")
        await _refused(tools.check("calc", {"n": number}), "args")
        await _refused(tools.store("calc", {"n": 1}, number), "result")
        await _refused(sessions.set("t", "k", {"n": number}), "value")
        await _refused(vectors.put_many("m", ["a"], [[1.0, number]]), "vectors")
    await _refused(vectors.embed_many("m", ["a"], lambda texts: [[float(2**200)]]), "embed")
    assert env.keys() == []
    params = _params(seed=MAX_JSON_INT)  # the largest a float holds is kept
    await llm.store(params, {"n": -MAX_JSON_INT})
    found = await llm.check(params)
    assert found.hit and found.response == {"n": -MAX_JSON_INT}


async def test_values_holding_a_lone_surrogate_are_stored_and_read_back(env: Env) -> None:
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    response = {"text": LONE, "other": "é \udc00"}
    key = await llm.store(CHAT_PARAMS, response)
    assert "\\ud800" in env.raw.get(key)  # kept as a JSON escape
    found = await llm.check(CHAT_PARAMS)
    assert found.hit and found.response == response
    tools = env.make(ToolCache, SyncToolCache)
    await tools.store("search", {"q": 1}, {"rows": [LONE]})
    await tools.store("search", {"q": 2}, LONE)
    assert (await tools.check("search", {"q": 1})).result == {"rows": [LONE]}
    assert (await tools.check("search", {"q": 2})).result == LONE
    sessions = env.make(SessionStore, SyncSessionStore)
    await sessions.set("t", "k", [LONE, "é"])
    assert await sessions.get("t", "k") == [LONE, "é"]
    assert await sessions.get_all("t") == {"k": [LONE, "é"]}
    stats = await llm.stats()  # the one lookup is a hit, whoever decoded the entry
    assert (stats.llm_hits, stats.llm_misses) == (1, 0)
    assert env.events(registry, "corrupt_entries") == 0


async def test_a_wrapped_call_returning_a_lone_surrogate_is_cached(env: Env) -> None:
    registry = CollectorRegistry()
    llm = env.make(LlmCache, SyncLlmCache, registry=registry)
    calls: list[int] = []

    def complete(**params: Any) -> dict[str, str]:
        calls.append(1)
        return {"text": LONE}

    cached = llm.wrap(complete)
    assert await cached(**CHAT_PARAMS) == {"text": LONE}
    assert await cached(**CHAT_PARAMS) == {"text": LONE}
    assert calls == [1]
    assert env.events(registry, "store_failures") == 0
