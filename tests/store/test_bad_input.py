"""Every bad input raises a library exception naming the problem and changes nothing."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from agent_memory import (
    AgentMemoryError,
    Forgetting,
    InvalidInputError,
    LabelPolicy,
    NotFoundError,
    Scope,
)
from tests.store.conftest import StoreEnv
from tests.support import DIM, TableEmbedder, random_unit, raw_command


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
    ("importance beyond a float", {"content": "x", "importance": 10**400}, "importance"),
    ("tags as a mapping", {"content": "x", "tags": {"a": 1}}, "tags"),
    ("label key lone surrogate", {"content": "x", "labels": {"k\ud800": ["v"]}}, "labels"),
    ("label value lone surrogate", {"content": "x", "labels": {"k": ["v\udc80"]}}, "labels"),
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


def test_dedupe_and_capacity_arguments_name_themselves(env: StoreEnv) -> None:
    """A bad ``dedupe_distance`` used to be reported as a bad ``threshold``."""
    for bad in (float("nan"), float("inf"), -0.01, 2.01, True, "0.1", None):
        with pytest.raises(InvalidInputError, match="dedupe_distance") as caught:
            env.make(dedupe_distance=bad)
        assert caught.value.field == "dedupe_distance"
    for bad in (0, -1, True, 2.5, 5.0, "5", float("nan")):
        with pytest.raises(InvalidInputError, match="max_items_per_scope") as caught:
            env.make(max_items_per_scope=bad)
        assert caught.value.field == "max_items_per_scope"


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


HUGE = 10**400  # a JSON integer no float holds
BAD_IMPORTS: list[tuple[str, dict[str, Any], str]] = [
    ("eval_weight -1", {"learning": {"eval_sum": "1", "eval_weight": "-1"}}, "learning.eval_weight"),
    ("eval_sum beyond its weight", {"learning": {"eval_sum": "1e308", "eval_weight": "1e-308"}},
     "learning.eval_sum"),
    ("manual 5", {"learning": {"manual_utility": "5"}}, "learning.manual_utility"),
    ("manual -5", {"learning": {"manual_utility": -5}}, "learning.manual_utility"),
    ("reinforced 1e300", {"learning": {"last_reinforced_at": "1e300"}}, "learning.last_reinforced_at"),
    ("context weight -1", {"learning": {"utility_ctx": json.dumps({"c": [1, -1, 5]})}},
     "learning.utility_ctx"),
    ("context lone surrogate", {"learning": {"utility_ctx": '{"a\ud800": [1, 1, 1]}'}},
     "learning.utility_ctx"),
    ("created_at 2**70", {"created_at": 2**70}, "created_at"),
    ("created_at negative", {"created_at": -5}, "created_at"),
    ("access_count 2**70", {"access_count": 2**70}, "access_count"),
    ("exposures 2**70", {"exposures": 2**70}, "exposures"),
    ("tags as a mapping", {"tags": {"a": 1}}, "tags"),
    ("importance 10**400", {"importance": HUGE}, "importance"),
    ("ttl_remaining_ms 10**400", {"ttl_remaining_ms": HUGE}, "ttl_remaining_ms"),
    ("created_at 10**400", {"created_at": HUGE}, "created_at"),
    ("access_count 10**400", {"access_count": HUGE}, "access_count"),
    ("exposures 10**400", {"exposures": HUGE}, "exposures"),
    ("vector holding 10**400", {"vector": [HUGE] + [0.0] * (DIM - 1)}, "vector"),
    ("label key lone surrogate", {"labels": {"k\ud800": ["v"]}}, "labels"),
    ("label value lone surrogate", {"labels": {"k": ["v\ud800"]}}, "labels"),
    ("label outside the policy", {"labels": {"secret": ["v"]}}, "labels"),
    # falsy values of the wrong type are not the default (absent or null is)
    *((f"scope {v!r}", {"scope": v}, "scope") for v in ("", [], 0, False)),
    *((f"metadata {v!r}", {"metadata": v}, "metadata") for v in ("", [], 0, False)),
    *((f"labels {v!r}", {"labels": v}, "labels") for v in ("", [], 0, False)),
    *((f"tags {v!r}", {"tags": v}, "tags") for v in ("", 0, False)),
    *((f"learning {v!r}", {"learning": v}, "learning") for v in ("", [], 0, False)),
    ("embedder 7", {"embedder": 7}, "embedder"),
]  # fmt: skip


async def _export(store: Any) -> list[dict[str, Any]]:
    result = store.export()
    if hasattr(result, "__aiter__"):
        return [r async for r in result]
    generator = await result  # AsyncView: the sync generator comes back from the thread
    return await asyncio.to_thread(list, generator)


async def test_bad_import_records_name_record_and_field_and_write_nothing(env: StoreEnv) -> None:
    """Each record outside what the store's own writes accept (remember's checks with the
    label policy, feedback's range, learning aggregates an evaluation could make, times a
    datetime holds, counts the scripts add to exactly) is refused with the record and the
    field named, before any record of its batch is written; the memories already stored
    keep their state."""
    store = env.make(label_policy=LabelPolicy(allowed_keys=frozenset({"topic"})))
    existing = await store.remember("existing", labels={"topic": ["a"]})
    await store.feedback(existing, 0.5)
    before = await _snapshot(store)
    good = {"id": "a" * 32, "content": "good one", "vector": random_unit("good")}
    errors = []
    for case, changes, field in BAD_IMPORTS:
        bad = {"id": "b" * 32, "content": "bad one", **changes}
        try:
            await store.import_records([good, bad])
        except InvalidInputError as exc:
            if exc.field != field or "record 2 of 2" not in str(exc) or "b" * 32 not in str(exc):
                errors.append(f"{case}: field {exc.field!r}, {exc}")
        except (AgentMemoryError, ArithmeticError, ValueError, TypeError) as exc:
            errors.append(f"{case}: {type(exc).__name__}: {exc}"[:200])
        else:
            errors.append(f"{case}: imported")
            await store.forget("b" * 32)
        await store.forget("a" * 32)  # present only if the batch was (partly) written
    assert errors == []
    assert await _snapshot(store) == before
    item = await store.get(existing)
    assert item is not None and item.feedback == 0.5 and dict(item.labels) == {"topic": ("a",)}


async def test_a_stored_negative_eval_weight_is_an_unreadable_memory(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """A negative eval_weight (no evaluation makes one; an older import let it in) divided
    by zero in every read of the namespace: the memory is skipped like any unreadable one,
    logged and counted, every read returns the others, prune keeps it, and it can be
    forgotten. An export keeps it, without the damaged learning state."""
    embed = TableEmbedder()
    embed.set("query", random_unit("q"))
    forgetting = Forgetting(half_life_seconds=30 * 86400.0)
    store = env.make(embed, default_threshold=2.0, reinforcement=True, forgetting=forgetting)
    raw = getattr(store, "wrapped", store)
    healthy = await store.remember("healthy note")
    victims = [await store.remember(f"damaged note {w}") for w in ("-1", "-0.5")]
    for victim, weight in zip(victims, ("-1", "-0.5"), strict=True):
        await raw_command(
            store, "HSET", raw._ctx.keys.memory(victim), "eval_sum", "1", "eval_weight", weight
        )
    before = raw._ctx.counters.get("corrupt_records", 0)
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        assert [i.id for i in (await store.list()).items] == [healthy]
        assert [h.item.id for h in await store.recall("query", k=5)] == [healthy]
        exported = await _export(store)
        assert [r["id"] for r in exported] == [healthy, *victims]
        assert not any({"eval_sum", "eval_weight"} & set(r["learning"]) for r in exported[1:])
        for victim in victims:
            assert await store.get(victim) is None
        assert not (await store.prune()).deleted
    assert raw._ctx.counters.get("corrupt_records", 0) > before
    assert "eval_weight" in caplog.text and "negative" in caplog.text
    for victim in victims:
        assert await store.forget(victim) is True
    assert (await store.list()).total == 1


async def test_export_leaves_out_learning_state_import_would_refuse(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """A manual usefulness outside feedback's range or per-context entries with a negative
    weight (stored by an older import) travel without the damaged part, logged and
    counted, so the exported record imports."""
    embed = TableEmbedder()
    source = env.make(embed)
    mid = await source.remember("learned")
    raw = getattr(source, "wrapped", source)
    contexts = json.dumps({"good": [0.25, 1.0, 1700000000000], "bad": [1, -1, 5]})
    await raw_command(
        source, "HSET", raw._ctx.keys.memory(mid), "manual_utility", "5", "utility_ctx", contexts
    )
    before = raw._ctx.counters.get("corrupt_records", 0)
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        (record,) = await _export(source)
    assert raw._ctx.counters.get("corrupt_records", 0) - before == 2
    assert caplog.text.count("exported without it") == 2
    assert "manual_utility" not in record["learning"]
    assert json.loads(record["learning"]["utility_ctx"]) == {"good": [0.25, 1.0, 1700000000000]}
    target = env.make(embed)
    assert await target.import_records([record]) == [mid]
    item = await target.get(mid)
    assert item is not None and item.feedback is None
