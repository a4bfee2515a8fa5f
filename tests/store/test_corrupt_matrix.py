"""Every field of the layout x every kind of damage x every read path: one damaged memory
never aborts a read (issue 28).

For each field a memory hash can hold, and each value another writer (or a disk) could
leave in it (empty, ``NaN``, ``inf``, a negative number, a number too large for a 64-bit
integer, bytes that are not UTF-8, JSON nested deeper than Python parses), one memory of the store is damaged and every read
path runs: ``get``, ``list`` (all, a scope, by tag), ``recall``, ``recall_by_vector``,
``export``, ``stats``, ``consolidate``, ``prune`` and ``forget_by_scope`` of another
scope. Each must return every healthy memory and raise nothing; the damaged memory may
come back (a value the library can read, such as a negative count) or be skipped, and it
can always be forgotten. The registries and counters a read walks get the same
treatment. The combinations run inside one test per environment (one store each), so the
matrix costs seconds, not thousands of test set-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory import Forgetting, Scope
from agent_memory.errors import AgentMemoryError
from agent_memory.schema import layout as L
from agent_memory.schema import lexical
from agent_memory.schema.encoding import namespace_token
from tests.conftest import ALL_KINDS
from tests.store.conftest import CLIENT_CONFIGS, ENV_PARAMS, StoreEnv
from tests.support import TableEmbedder, near, random_unit

BAD_UTF8 = b"\xff\xfe bad"
DAMAGE = {
    "empty": b"",
    "NaN": b"NaN",
    "inf": b"inf",
    "negative": b"-5",
    "too large": b"99999999999999999999999",
    "not UTF-8": BAD_UTF8,
    "nested too deeply": b"[" * 5000 + b"]" * 5000,  # JSON deeper than Python parses
}
FIELDS = (
    *L.ITEM_FIELDS,
    L.F_VECTOR,
    L.F_SESSION_VECTOR,
    L.F_LEX,
    L.F_LEX_TERMS,
    L.F_LEX_TEXT,
    L.F_LABELS,
)
DAY = 86400.0
HEALTHY = ("first note", "second note")


async def _run(client: Any, *args: Any) -> Any:
    result = client.execute_command(*args)
    return await result if hasattr(result, "__await__") else result


async def _exported(store: Any) -> list[str]:
    exported = store.export()
    if hasattr(exported, "__aiter__"):
        return [record["id"] async for record in exported]
    records = await exported if hasattr(exported, "__await__") else exported
    return [record["id"] for record in records]


def _hset(env: StoreEnv, field: str, value: bytes) -> Callable[[str], list[Any]]:
    """The command writing ``value`` into ``field`` of a memory's hash. valkey-search
    1.0.2 leaves every other plain HSET of a hash this library wrote (through a script)
    unanswered, whatever the field or value (README "Limits"), but answers the same write
    made by a script, as the library's own writes are: so there the damage is scripted."""
    if env.server.kind == "valkey-search-1.0":
        script = "return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])"
        return lambda key: ["EVAL", script, "1", key, field, value]
    return lambda key: ["HSET", key, field, value]


async def _reads_survive(
    env: StoreEnv, store: Any, pruner: Any, good: list[str], victim: str, label: str
) -> None:
    """Every read path returns the healthy memories and raises nothing."""

    def healthy(ids: list[str]) -> None:
        missing = set(good) - set(ids)
        assert not missing, f"{label}: healthy memories missing {missing}"

    healthy([i.id for i in (await store.list(limit=100)).items])
    healthy([i.id for i in (await store.list(tags=["work"], limit=100)).items])
    healthy([i.id for i in (await store.list(scope=Scope(agent_id="a"), limit=100)).items])
    healthy([h.item.id for h in await store.recall("query", k=10)])
    by_vector = await store.recall_by_vector(random_unit("q"), k=10, threshold=2.0)
    healthy([h.item.id for h in by_vector])
    for memory_id in good:
        assert (await store.get(memory_id)) is not None, label
    await store.get(victim)  # the damaged one: returned or None, never an error
    healthy(await _exported(store))
    await store.stats()
    summarised: list[str] = []

    def summarize(items: list[Any]) -> str:
        summarised.extend(item.id for item in items)
        return "summary"

    report = await store.consolidate(
        mode="summary", scope=Scope(agent_id="a"), summarize=summarize, delete_sources=False
    )
    healthy(summarised)
    for summary in report.created:  # keep the store to the healthy memories and a victim
        await store.forget(summary)
    pruned = (await pruner.prune()).deleted  # 10-day half-life: nothing healthy goes
    assert not set(good) & set(pruned), f"{label}: prune deleted healthy memories"
    await store.forget_by_scope(Scope(agent_id="somebody else"))


@dataclass
class _Healthy:
    """A store holding the healthy memories, and a pruner over the same name."""

    embed: TableEmbedder
    store: Any
    raw: Any
    pruner: Any
    good: list[str]


async def _healthy_store(env: StoreEnv) -> _Healthy:
    embed = TableEmbedder()
    embed.set("query", random_unit("q"))
    store = env.make(embed, default_threshold=2.0)
    raw = getattr(store, "wrapped", store)
    pruner = env.make(embed, name=raw.name, forgetting=Forgetting(half_life_seconds=10 * DAY))
    good = []
    for text in HEALTHY:
        embed.set(text, near(random_unit("q"), 0.1, text))
        good.append(await store.remember(text, tags=["work"], scope=Scope(agent_id="a")))
    await store.recall("query")  # a portable mirror is filled before any damage
    return _Healthy(embed, store, raw, pruner, good)


# Every server kind once and every client configuration at least once (pairwise, as the
# client configurations themselves are): the ~80 damages x 10 read paths of one
# environment take 10-25 s, every combination of kind and client would take minutes.
PAIRWISE = [
    *((kind, CLIENT_CONFIGS[i % len(CLIENT_CONFIGS)]) for i, kind in enumerate(ALL_KINDS)),
    *((kind, cfg) for kind, cfg in ENV_PARAMS if kind == "inprocess"),
]


@pytest.mark.parametrize("env", PAIRWISE, ids=[f"{k}-{c.id}" for k, c in PAIRWISE], indirect=True)
async def test_one_damaged_field_never_aborts_a_read(env: StoreEnv) -> None:
    h = await _healthy_store(env)
    embed, store, raw, pruner, good = h.embed, h.store, h.raw, h.pruner, h.good
    scope = Scope(agent_id="a")

    damages: list[tuple[str, Callable[[str], list[Any]]]] = []
    for field in FIELDS:
        for name, value in DAMAGE.items():
            damages.append((f"{field}={name}", _hset(env, field, value)))
    errors: list[str] = []
    for n, (label, damage) in enumerate(damages):
        text = f"victim note {n}"
        embed.set(text, near(random_unit("q"), 0.2, text))
        victim = await store.remember(text, tags=["work"], scope=scope)
        await _run(raw.client, *damage(raw._ctx.keys.memory(victim)))
        try:
            await _reads_survive(env, store, pruner, good, victim, label)
        except (AgentMemoryError, AssertionError) as exc:
            errors.append(f"{label}: {exc!r}"[:300])
        assert await store.forget(victim) in (True, False), label  # always forgettable
        assert await store.get(victim) is None, label
    assert not errors, f"{len(errors)} of {len(damages)} damages broke a read:\n" + "\n".join(
        errors[:25]
    )


async def test_damaged_registries_and_counters_never_abort_a_read(env: StoreEnv) -> None:
    """The sets and counters a read walks: the namespace registry (a member that names
    no memory, one that is not UTF-8, a non-numeric score is impossible), the usage
    counters (``__mem_use``) and the term statistics (``__mem_df``)."""
    h = await _healthy_store(env)
    store, raw, pruner, good = h.store, h.raw, h.pruner, h.good
    keys = raw._ctx.keys
    registry = keys.registry(namespace_token(None))
    exposures, accesses = keys.usage_fields(good[0])
    damages = [
        ["ZADD", registry, "+inf", "no-such-memory"],
        ["ZADD", registry, "+inf", BAD_UTF8],
        *(["HSET", keys.usage, field, value] for field in (exposures, accesses)
          for value in DAMAGE.values()),
        *(["HSET", keys.term_stats(namespace_token(None)), field, value]
          for field in ("n", "len", "t:note") for value in DAMAGE.values()),
    ]  # fmt: skip
    errors = []
    for damage in damages:
        key, field = damage[1], damage[3] if damage[0] == "ZADD" else damage[2]
        before = None if damage[0] == "ZADD" else await _run(raw.client, "HGET", key, field)
        await _run(raw.client, *damage)
        try:
            await _reads_survive(env, store, pruner, good, good[0], repr(damage)[:80])
        except (AgentMemoryError, AssertionError) as exc:
            errors.append(f"{damage!r}: {exc!r}"[:300])
        if damage[0] == "ZADD":  # undo it: each damage is judged alone
            await _run(raw.client, "ZREM", key, field)
        elif before is None:
            await _run(raw.client, "HDEL", key, field)
        else:
            await _run(raw.client, "HSET", key, field, before)
    assert not errors, "\n".join(errors)


async def test_keys_of_the_wrong_type_never_abort_a_read(env: StoreEnv) -> None:
    """A key another writer replaced by a value of another type: a memory (a string
    where its hash was: skipped, and forgettable), the usage counters, the term
    statistics, and the registry and agent index of another namespace (which ``stats``
    and ``prune`` walk)."""
    h = await _healthy_store(env)
    embed, store, raw, pruner, good = h.embed, h.store, h.raw, h.pruner, h.good
    keys = raw._ctx.keys
    other = namespace_token("other")
    await store.remember("elsewhere", scope=Scope(namespace="other", agent_id="b"))
    embed.set("victim of type", near(random_unit("q"), 0.2, "type"))
    victim = await store.remember("victim of type", tags=["work"], scope=Scope(agent_id="a"))
    replaced = [
        keys.memory(victim),
        keys.usage,
        keys.term_stats(namespace_token(None)),
        keys.registry(other),
        keys.agent_index(other, "b"),
    ]
    errors = []
    for key in replaced:
        await _run(raw.client, "DEL", key)
        await _run(raw.client, "SET", key, "not what it was")
        try:
            before = raw._ctx.counters.get("corrupt_records", 0)
            await _reads_survive(env, store, pruner, good, victim, f"{key} is a string")
            if key == keys.usage:  # read as zeros, but logged and counted, not silently
                assert raw._ctx.counters.get("corrupt_records", 0) > before
            await store.stats()
            await pruner.prune(Scope(namespace="other"))
            if key == keys.memory(victim):  # the damaged memory can be forgotten
                assert await store.forget(victim) in (True, False)
                assert await store.get(victim) is None
        except (AgentMemoryError, AssertionError) as exc:
            errors.append(f"{key}: {exc!r}"[:300])
        await _run(raw.client, "DEL", key)  # each damage is judged alone
    assert not errors, "\n".join(errors)


async def test_term_statistics_that_are_not_counts_are_reported(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """A term statistic no writer makes reads as 0 for the recall's BM25 and is logged
    and counted, not silently taken as a count."""
    h = await _healthy_store(env)
    stats_key = h.raw._ctx.keys.term_stats(namespace_token(None))
    await _run(h.raw.client, "HSET", stats_key, "len", "many", "n", "NaN")
    fresh = env.make(h.embed, name=h.raw.name, default_threshold=2.0)  # reads the stats anew
    counted = getattr(fresh, "wrapped", fresh)._ctx.counters
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        hits = await fresh.recall("a note", k=10)
    assert {h.item.id for h in hits} >= set(h.good)
    assert counted.get("corrupt_records", 0) >= 1
    assert "that are not counts" in caplog.text and "n=" in caplog.text and "len=" in caplog.text


async def test_term_statistics_beyond_a_float_are_reported(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """A term statistic of 400 digits (an integer, but beyond 2**53 and beyond a float)
    reads as 0, logged and counted: BM25 raised OverflowError on every recall."""
    h = await _healthy_store(env)
    stats_key = h.raw._ctx.keys.term_stats(namespace_token(None))
    huge = "9" * 400
    (term,) = lexical.analyze("a note")
    for field in ("len", "n", lexical.TERM_PREFIX + term):
        before = await _run(h.raw.client, "HGET", stats_key, field)
        await _run(h.raw.client, "HSET", stats_key, field, huge)
        fresh = env.make(h.embed, name=h.raw.name, default_threshold=2.0)  # reads anew
        counted = getattr(fresh, "wrapped", fresh)._ctx.counters
        caplog.clear()
        with caplog.at_level("WARNING", logger="agent_memory.store"):
            hits = await fresh.recall("a note", k=10)
        assert {hit.item.id for hit in hits} >= set(h.good), field
        assert counted.get("corrupt_records", 0) >= 1, field
        assert "that are not counts" in caplog.text and f"{field}=" in caplog.text, field
        await _run(h.raw.client, "HSET", stats_key, field, before)  # each damage alone


async def test_a_vector_of_another_width_is_left_out_and_reported(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """A memory whose vector is not of the store's width cannot be searched on any
    backend; the client-side mirror (portable, in-process) logs and counts it too
    (the FT servers report it in their own indexing failures)."""
    h = await _healthy_store(env)
    embed = h.embed
    embed.set("odd one", near(random_unit("q"), 0.05, "odd"))
    odd = await h.store.remember("odd one", tags=["work"])
    await _run(h.raw.client, "HSET", h.raw._ctx.keys.memory(odd), "vector", b"\x00" * 12)
    fresh = env.make(embed, name=h.raw.name, default_threshold=2.0)  # a mirror loaded anew
    counters = getattr(fresh, "wrapped", fresh)._ctx.counters
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        found = {hit.item.id for hit in await fresh.recall("query", k=10)}
    assert odd not in found and set(h.good) <= found
    if env.expected_backend != "ft":
        assert counters.get("corrupt_records", 0) >= 1
        assert f"memory {odd} of store" in caplog.text
