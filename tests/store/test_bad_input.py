"""Every bad input raises a library exception naming the problem and changes nothing."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agent_memory import AgentMemoryError, InvalidInputError, NotFoundError, Scope
from tests.store.conftest import StoreEnv
from tests.support import TableEmbedder


class BadEmbedder(TableEmbedder):
    def __init__(self, bad: Any) -> None:
        super().__init__()
        self.bad = bad

    def __call__(self, text: str) -> Any:
        return self.bad if text == "poison" else super().__call__(text)


BAD_REMEMBER: list[tuple[str, dict[str, Any], str]] = [
    ("empty content", {"content": ""}, "content"),
    ("blank content", {"content": "   \n"}, "content"),
    ("oversized content", {"content": "x" * 5000}, "content"),
    ("non-str content", {"content": 42}, "content"),
    ("None content", {"content": None}, "content"),
    ("control chars", {"content": "a\x00b"}, "content"),
    ("lone surrogate", {"content": "bad \ud800"}, "content"),
    ("importance > 1", {"content": "x", "importance": 1.5}, "importance"),
    ("importance < 0", {"content": "x", "importance": -0.1}, "importance"),
    ("importance NaN", {"content": "x", "importance": math.nan}, "importance"),
    ("importance str", {"content": "x", "importance": "high"}, "importance"),
    ("negative ttl", {"content": "x", "ttl": -1}, "ttl"),
    ("zero ttl", {"content": "x", "ttl": 0}, "ttl"),
    ("absurd ttl", {"content": "x", "ttl": 1e12}, "ttl"),
    ("inf ttl", {"content": "x", "ttl": math.inf}, "ttl"),
    ("tags as str", {"content": "x", "tags": "abc"}, "tags"),
    ("empty tag", {"content": "x", "tags": [""]}, "tags"),
    ("non-str tag", {"content": "x", "tags": [1]}, "tags"),
    ("huge tag list", {"content": "x", "tags": [f"t{i}" for i in range(1000)]}, "tags"),
    ("bad metadata", {"content": "x", "metadata": {"a": object()}}, "metadata"),
    ("metadata lone surrogate", {"content": "x", "metadata": {"a": "b\udc80"}}, "metadata"),
    ("metadata key surrogate", {"content": "x", "metadata": {"\ud800": 1}}, "metadata"),
    ("session without id", {"content": "x", "durability": "session"}, "durability"),
    ("bad durability", {"content": "x", "durability": "forever"}, "durability"),
    ("scope not a Scope", {"content": "x", "scope": {"agent_id": "a"}}, "scope"),
]


async def _snapshot(store: Any) -> tuple[int, list[str]]:
    page = await store.list(limit=100)
    return page.total, sorted(i.content for i in page.items)


@pytest.mark.parametrize(
    ("case", "kwargs", "field"), BAD_REMEMBER, ids=[c[0] for c in BAD_REMEMBER]
)
async def test_bad_remember_arguments(
    env: StoreEnv, case: str, kwargs: dict[str, Any], field: str
) -> None:
    store = env.make(max_content_bytes=4096)
    await store.remember("existing")
    before = await _snapshot(store)
    kwargs = dict(kwargs)
    content = kwargs.pop("content")
    with pytest.raises(InvalidInputError) as info:
        await store.remember(content, **kwargs)
    assert info.value.field == field
    with pytest.raises(InvalidInputError):
        await store.remember_many([{"content": "fine"}, {"content": content, **kwargs}])
    assert await _snapshot(store) == before


@pytest.mark.parametrize(
    "vector",
    [
        [math.nan] * 16,
        [math.inf] * 16,
        [0.0] * 16,
        [1.0] * 8,
        ["a"] * 16,
        "not a vector",
        [[1.0] * 16],
    ],
    ids=["nan", "inf", "zero", "wrong-dim", "strings", "str", "nested"],
)
async def test_bad_vectors_from_embedder_or_caller(env: StoreEnv, vector: Any) -> None:
    store = env.make(BadEmbedder(vector))
    await store.remember("existing")
    before = await _snapshot(store)
    with pytest.raises(InvalidInputError):
        await store.remember("poison")
    with pytest.raises(InvalidInputError):
        await store.recall("poison")
    with pytest.raises(InvalidInputError):
        await store.recall_by_vector(vector)
    assert await _snapshot(store) == before


async def test_bad_ids_and_unknown_ids(env: StoreEnv) -> None:
    store = env.make()
    await store.remember("existing")
    before = await _snapshot(store)
    for bad in ["", "a b", "../x", "*", None, 5, "x" * 200]:
        with pytest.raises(InvalidInputError):
            await store.get(bad)
        with pytest.raises(InvalidInputError):
            await store.forget(bad)
    assert await store.get("f" * 32) is None
    assert await store.forget("f" * 32) is False
    with pytest.raises(NotFoundError):
        await store.update("f" * 32, importance=0.5)
    assert await _snapshot(store) == before


async def test_bad_recall_arguments(env: StoreEnv) -> None:
    store = env.make()
    for kwargs in ({"k": 0}, {"k": -1}, {"k": 10**6}, {"k": 2.5}, {"threshold": 3}, {"threshold": -0.1},
                   {"threshold": math.nan}, {"tags": "x"}, {"scope": "ns"}):  # fmt: skip
        with pytest.raises(InvalidInputError):
            await store.recall("query", **kwargs)
    with pytest.raises(InvalidInputError):
        await store.recall("")
    with pytest.raises(InvalidInputError):
        await store.list(limit=0)
    with pytest.raises(InvalidInputError):
        await store.list(offset=-1)


def test_scope_validates_itself() -> None:
    for bad in ({"namespace": ""}, {"agent_id": 5}, {"thread_id": "x" * 600}):
        with pytest.raises(InvalidInputError):
            Scope(**bad)


def test_constructor_arguments(env: StoreEnv) -> None:
    for kwargs in ({"default_threshold": 5}, {"half_life_seconds": 0}, {"max_items_per_scope": 0},
                   {"backend": "nope"}, {"config_refresh": -1}, {"max_content_bytes": 0},
                   {"ft_dialect": "newest"}, {"lexical_budget": 0}, {"lexical_budget": -5},
                   {"lexical_budget": 2.5}, {"lexical_budget": "200"}):  # fmt: skip
        with pytest.raises(InvalidInputError):
            env.make(**kwargs)
    for bad_name in ("", "with space", "{tag}", "x" * 200):
        with pytest.raises(InvalidInputError):
            env.make(name=bad_name)
    with pytest.raises(AgentMemoryError):
        env.make(embed="not callable")


def test_unknown_client_option_is_bad_input_at_once() -> None:
    """Raised by from_url itself (before any I/O), with the client's reason, never later
    as a server error; the URL's password does not appear."""
    from agent_memory import MemoryStore, SyncMemoryStore

    for cls in (MemoryStore, SyncMemoryStore):
        with pytest.raises(InvalidInputError) as caught:
            cls.from_url(
                "redis://user:hunter2@127.0.0.1:1",
                name="x",
                embed=TableEmbedder(),
                client_no_such_option=1,
            )
        assert "no_such_option" in str(caught.value) and "hunter2" not in str(caught.value)


async def test_embedder_failures_are_one_exception(env: StoreEnv) -> None:
    """Whether the probe at ensure_index or a write fails, the embedder's failure is an
    EmbedderError (an InvalidInputError and a CapabilityError) caused by the original."""
    from agent_memory import CapabilityError, EmbedderError

    class Broken:
        def __call__(self, text: str) -> list[float]:
            raise RuntimeError("model not loaded")

    store = env.make(Broken())
    for call in (store.ensure_index, lambda: store.remember("x")):
        with pytest.raises(EmbedderError) as caught:
            await call()
        assert isinstance(caught.value, InvalidInputError)
        assert isinstance(caught.value, CapabilityError)
        assert isinstance(caught.value.__cause__, RuntimeError)
