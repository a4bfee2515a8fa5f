"""Labels, labeler, selections and utility, reinforcement, forgetting, memory tool."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent_memory import (
    Forgetting,
    InvalidInputError,
    LabelPolicy,
    NotFoundError,
    Scope,
    memory_tool,
)
from agent_memory.core.effects import command, execute_batch
from agent_memory.store.ops import learn
from tests.store.conftest import StoreEnv
from tests.store.test_ranking import Clock
from tests.support import TableEmbedder, count_round_trips, near, random_unit, raw_command

DAY = 86400.0


def _raw_store(store: Any) -> Any:
    return getattr(store, "wrapped", store)


async def _fields(store: Any, memory_id: str, *names: str) -> list[Any]:
    s = _raw_store(store)
    result = s.client.execute_command("HMGET", s._ctx.keys.memory(memory_id), *names)
    values = await result if hasattr(result, "__await__") else result
    return [v.decode() if isinstance(v, bytes) else v for v in values]


def _world(n: int = 3) -> tuple[TableEmbedder, list[float]]:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    for i in range(n):
        embed.set(f"m{i}", near(q, 0.10 + 0.01 * i, f"s{i}"))
    return embed, q


async def test_labels_are_normalised_policed_and_filter(env: StoreEnv) -> None:
    embed, _ = _world()
    policy = LabelPolicy(allowed_keys=frozenset({"topic", "kind"}), max_values_per_key=2)
    store = env.make(embed, label_policy=policy)
    a = await store.remember("m0", labels={" Topic ": ["Deploys", "deploys ", "CI"]})
    b = await store.remember("m1", labels={"topic": ["deploys"], "kind": ["decision"]})
    await store.remember("m2", labels={"kind": ["decision"]})
    item = await store.get(a)
    assert dict(item.labels) == {"topic": ("ci", "deploys")}
    with pytest.raises(InvalidInputError):
        await store.remember("m0", labels={"colour": ["red"]})
    with pytest.raises(InvalidInputError):
        await store.remember("m0", labels={"topic": ["a", "b", "c"]})
    topic = await store.recall("query", labels={"topic": ["deploys", "nothing"]})
    assert {h.item.id for h in topic} == {a, b}
    both = await store.recall("query", labels={"topic": ["deploys"], "kind": ["Decision"]})
    assert [h.item.id for h in both] == [b]


async def test_labeler_labels_after_commit_and_its_failure_is_harmless(env: StoreEnv) -> None:
    embed, _ = _world()
    calls: list[str] = []

    def labeler(text: str) -> dict[str, list[str]]:
        calls.append(text)
        if text == "m1":
            raise RuntimeError("labeler down")
        return {"topic": ["deploys"]} if text in ("m0", "query") else {}

    store = env.make(embed, labeler=labeler)
    a = await store.remember("m0")
    b = await store.remember("m1")  # labeler fails: still stored, unlabelled
    await store.remember("m2")
    assert dict((await store.get(a)).labels) == {"topic": ("deploys",)}
    assert dict((await store.get(b)).labels) == {}
    stats = _raw_store(store)._ctx.counters
    assert stats["labeler_failures"] == 1
    hits = await store.recall("query", k=3)
    # query labels only boost: every memory still comes back, the labelled one first
    assert len(hits) == 3 and hits[0].item.id == a
    assert "query" in calls


async def test_complete_is_one_observation_applied_once(env: StoreEnv) -> None:
    embed, _ = _world()
    store = env.make(embed)
    ids = [await store.remember(f"m{i}") for i in range(3)]
    result = await store.recall("query", k=3)
    assert len(result) == 3
    outcomes = await asyncio.gather(*(store.complete(result.selection_id, 1.0) for _ in range(50)))
    assert outcomes.count(True) == 1
    assert await store.complete(result.selection_id, 1.0) is False
    for memory_id in ids:
        total, weight, exposures = await _fields(
            store, memory_id, "eval_sum", "eval_weight", "exposures"
        )
        assert float(weight) == pytest.approx(1 / 3)
        assert float(total) == pytest.approx(0.5 / 3)
        assert exposures is None  # counted in the usage hash, never in the indexed document
        assert (await store.get(memory_id)).exposures == 1
    assert (await store.get(ids[0])).utility > 0
    with pytest.raises(InvalidInputError):
        await store.complete(result.selection_id, 1.5)
    with pytest.raises(InvalidInputError):
        await store.complete(result.selection_id, -(10**400))
    with pytest.raises(InvalidInputError):
        await store.complete("not-a-selection", 0.5)
    assert await store.complete("0" * 32, 0.5) is False


async def test_complete_is_two_round_trips_and_unlists_its_receipt(env: StoreEnv) -> None:
    """The receipt read, then the evaluation with the receipt's removal from the
    receipt index in one round trip."""
    embed, _ = _world()
    store = env.make(embed, adopt_interval=None)
    await store.remember("m0")
    result = await store.recall("query", k=3)
    raw = getattr(store, "wrapped", store)
    assert await raw_command(store, "ZSCORE", raw._ctx.keys.receipts, result.selection_id)
    counting = count_round_trips(store)
    assert await store.complete(result.selection_id, 0.9)
    assert counting.round_trips == 2
    assert await raw_command(store, "ZSCORE", raw._ctx.keys.receipts, result.selection_id) is None
    assert raw._ctx.counters.get("completions") == 1


async def test_complete_with_a_scope_applies_only_that_scopes_selections(env: StoreEnv) -> None:
    """A service completing for one tenant passes its scope: another tenant's selection
    id changes nothing and stays completable in its own scope."""
    embed, _ = _world()
    store = env.make(embed)
    a, b = Scope(namespace="tenant-a"), Scope(namespace="tenant-b", session_id="s")
    ids_a = [await store.remember(f"m{i}", scope=a) for i in range(2)]
    await store.remember("m2", scope=b)
    in_a = await store.recall("query", scope=a, k=3)
    in_b = await store.recall("query", scope=b, k=3)
    assert len(in_a) == 2 and len(in_b) == 1
    assert await store.complete(in_b.selection_id, 1.0, scope=a) is False
    assert (
        await store.complete(
            in_a.selection_id, 1.0, scope=Scope(namespace="tenant-a", session_id="s")
        )
        is False
    )
    assert await store.complete(in_a.selection_id, 1.0, scope=Scope()) is False
    for memory_id in ids_a:  # nothing applied by the refused calls
        assert (await _fields(store, memory_id, "eval_weight")) == [None]
    assert await store.complete(in_a.selection_id, 1.0, scope=a) is True
    assert await store.complete(in_a.selection_id, 1.0, scope=a) is False
    assert await store.complete(in_b.selection_id, 0.0, scope=b) is True
    for memory_id in ids_a:
        assert float((await _fields(store, memory_id, "eval_weight"))[0]) == pytest.approx(1 / 2)
    default = await store.recall("query", k=1)  # no scope: the default scope, Scope()
    assert await store.complete(default.selection_id, 1.0, scope=Scope()) is (len(default) > 0)
    with pytest.raises(InvalidInputError, match="scope"):
        await store.complete(in_a.selection_id, 1.0, scope="tenant-a")  # type: ignore[arg-type]


async def test_complete_with_a_scope_refuses_a_receipt_that_names_none(env: StoreEnv) -> None:
    """A receipt an older release wrote records no scope: it can still be completed
    without one, never with one."""
    embed, _ = _world()
    store = env.make(embed)
    await store.remember("m0", scope=Scope(namespace="n"))
    result = await store.recall("query", scope=Scope(namespace="n"), k=1)
    key = _raw_store(store)._ctx.keys.receipt(result.selection_id)
    receipt = json.loads(await raw_command(store, "GET", key))
    del receipt["scope"]
    await raw_command(store, "SET", key, json.dumps(receipt))
    assert await store.complete(result.selection_id, 1.0, scope=Scope(namespace="n")) is False
    assert await store.complete(result.selection_id, 1.0) is True


async def test_complete_reaches_every_memory_when_one_is_damaged(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """Learning data no writer makes (another writer's, or a bit rot's) in one memory of
    a selection does not stop its completion: that memory's aggregates start again from
    this evaluation, a memory whose key holds another type is left alone, each is logged
    and counted, and every other memory learns as usual (one script runs them all)."""
    embed, _ = _world(5)
    # the query's labels make a learning context (the memories have none)
    store = env.make(embed, labeler=lambda text: {"topic": ["a"]} if text == "query" else {})
    ids = [await store.remember(f"m{i}") for i in range(5)]
    first = await store.recall("query", k=5)
    assert len(first) == 5
    assert await store.complete(first.selection_id, 1.0)  # every memory has a context now
    result = await store.recall("query", k=5)
    assert len(result) == 5
    raw = _raw_store(store)
    key = raw._ctx.keys.memory
    damage: list[tuple[Any, ...]] = [
        ("HSET", key(ids[0]), "utility_ctx", "not json"),
        ("HSET", key(ids[1]), "eval_sum", "many", "eval_weight", "nan"),
        ("HSET", key(ids[2]), "utility_ctx", '{"x": [1, "a", 3]}'),
        ("DEL", key(ids[4])),
        ("SET", key(ids[4]), "not a hash"),
    ]
    for args in damage:
        reply = raw.client.execute_command(*args)
        if hasattr(reply, "__await__"):
            await reply
    before = raw._ctx.counters.get("corrupt_records", 0)
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        assert await store.complete(result.selection_id, 1.0) is True
    assert raw._ctx.counters.get("corrupt_records", 0) - before == 4
    assert caplog.text.count("learning data no writer makes") == 3
    assert caplog.text.count("holds no hash") == 1
    assert await store.complete(result.selection_id, 1.0) is False
    healthy = await _fields(store, ids[3], "eval_sum", "eval_weight")
    assert [float(v) for v in healthy] == pytest.approx([0.2, 0.4])
    repaired = await _fields(store, ids[1], "eval_sum", "eval_weight")
    assert [float(v) for v in repaired] == pytest.approx([0.1, 0.2])
    for memory_id in ids[:4]:
        item = await store.get(memory_id)
        assert item is not None and item.utility > 0  # still readable, still learning
    contexts = json.loads((await _fields(store, ids[0], "utility_ctx"))[0])
    assert len(contexts) == 1 and len(next(iter(contexts.values()))) == 3
    value = raw.client.execute_command("GET", key(ids[4]))
    value = await value if hasattr(value, "__await__") else value
    assert value in (b"not a hash", "not a hash")  # left alone


async def test_recall_ranks_memories_whose_learning_context_or_labels_are_damaged(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """A recall in a learning context reads each candidate's per-context usefulness and
    labels; damaged ones (no writer makes them) are logged and counted, the memory ranks
    without the damaged part and is still returned, and the next evaluation repairs the
    usefulness per context."""
    embed, _ = _world(4)
    store = env.make(
        embed,
        reinforcement=True,
        labeler=lambda text: {"topic": ["a"]} if text == "query" else {},
    )
    ids = [await store.remember(f"m{i}") for i in range(4)]
    first = await store.recall("query", k=4)
    assert await store.complete(first.selection_id, 1.0)  # every memory has a context
    raw = _raw_store(store)
    key = raw._ctx.keys.memory
    (good,) = json.loads((await _fields(store, ids[1], "utility_ctx"))[0]).items()
    partly = json.dumps({good[0]: good[1], "other": [1, "a", 3]})
    damage: list[tuple[Any, ...]] = [
        ("HSET", key(ids[0]), "utility_ctx", "not json"),
        ("HSET", key(ids[1]), "utility_ctx", partly),
        ("HSET", key(ids[2]), "labels_json", "[1, 2]"),
        ("HSET", key(ids[3]), "utility_ctx", b"\xff\xfe not UTF-8"),
    ]
    for args in damage:
        reply = raw.client.execute_command(*args)
        if hasattr(reply, "__await__"):
            await reply

    async def recall_counted() -> tuple[Any, int, str]:
        before = raw._ctx.counters.get("corrupt_records", 0)
        caplog.clear()
        with caplog.at_level("WARNING", logger="agent_memory.store"):
            result = await store.recall("query", k=4)
        return result, raw._ctx.counters.get("corrupt_records", 0) - before, caplog.text

    result, counted, logged = await recall_counted()
    assert {h.item.id for h in result} == set(ids)
    assert counted == 4
    assert logged.count("per-context usefulness (utility_ctx) is damaged") == 3
    assert "1 of its 2 entries" in logged and "its labels is damaged" in logged
    assert await store.complete(result.selection_id, 1.0)  # rebuilds the three contexts
    result, counted, logged = await recall_counted()
    assert {h.item.id for h in result} == set(ids)
    assert counted == 1 and "utility_ctx" not in logged


async def test_feedback_sets_replaces_and_clears(env: StoreEnv) -> None:
    store = env.make()
    mid = await store.remember("x")
    await store.feedback(mid, 0.8)
    assert (await store.get(mid)).feedback == 0.8
    await store.feedback(mid, -0.5)
    assert (await store.get(mid)).feedback == -0.5
    await store.feedback(mid, None)
    item = await store.get(mid)
    assert item.feedback is None and item.utility == 0.0
    with pytest.raises(NotFoundError):
        await store.feedback("f" * 32, 1.0)
    with pytest.raises(InvalidInputError):
        await store.feedback(mid, 2.0)
    with pytest.raises(InvalidInputError, match="an integer of"):
        await store.feedback(mid, 10**400)  # beyond any float


async def test_utility_reorders_but_similarity_stays_the_gate(env: StoreEnv) -> None:
    embed, q = _world(2)
    embed.set("unrelated", near(q, 0.9, "u"))
    store = env.make(embed, reinforcement=True, default_threshold=0.3)
    good, plain = await store.remember("m1"), await store.remember("m0")
    unrelated = await store.remember("unrelated", importance=1.0)
    await store.feedback(unrelated, 1.0)
    before = await store.recall("query", reinforce=False)
    assert [h.item.id for h in before] == [plain, good]  # m0 is closer
    await store.feedback(good, 1.0)
    after = await store.recall("query", reinforce=False)
    assert [h.item.id for h in after] == [good, plain]
    assert unrelated not in {h.item.id for h in after}
    unrelated_only = await store.recall("query", k=8, threshold=0.3)
    assert unrelated not in {h.item.id for h in unrelated_only}


async def test_without_reinforcement_utility_does_not_rank(env: StoreEnv) -> None:
    embed, _ = _world(2)
    store = env.make(embed)
    good, plain = await store.remember("m1"), await store.remember("m0")
    await store.feedback(good, 1.0)
    hits = await store.recall("query", reinforce=False)
    assert [h.item.id for h in hits] == [plain, good]


async def test_forgetting_suppresses_protects_and_prunes(env: StoreEnv) -> None:
    clock = Clock()
    embed, _ = _world(3)
    forgetting = Forgetting(half_life_seconds=10 * DAY, min_half_life=DAY, max_half_life=100 * DAY,
                            retention_threshold=0.1)  # fmt: skip
    store = env.make(embed, clock=clock, forgetting=forgetting)
    fading, protected, hastened = [await store.remember(f"m{i}", importance=0.0) for i in range(3)]
    await store.feedback(protected, 1.0)
    await store.feedback(hastened, -0.9)
    clock.now += 3 * DAY
    # -0.9 feedback: half-life clamps to 1 day, retention exp(-3) < 0.1
    assert {h.item.id for h in await store.recall("query")} == {fading, protected}
    clock.now += 30 * DAY  # exp(-33/10) < 0.1 for the unprotected one
    assert {h.item.id for h in await store.recall("query")} == {protected}
    assert (await store.get(fading)).retention < 0.1  # inspectable
    assert (await store.list()).total == 1
    assert (await store.list(include_suppressed=True)).total == 3
    await store.feedback(fading, 0.5)  # suppressed memories still take feedback
    assert {h.item.id for h in await store.recall("query")} == {fading, protected}
    result = await store.prune()
    assert result.deleted == (hastened,)
    assert await store.get(hastened) is None
    assert (await store.list(include_suppressed=True)).total == 2


@pytest.mark.parametrize("meanwhile", ["feedback", "deleted elsewhere"])
async def test_prune_deletes_only_what_still_fades_and_counts_what_it_deleted(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch, meanwhile: str
) -> None:
    clock = Clock()
    embed, _ = _world(2)
    forgetting = Forgetting(half_life_seconds=10 * DAY, min_half_life=DAY, max_half_life=100 * DAY,
                            retention_threshold=0.1)  # fmt: skip
    store = env.make(embed, clock=clock, forgetting=forgetting)
    raw = getattr(store, "wrapped", store)
    rescued, fading = [await store.remember(f"m{i}", importance=0.0) for i in range(2)]
    clock.now += 60 * DAY
    judged = learn.suppressed

    def another_writer_between(ctx: Any, ids: Any) -> Any:
        victims = yield from judged(ctx, ids)
        key = ctx.keys.memory(rescued)
        change = (
            command("HSET", key, "manual_utility", "1.0")
            if meanwhile == "feedback"
            else command("DEL", key)
        )
        yield from execute_batch([change])  # after prune judged it, before it deletes
        return victims

    monkeypatch.setattr(learn, "suppressed", another_writer_between)
    result = await store.prune()
    assert result.deleted == (fading,)
    assert raw._ctx.counters["pruned"] == 1
    assert (await store.get(rescued) is not None) == (meanwhile == "feedback")


async def test_receipts_are_bounded(env: StoreEnv) -> None:
    embed, _ = _world(1)
    clock = Clock()
    store = env.make(embed, max_receipts=3, clock=clock)
    await store.remember("m0")
    selections = []
    for _ in range(5):
        clock.now += 1  # receipts age by the store's clock
        selections.append((await store.recall("query")).selection_id)
    assert await store.complete(selections[0], 1.0) is False  # dropped as the oldest
    assert await store.complete(selections[-1], 1.0) is True


async def test_memory_tool_writes_only_into_its_bound_scope(env: StoreEnv) -> None:
    store = env.make(label_policy=LabelPolicy(allowed_keys=frozenset({"topic"})))
    tool = memory_tool(_raw_store(store), namespace="tenant-a", agent_id="bot", session_id="s1")

    async def run(arguments: Any) -> Any:
        result = tool.run(arguments)
        return await result if hasattr(result, "__await__") else result

    out = await run({"text": "User is on the Pro plan", "labels": {"topic": ["billing"]},
                     "durability": "session", "importance": 0.7})  # fmt: skip
    item = await store.get(out["id"])
    assert item.scope == Scope(namespace="tenant-a", agent_id="bot", session_id="s1")
    assert item.durability == "session" and item.source == "tool"
    await run('{"text": "JSON arguments work too"}')
    for hostile in (
        {"text": "x", "namespace": "tenant-b"},
        {"text": "x", "session_id": "s2"},
        {"text": "x", "scope": {"namespace": "tenant-b"}},
        {"text": "x", "agent_id": "other"},
        {"text": "x", "extra": 1},
        {"text": "x", "labels": {"colour": ["red"]}},
        {"text": ""},
        "not json",
    ):
        with pytest.raises(InvalidInputError):
            await run(hostile)
    assert (await store.list(scope=Scope(namespace="tenant-b"))).total == 0
    assert (await store.list(scope=Scope(namespace="tenant-a", session_id="s1"))).total == 1
    assert (await store.list(scope=Scope(namespace="tenant-a"))).total == 1
    openai, anthropic = tool.to_openai(), tool.to_anthropic()
    assert openai["function"]["name"] == anthropic["name"] == "save_memory"
    schema = anthropic["input_schema"]
    assert schema["additionalProperties"] is False and schema["required"] == ["text"]
    assert "namespace" not in schema["properties"] and "session_id" not in schema["properties"]
    assert schema["properties"]["labels"]["propertyNames"]["enum"] == ["topic"]
    unbound = memory_tool(_raw_store(store), namespace="tenant-a")
    assert unbound.parameters["properties"]["durability"]["enum"] == ["shared"]
    with pytest.raises(InvalidInputError):
        unbound.prepare({"text": "x", "durability": "session"})


def test_forgetting_bounds_default_relative_to_the_half_life() -> None:
    hour = Forgetting(half_life_seconds=3600)
    assert hour.min_half_life == pytest.approx(120) and hour.max_half_life == pytest.approx(43800)
    default = Forgetting()
    assert default.min_half_life == pytest.approx(DAY) and default.max_half_life == pytest.approx(
        365 * DAY
    )
    assert Forgetting(half_life_seconds=60, min_half_life=1, max_half_life=60).shortest == 1
    with pytest.raises(InvalidInputError):
        Forgetting(half_life_seconds=3600, min_half_life=DAY)  # explicit bounds must enclose it
    with pytest.raises(InvalidInputError):
        Forgetting(half_life_seconds=0)
