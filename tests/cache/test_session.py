"""Session store against real servers (every kind, every client flavour)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent_memory.cache import SessionStore, SyncSessionStore
from agent_memory.errors import InvalidInputError
from tests.cache.conftest import FLAVOURS, Env, Flavour, Tier, open_env


def sessions(env: Env, **kwargs: Any) -> Tier:
    return env.make(SessionStore, SyncSessionStore, **kwargs)


async def test_get_set_get_all_delete_destroy(env: Env) -> None:
    store = sessions(env)
    assert await store.get("t1", "plan") is None
    assert await store.get_all("t1") == {}
    await store.set("t1", "plan", {"steps": ["a", "b"], "done": False})
    await store.set("t1", "user", "Ada")
    await store.set("t1", "count", 3)
    await store.set("t2", "user", "Bob")
    assert await store.get("t1", "plan") == {"steps": ["a", "b"], "done": False}
    assert await store.get("t1", "user") == "Ada"
    assert await store.get_all("t1") == {
        "plan": {"steps": ["a", "b"], "done": False},
        "user": "Ada",
        "count": 3,
    }
    assert env.raw.type(f"{env.name}:session:t1") == "hash"
    assert env.raw.hget(f"{env.name}:session:t1", "user") == json.dumps("Ada")
    assert await store.delete("t1", "user") is True
    assert await store.delete("t1", "user") is False
    assert await store.destroy_thread("t1") == 2
    assert await store.destroy_thread("t1") == 0
    assert await store.get_all("t1") == {}
    assert await store.get("t2", "user") == "Bob"


async def test_foreign_text_values_are_returned_as_text(env: Env) -> None:
    store = sessions(env)
    env.raw.hset(f"{env.name}:session:t", "raw", "not json {")
    assert await store.get("t", "raw") == "not json {"
    assert await store.get_all("t") == {"raw": "not json {"}


async def test_foreign_nan_and_infinity_are_text_not_numbers(env: Env) -> None:
    """``NaN`` and ``Infinity`` are not JSON (this library never writes them): another
    writer's field holding one is its text, not a float no value given to ``set`` can be."""
    store = sessions(env)
    foreign = {"a": "NaN", "b": "Infinity", "c": "-Infinity", "d": "[1, NaN]"}
    env.raw.hset(f"{env.name}:session:t", mapping=foreign)
    assert await store.get("t", "a") == "NaN"
    assert await store.get_all("t") == foreign


async def test_odd_thread_ids_and_keys(env: Env) -> None:
    store = sessions(env)
    for thread in ("a:b", "*", "{x}", "é"):
        await store.set(thread, "k*?", thread)
    for thread in ("a:b", "*", "{x}", "é"):
        assert await store.get_all(thread) == {"k*?": thread}
        assert await store.destroy_thread(thread) == 1


async def test_sliding_ttl(env: Env) -> None:
    store = sessions(env, ttl=100)
    key = f"{env.name}:session:t"
    await store.set("t", "a", 1)
    assert 99_000 < env.raw.pttl(key) <= 100_000
    env.raw.pexpire(key, 5_000)
    await store.get("t", "a")
    assert env.raw.pttl(key) > 99_000
    env.raw.pexpire(key, 5_000)
    await store.get_all("t")
    assert env.raw.pttl(key) > 99_000
    env.raw.pexpire(key, 5_000)
    assert await store.touch("t") is True
    assert env.raw.pttl(key) > 99_000
    env.raw.pexpire(key, 5_000)
    await store.delete("t", "missing")
    assert env.raw.pttl(key) > 99_000
    assert await store.touch("absent") is False
    assert env.raw.exists(f"{env.name}:session:absent") == 0


@pytest.mark.parametrize("flavour", [FLAVOURS[0], FLAVOURS[-1]], ids=lambda f: f.id)
async def test_sliding_ttl_really_expires(flavour: Flavour, plain_server: Any) -> None:
    async for env in open_env(flavour, plain_server.url, False):
        store = sessions(env, ttl=0.5)
        await store.set("t", "a", 1)
        for _ in range(3):  # accesses keep it alive past its TTL
            await asyncio.sleep(0.25)
            assert await store.get("t", "a") == 1
        await asyncio.sleep(0.75)
        assert await store.get("t", "a") is None


async def test_no_ttl(env: Env) -> None:
    store = sessions(env, ttl=None)
    await store.set("t", "a", 1)
    assert env.raw.pttl(f"{env.name}:session:t") == -1
    assert await store.touch("t") is True
    assert await store.touch("nope") is False


async def test_counters(env: Env) -> None:
    store = sessions(env)
    await store.set("t", "a", 1)
    await store.set("t", "b", 2)
    await store.get("t", "a")
    await store.get_all("t")
    await store.delete("t", "a")
    # known before the reply: counted in the operation's own pipeline
    assert env.raw.hgetall(f"{env.name}:__stats") == {
        "session:writes": "3",
        "session:reads": "2",
    }
    stats = await store.stats()
    assert (stats.session_reads, stats.session_writes) == (2, 3)


async def test_invalid_input_writes_nothing(env: Env) -> None:
    store = sessions(env)
    for call in (
        store.set("", "k", 1),
        store.set("t", "", 1),
        store.set("t", "k", object()),
        store.set("t", "k", float("nan")),
        store.get(None, "k"),
        store.destroy_thread(""),
    ):
        with pytest.raises(InvalidInputError):
            await call
    with pytest.raises(InvalidInputError):
        sessions(env, ttl=0)
    assert env.keys() == []
