"""consolidate (summary and facts), de-duplication, export/import on every backend."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agent_memory import Fact, InvalidInputError, MemoryItem, Scope
from agent_memory.schema.encoding import namespace_token
from agent_memory.store.facts import summary_memory_id
from agent_memory.store.ops import consolidate as consolidate_module
from tests.store.conftest import StoreEnv
from tests.store.test_lifecycle import _NamedEmbedder
from tests.store.test_ranking import Clock
from tests.support import TableEmbedder, near, random_unit, raw_command

DAY = 86400.0


async def _export(store: Any, **kwargs: Any) -> list[dict[str, Any]]:
    result = store.export(**kwargs)
    if hasattr(result, "__aiter__"):
        return [r async for r in result]
    generator = await result  # AsyncView: the sync generator comes back from the thread
    return await asyncio.to_thread(list, generator)


async def test_summary_mode_groups_by_scope_and_replaces_sources(env: StoreEnv) -> None:
    clock = Clock()
    store = env.make(clock=clock)
    a, b = Scope(agent_id="a"), Scope(agent_id="b")
    for i in range(3):
        clock.now += 60
        await store.remember(f"a{i}", scope=a, tags=["chat"], importance=0.2 + i / 10)
    await store.remember("b0", scope=b, tags=["chat"])
    await store.remember("untagged", scope=a)
    seen: list[list[str]] = []

    def summarize(items: list[MemoryItem]) -> str:
        assert all(x.created_at <= y.created_at for x, y in itertools.pairwise(items))
        seen.append([i.content for i in items])
        return " / ".join(i.content for i in items)

    result = await store.consolidate(mode="summary", tags=["chat"], summarize=summarize)
    assert sorted(seen) == [["a0", "a1", "a2"], ["b0"]]
    assert len(result.created) == 2 and len(result.deleted) == 4
    listed = await store.list(scope=a)
    assert sorted(i.content for i in listed.items) == ["a0 / a1 / a2", "untagged"]
    summary = next(i for i in listed.items if i.source == "summary")
    assert summary.importance == pytest.approx(0.4) and summary.tags == ("chat",)
    # summaries are never re-summarised
    again = await store.consolidate(mode="summary", tags=["chat"], summarize=summarize)
    assert again.callback_calls == 0 and len(seen) == 2


@pytest.mark.parametrize("bad", ["", None, "x" * 70_000])
async def test_a_bad_summary_of_one_scope_leaves_every_scope_as_it_was(
    env: StoreEnv, bad: str | None
) -> None:
    """Each scope's summary is asked for and checked before anything is written (before,
    the first scope was already summarised and its sources deleted when the second
    scope's summary was refused). A bad summary is refused as ``summarize``'s, as soon
    as it is returned (a long one was blamed on ``content`` once all were asked for)."""
    store = env.make()
    for agent in ("a", "b", "c"):
        await store.remember(f"{agent}0", scope=Scope(agent_id=agent), tags=["chat"])
    before = sorted((i.id, i.content) for i in (await store.list(limit=100)).items)
    calls: list[int] = []

    def summarize(items: list[MemoryItem]) -> str | None:
        calls.append(len(items))
        return "digest" if len(calls) < 2 else bad

    with pytest.raises(InvalidInputError) as refused:
        await store.consolidate(mode="summary", tags=["chat"], summarize=summarize)
    assert refused.value.field == "summarize" and len(calls) == 2
    if bad:
        assert "max_content_bytes (32768)" in str(refused.value)
    assert sorted((i.id, i.content) for i in (await store.list(limit=100)).items) == before
    result = await store.consolidate(mode="summary", tags=["chat"], summarize=lambda i: "ok")
    assert result.callback_calls == 3 and len(result.created) == 3 and len(result.deleted) == 3


async def test_a_summary_of_many_sources_keeps_its_metadata_bounded(env: StoreEnv) -> None:
    """520 sources of 120-character ids (their ids alone over the 64 KiB metadata limit)
    make one summary: its metadata counts them all and lists the oldest 400; a summary
    the store would refuse anyway (its sources' 65 tags) is refused before summarize."""
    store = env.make()
    ids = [f"{i:04d}" + "x" * 116 for i in range(520)]
    await store.remember_many([{"content": f"note {i}", "id": mid, "tags": ["chat"]}
                               for i, mid in enumerate(ids)])  # fmt: skip
    result = await store.consolidate(mode="summary", tags=["chat"], summarize=lambda i: "sum")
    assert len(result.created) == 1 and len(result.deleted) == 520
    summary = await store.get(result.created[0])
    assert summary is not None and summary.id == summary_memory_id(ids)
    assert summary.metadata["source_count"] == 520 and summary.metadata["sources_truncated"]
    assert summary.metadata["sources"] == ids[:400]
    await store.remember_many([{"content": f"tagged {i}", "tags": ["t", f"t{i}"]}
                               for i in range(64)])  # fmt: skip
    calls: list[int] = []
    with pytest.raises(InvalidInputError) as refused:
        await store.consolidate(
            mode="summary", tags=["t"], summarize=lambda items: str(calls.append(1))
        )
    assert refused.value.field == "tags" and calls == []


async def test_summary_can_keep_sources_and_needs_a_criterion(env: StoreEnv) -> None:
    store = env.make()
    await store.remember("x", scope=Scope(thread_id="t"))
    result = await store.consolidate(
        mode="summary", scope=Scope(thread_id="t"), summarize=lambda items: "digest",
        delete_sources=False, importance=0.9,
    )  # fmt: skip
    assert result.deleted == ()
    assert (await store.list(scope=Scope(thread_id="t"))).total == 2
    with pytest.raises(InvalidInputError):
        await store.consolidate(mode="summary", summarize=lambda items: "x")
    with pytest.raises(InvalidInputError):
        await store.consolidate(mode="facts", scope=Scope(thread_id="t"))
    with pytest.raises(InvalidInputError):
        await store.consolidate(
            mode="summary", scope=Scope(thread_id="t"), summarize=lambda items: ""
        )


class Extractor:
    """Turns 'subject: statement @date' memories into facts; counts calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[str] = []

    def __call__(self, items: list[MemoryItem]) -> list[Fact]:
        self.calls += 1
        facts = []
        for item in items:
            self.seen.append(item.content)
            subject, rest = item.content.split(":", 1)
            statement, _, date = rest.partition("@")
            if statement.strip() == "forget":
                facts.append(Fact(subject, tombstone=True, date=date.strip() or None))
            else:
                facts.append(Fact(subject, statement.strip(), date=date.strip() or None))
        return facts


async def test_facts_supersede_retract_and_rerun_idempotently(env: StoreEnv) -> None:
    store = env.make(keep_fact_history=True)
    scope = Scope(agent_id="bot")
    await store.remember("City: lives in Paris @2023-01-05", scope=scope)
    await store.remember("Job: works at Acme @2023-02-01", scope=scope)
    extract = Extractor()
    first = await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    assert extract.calls == 1 and len(first.created) == 2 and first.deleted == ()
    facts = {i.subject: i for i in (await store.list(scope=scope)).items if i.source == "fact"}
    assert facts["City"].content == "lives in Paris (as of 2023-01-05)"
    assert facts["City"].date == "2023-01-05T00:00:00Z"
    # unchanged sources: nothing written, extractor not called at all
    rerun = await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    assert extract.calls == 1 and rerun.created == () and rerun.skipped == 2
    # a newer statement supersedes (subject matched ignoring case/space), an older one
    # does not, a tombstone retracts, an unmatched tombstone is reported
    await store.remember(" city : moved to Berlin @2024-03-01", scope=scope)
    await store.remember("JOB: works at OldCorp @2020-01-01", scope=scope)
    await store.remember("Pet: forget @2024-01-01", scope=scope)
    second = await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    assert extract.calls == 2
    assert sorted(extract.seen[-3:]) == [
        " city : moved to Berlin @2024-03-01",
        "JOB: works at OldCorp @2020-01-01",
        "Pet: forget @2024-01-01",
    ]  # only new sources, never fact memories
    assert [f.subject for f in second.unmatched_tombstones] == ["Pet"]
    assert second.deleted == (facts["City"].id,)
    live = {i.subject.strip().casefold(): i.content for i in (await store.list(scope=scope)).items
            if i.source == "fact"}  # fmt: skip
    assert live == {
        "city": "moved to Berlin (as of 2024-03-01)",
        "job": "works at Acme (as of 2023-02-01)",
    }
    await store.remember("Job: forget @2024-06-01", scope=scope)
    third = await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    assert third.deleted == (facts["Job"].id,) and third.unmatched_tombstones == ()
    history = await store.fact_history("job", scope)
    assert [h["statement"] for h in history] == ["works at Acme (as of 2023-02-01)"]
    # sources stay: recall over them is unchanged
    assert (await store.list(scope=scope, limit=100)).total == 6 + 1


async def test_facts_crash_mid_run_then_rerun_converges(
    env: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = env.make()
    scope = Scope(agent_id="crash")
    await store.remember("Color: blue @2023-01-01", scope=scope)
    extract = Extractor()
    await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    await store.remember("Color: green @2024-01-01", scope=scope)
    real_delete = consolidate_module.delete_checked

    def crashing_delete(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("process died")
        yield  # pragma: no cover

    monkeypatch.setattr(consolidate_module, "delete_checked", crashing_delete)
    with pytest.raises(RuntimeError):
        await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    monkeypatch.setattr(consolidate_module, "delete_checked", real_delete)
    healed = await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    facts = [i for i in (await store.list(scope=scope)).items if i.source == "fact"]
    assert [f.content for f in facts] == ["green (as of 2024-01-01)"]
    assert healed.deleted  # the stale fact left by the crash is gone
    settled = await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    assert settled.created == () and settled.deleted == ()


async def test_undated_facts_take_the_run_date_and_async_callbacks_work(env: StoreEnv) -> None:
    clock = Clock(1_700_000_000.0)  # 2023-11-14
    store = env.make(clock=clock)
    scope = Scope(agent_id="u")
    await store.remember("Plan: ship v1 @2024-01-01", scope=scope)

    async def extract(items: list[MemoryItem]) -> list[Fact]:
        await asyncio.sleep(0)
        return Extractor()(items)

    if env.cfg.mode == "sync":
        extract_fn: Any = Extractor()
    else:
        extract_fn = extract
    await store.consolidate(mode="facts", scope=scope, extract_facts=extract_fn)
    clock.now = 1_750_000_000.0  # 2025-06
    await store.remember("Plan: ship v2", scope=scope)  # undated: as of the run
    await store.consolidate(mode="facts", scope=scope, extract_facts=extract_fn)
    facts = [i.content for i in (await store.list(scope=scope)).items if i.source == "fact"]
    assert facts == ["ship v2 (as of 2025-06-15)"]


@pytest.mark.parametrize(
    "bad",
    [
        Fact("home", "lives in Lyon", tombstone="no"),  # type: ignore[arg-type]
        Fact("home", "lives in Lyon", date=20240101),  # type: ignore[arg-type]
        Fact("home", "lives in Lyon", date="last week"),
    ],
    ids=["truthy-tombstone", "int-date", "unparsable-date"],
)
async def test_a_malformed_fact_is_refused_and_the_live_fact_stays(
    env: StoreEnv, bad: Fact
) -> None:
    """An extractor's fact whose tombstone is not a bool or whose date is not ISO text
    is refused as ``extract_facts``'s: before, ``tombstone="no"`` retracted (deleted)
    the subject's live fact and an int date raised AttributeError."""
    store = env.make()
    scope = Scope(agent_id="u")
    await store.remember("Home: lives in Paris @2023-01-05", scope=scope)
    await store.consolidate(mode="facts", scope=scope, extract_facts=Extractor())
    before = [(i.id, i.content) for i in await _live_facts(store, scope)]
    await store.remember("moved again", scope=scope)
    with pytest.raises(InvalidInputError) as refused:
        await store.consolidate(mode="facts", scope=scope, extract_facts=lambda items: [bad])
    assert refused.value.field == "extract_facts"
    assert [(i.id, i.content) for i in await _live_facts(store, scope)] == before


async def test_a_refused_fact_is_named_by_position_not_by_its_subject(env: StoreEnv) -> None:
    """The error of a fact without a statement quoted its subject, the user's data,
    into logs and the consolidate span's exception event; it names its position."""
    store = env.make()
    scope = Scope(agent_id="u")
    await store.remember("my bank pin is 4711", scope=scope)

    def extract(items: list[MemoryItem]) -> list[Fact]:
        return [Fact("home", "lives in Paris"), Fact("bank pin 4711", "")]

    with pytest.raises(InvalidInputError) as refused:
        await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    assert refused.value.field == "extract_facts"
    assert "4711" not in str(refused.value) and "fact 1 " in str(refused.value)


async def test_deprecated_alias_warns(env: StoreEnv) -> None:
    store = env.make()
    await store.remember("A: b", scope=Scope(agent_id="d"))
    with pytest.warns(DeprecationWarning):
        await store.consolidate_facts(extract_facts=Extractor(), scope=Scope(agent_id="d"))


async def _live_facts(store: Any, scope: Scope) -> list[MemoryItem]:
    return [i for i in (await store.list(scope=scope, limit=100)).items if i.source == "fact"]


async def test_age_and_importance_criteria_choose_sources_not_the_facts_to_reconcile(
    env: StoreEnv,
) -> None:
    """A run with ``max_importance`` or ``older_than_seconds`` supersedes and retracts the
    facts earlier runs wrote (before, the live facts were looked up with those criteria
    too: facts, written at importance 0.8 or just now, were never seen, so a newer
    statement was added beside the old one and a tombstone matched nothing)."""
    clock = Clock()
    store = env.make(clock=clock)
    extract = Extractor()
    low = Scope(agent_id="low")

    async def by_importance() -> Any:
        return await store.consolidate(
            mode="facts", scope=low, max_importance=0.5, extract_facts=extract
        )

    await store.remember("City: lives in Paris @2024-01-01", scope=low, importance=0.3)
    await by_importance()
    await store.remember("City: lives in Berlin @2024-06-01", scope=low, importance=0.3)
    second = await by_importance()
    assert len(second.deleted) == 1
    assert [f.content for f in await _live_facts(store, low)] == [
        "lives in Berlin (as of 2024-06-01)"
    ]
    await store.remember("City: forget @2025-01-01", scope=low, importance=0.3)
    third = await by_importance()
    assert third.unmatched_tombstones == () and len(third.deleted) == 1
    assert await _live_facts(store, low) == []

    old = Scope(agent_id="old")

    async def by_age() -> Any:
        return await store.consolidate(
            mode="facts", scope=old, older_than_seconds=60, extract_facts=extract
        )

    await store.remember("City: lives in Paris @2024-01-01", scope=old)
    clock.now += 100
    await store.remember("City: lives in Berlin @2024-06-01", scope=old)
    clock.now += 20
    await by_age()  # the Paris note only: the Berlin one is 20 s old
    clock.now += 50  # the Berlin note is 70 s old, the Paris fact 50 s
    assert len((await by_age()).deleted) == 1
    assert [f.content for f in await _live_facts(store, old)] == [
        "lives in Berlin (as of 2024-06-01)"
    ]


@pytest.mark.parametrize("delete_sources", [True, False])
async def test_a_summary_is_never_evicted_by_its_own_run(
    env: StoreEnv, delete_sources: bool
) -> None:
    """With ``max_items_per_scope`` a summary ranked below the rest of its scope stays
    (before, writing it took the scope over the cap and evicted it, then its sources
    were deleted: nothing was left of them while ``created`` named the summary)."""
    store = env.make(max_items_per_scope=3)
    scope = Scope(agent_id="capped")
    sources = [await store.remember(f"pet {i}", scope=scope, importance=0.3) for i in range(2)]
    kept = await store.remember("user's name is Ada", scope=scope, importance=0.9)
    result = await store.consolidate(
        mode="summary", scope=scope, max_importance=0.5, importance=0.1,
        summarize=lambda items: "two pets", delete_sources=delete_sources,
    )  # fmt: skip
    (summary,) = result.created
    assert await store.get(summary) is not None
    listed = {i.id for i in (await store.list(scope=scope)).items}
    if delete_sources:
        assert sorted(result.deleted) == sorted(sources)
        assert listed == {summary, kept}
    else:
        # the cap still holds: a source, ranked lowest after the summary, is evicted
        assert len(listed) == 3 and {summary, kept} <= listed
        assert (await store.stats()).counters.get("evictions") == 1


def _in_callback(
    env: StoreEnv, sync_step: Callable[[], Any], async_step: Callable[[], Awaitable[Any]]
) -> Callable[[list[MemoryItem]], Any]:
    """A summarize / extract_facts callback that first performs another process's step
    (the sync store calls its callback in the worker thread it runs in)."""
    if env.cfg.mode == "sync":

        def callback(items: list[MemoryItem]) -> Any:
            sync_step()
            return "digest"

        return callback

    async def acallback(items: list[MemoryItem]) -> Any:
        await async_step()
        return "digest"

    return acallback


async def test_summary_deletes_only_sources_unchanged_since_they_were_read(
    env: StoreEnv,
) -> None:
    """A source another writer changes while ``summarize`` runs (its text, or its
    importance above ``max_importance``) is kept, and only what was deleted is reported
    and counted (before, every source read was deleted)."""
    name = f"t{uuid.uuid4().hex[:12]}"
    embed = TableEmbedder()
    store, other = env.make(embed, name=name), env.make(embed, name=name)
    scope = Scope(agent_id="busy")
    retexted = await store.remember("user likes tea", scope=scope, importance=0.2)
    raised = await store.remember("user lives in Paris", scope=scope, importance=0.2)
    unchanged = await store.remember("user has a cat", scope=scope, importance=0.2)
    new_text = "user now prefers coffee, never tea"

    def sync_step() -> None:
        other.wrapped.update(retexted, content=new_text)
        other.wrapped.update(raised, importance=0.95)

    async def async_step() -> None:
        await other.update(retexted, content=new_text)
        await other.update(raised, importance=0.95)

    result = await store.consolidate(
        mode="summary", scope=scope, max_importance=0.5,
        summarize=_in_callback(env, sync_step, async_step),
    )  # fmt: skip
    assert result.deleted == (unchanged,)
    assert await store.get(unchanged) is None
    assert (await store.get(retexted)).content == new_text  # type: ignore[union-attr]
    assert (await store.get(raised)).importance == 0.95  # type: ignore[union-attr]
    assert (await store.stats()).counters.get("forgets") == 1


async def test_a_facts_run_with_nothing_new_keeps_the_newest_fact_of_each_subject(
    env: StoreEnv,
) -> None:
    """Several live facts of one subject (left by racing runs) are reduced to the newest
    by the next run, even one with no new source (before, such a run returned at once)."""
    store = env.make()
    scope = Scope(agent_id="dup")
    extract = Extractor()
    await store.remember("City: lives in Paris @2024-01-01", scope=scope)
    await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    (first,) = await _live_facts(store, scope)
    newer = await store.remember(
        "lives in Rome (as of 2024-03-01)", scope=scope, source="fact", subject="city",
        date="2024-03-01T00:00:00Z",
    )  # fmt: skip
    repaired = await store.consolidate(mode="facts", scope=scope, extract_facts=extract)
    assert extract.calls == 1 and repaired.callback_calls == 0
    assert repaired.deleted == (first.id,)
    assert [f.id for f in await _live_facts(store, scope)] == [newer]


class _RacingEmbedder(TableEmbedder):
    """Runs ``race`` once, just before embedding ``trigger``."""

    def __init__(self, trigger: str, race: Callable[[], Any]) -> None:
        super().__init__()
        self.trigger, self.race, self.fired = trigger, race, False

    def __call__(self, text: str) -> list[float]:
        if text == self.trigger and not self.fired:
            self.fired = True
            self.race()
        return super().__call__(text)


class _AsyncRacingEmbedder(TableEmbedder):
    def __init__(self, trigger: str, race: Callable[[], Awaitable[Any]]) -> None:
        super().__init__()
        self.trigger, self.race, self.fired = trigger, race, False

    async def __call__(self, text: str) -> list[float]:  # type: ignore[override]
        if text == self.trigger and not self.fired:
            self.fired = True
            await self.race()
        return TableEmbedder.__call__(self, text)


@pytest.mark.parametrize("racer_newer", [True, False])
async def test_racing_facts_runs_leave_one_live_fact_per_subject(
    env: StoreEnv, racer_newer: bool
) -> None:
    """Another run of the same selection writes a fact of the subject after this run
    read the live facts and before it writes its own (made deterministic: it runs while
    this run embeds its fact). The newest fact stays, alone (before, both stayed, and
    no later run removed either)."""
    name = f"t{uuid.uuid4().hex[:12]}"
    scope = Scope(agent_id="race")
    racer_date, own_date = (
        ("2024-06-02", "2024-06-01") if racer_newer else ("2024-06-01", "2024-06-02")
    )
    racer = env.make(name=name)
    raced: list[Any] = []

    def racer_facts(items: list[MemoryItem]) -> list[Fact]:
        return [Fact("home city", "lives in Berlin, Germany", date=racer_date)]

    def own_facts(items: list[MemoryItem]) -> list[Fact]:
        return [Fact("Home City", "lives in Berlin", date=own_date)]

    def race() -> None:
        raced.append(
            racer.wrapped.consolidate(mode="facts", scope=scope, extract_facts=racer_facts)
        )

    async def arace() -> None:
        raced.append(await racer.consolidate(mode="facts", scope=scope, extract_facts=racer_facts))

    trigger = f"lives in Berlin (as of {own_date})"
    embed = (
        _RacingEmbedder(trigger, race)
        if env.cfg.mode == "sync"
        else _AsyncRacingEmbedder(trigger, arace)
    )
    store = env.make(embed, name=name)
    await store.remember("I moved to Berlin", scope=scope)
    await store.consolidate(mode="facts", scope=scope, extract_facts=own_facts)
    assert len(raced) == 1 and len(raced[0].created) == 1
    winner = "lives in Berlin, Germany" if racer_newer else "lives in Berlin"
    live = await _live_facts(store, scope)
    assert [f.content for f in live] == [f"{winner} (as of 2024-06-02)"]
    later = await store.consolidate(mode="facts", scope=scope, extract_facts=own_facts)
    assert later.callback_calls == 0 and later.created == () and later.deleted == ()
    assert [f.id for f in await _live_facts(store, scope)] == [live[0].id]


@pytest.mark.parametrize("retract", [False, True])
async def test_facts_mode_keeps_a_fact_another_writer_changed_during_the_run(
    env: StoreEnv, retract: bool
) -> None:
    """Another client retags the live fact of a subject (it leaves the selection) while
    this run embeds the fact that supersedes it (a retraction: while it embeds another
    subject's fact). The fact is kept, not reported as deleted, and the history does not
    claim it was replaced (before, it was deleted as read)."""
    name = f"t{uuid.uuid4().hex[:12]}"
    scope = Scope(agent_id="moved")
    other = env.make(name=name)
    held: list[str] = []

    def race() -> None:
        other.wrapped.update(held[0], tags=["kept-by-user"])

    async def arace() -> None:
        await other.update(held[0], tags=["kept-by-user"])

    trigger = "works in Lyon (as of 2024-06-01)"
    embed = _RacingEmbedder(trigger, race) if env.cfg.mode == "sync" else (
        _AsyncRacingEmbedder(trigger, arace)
    )  # fmt: skip
    store = env.make(embed, name=name, keep_fact_history=True)
    await store.remember("City: lives in Paris @2024-01-01", scope=scope, tags=["me"])
    first = await store.consolidate(
        mode="facts", scope=scope, tags=["me"], extract_facts=Extractor()
    )
    held.extend(first.created)
    news = "City: forget @2024-06-01" if retract else "City: lives in Lyon @2024-06-01"
    await store.remember(news, scope=scope, tags=["me"])
    await store.remember("Job: works in Lyon @2024-06-01", scope=scope, tags=["me"])
    result = await store.consolidate(
        mode="facts", scope=scope, tags=["me"], extract_facts=Extractor()
    )
    assert embed.fired and result.deleted == ()
    kept = await store.get(held[0])
    assert kept is not None and kept.tags == ("kept-by-user",)
    assert kept.content == "lives in Paris (as of 2024-01-01)"
    assert await store.fact_history("city", scope=scope) == []
    assert (await store.stats()).counters.get("forgets") is None


async def test_a_fact_too_long_to_store_is_refused_as_extract_facts_and_every_run_counts(
    env: StoreEnv,
) -> None:
    """A statement over ``max_content_bytes`` is refused naming ``extract_facts`` and the
    fact's position (before: field ``content``), nothing written. Every facts run counts
    in ``consolidations``, one with nothing new included, as summary runs do (before,
    only runs with new sources counted)."""
    store = env.make()
    scope = Scope(agent_id="long")
    await store.remember("City: lives in Paris", scope=scope)
    huge = [Fact("job", "ok"), Fact("city", "x" * 40_000)]
    with pytest.raises(InvalidInputError) as refused:
        await store.consolidate(mode="facts", scope=scope, extract_facts=lambda items: huge)
    assert refused.value.field == "extract_facts" and "fact 1" in str(refused.value)
    assert await _live_facts(store, scope) == []
    await store.consolidate(mode="facts", scope=scope, extract_facts=Extractor())
    idle = await store.consolidate(mode="facts", scope=scope, extract_facts=Extractor())
    assert idle.callback_calls == 0
    await store.consolidate(mode="summary", tags=["none"], summarize=lambda items: "x")
    assert (await store.stats()).counters.get("consolidations") == 3


async def test_dedupe_refreshes_instead_of_copying(env: StoreEnv) -> None:
    clock = Clock()
    embed = TableEmbedder()
    base = random_unit("dup")
    embed.set("User likes tea", base)
    embed.set("User likes tea.", near(base, 0.01, "p"))
    embed.set("User likes coffee", near(base, 0.3, "c"))
    store = env.make(embed, clock=clock, dedupe=True)
    first = await store.remember("User likes tea", importance=0.3)
    clock.now += 100
    again = await store.remember("User likes tea.", importance=0.9)
    assert again == first
    item = await store.get(first)
    assert item.importance == 0.9 and item.access_count == 1
    assert item.last_accessed_at == int(clock.now * 1000)
    assert await store.remember("User likes coffee") != first
    other_scope = await store.remember("User likes tea", scope=Scope(agent_id="x"))
    assert other_scope != first
    assert await store.remember("User likes tea", dedupe=False) != first
    batch = await store.remember_many(
        [{"content": "User likes tea", "scope": Scope(agent_id="y")},
         {"content": "User likes tea.", "scope": Scope(agent_id="y")}]
    )  # fmt: skip
    assert batch[0] == batch[1]


async def test_dedupe_finds_the_copy_of_its_own_scope_behind_other_agents_copies(
    env: StoreEnv,
) -> None:
    """The search cannot filter on "no agent": the 20 agents' copies of the text come
    first, and the unscoped copy behind them is still found (a wider search)."""
    store = env.make()
    await store.remember_many(
        [{"content": "same text", "scope": Scope(agent_id=f"a{i}")} for i in range(20)]
    )
    first = await store.remember("same text", dedupe=True)
    assert await store.remember("same text", dedupe=True) == first
    again = await store.remember("same text", dedupe=True, scope=Scope(thread_id="t"))
    assert again != first
    assert await store.remember("same text", dedupe=True, scope=Scope(thread_id="t")) == again
    assert (await store.list(scope=Scope())).total == 22


async def test_concurrent_deduplicating_writers_of_one_text_store_one_copy(
    env: StoreEnv,
) -> None:
    name = f"t{uuid.uuid4().hex[:12]}"
    embed = TableEmbedder()
    writers = [env.make(embed, name=name, dedupe=True) for _ in range(4)]  # 4 clients
    for round_ in range(6):
        scope = Scope(agent_id=f"r{round_}")
        ids = await asyncio.gather(*(w.remember("User likes tea", scope=scope) for w in writers))
        assert len(set(ids)) == 1, f"round {round_}: {len(set(ids))} copies stored"
        assert (await writers[0].list(scope=scope)).total == 1
        item = await writers[0].get(ids[0])
        assert item.access_count == 3  # each later writer refreshed the first one's copy


async def test_export_import_round_trip_gives_identical_recall(env: StoreEnv) -> None:
    clock = Clock()
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    source = env.make(embed, clock=clock)
    scope = Scope(namespace="tenant", agent_id="a")
    for i in range(6):
        embed.set(f"m{i}", near(q, 0.05 * (i + 1), str(i)))
        clock.now += 3600
        await source.remember(f"m{i}", scope=scope, importance=i / 10, tags=[f"t{i % 2}"],
                              ttl=DAY if i == 0 else None, metadata={"i": i})  # fmt: skip
    await source.recall("query", scope=scope, k=2)  # bumps access stats
    records = await _export(source, scope=Scope(namespace="tenant"))
    assert len(records) == 6 and all(len(r["vector"]) == 16 for r in records)
    assert records[0]["ttl_remaining_ms"] is not None
    target = env.make(embed, clock=clock)  # a fresh, empty store
    calls = embed.calls
    ids = await target.import_records(records)
    assert embed.calls == calls  # vectors came from the records
    assert ids == [r["id"] for r in records]
    before = await source.recall("query", scope=scope, k=6, reinforce=False)
    after = await target.recall("query", scope=scope, k=6, reinforce=False)
    assert [(h.item, round(h.score, 9)) for h in before] == [
        (h.item, round(h.score, 9)) for h in after
    ]
    with pytest.raises(InvalidInputError):
        await target.import_records([{**records[0], "id": "other", "vector": [1.0] * 8}])
    reembedded = env.make(embed, clock=clock)
    await reembedded.import_records(records, reembed=True)
    assert (await reembedded.list(scope=scope)).total == 6


async def test_import_over_an_existing_id_replaces_that_memory_entirely(env: StoreEnv) -> None:
    """A record whose id a memory already holds replaces it: nothing of the old one stays
    (its scope's listings, a TTL, fields the record lacks, its terms' statistics)."""
    store = env.make()
    a, b = Scope(namespace="tenant-a", agent_id="x"), Scope(namespace="tenant-b")
    mid = await store.remember("walrus migration", scope=a, ttl=DAY, tags=["t"], source="chat")
    (record,) = await _export(store, scope=Scope(namespace="tenant-a"))
    moved = {**record, "scope": {"namespace": "tenant-b"}, "content": "penguin colony",
             "ttl_remaining_ms": None, "tags": [], "source": None}  # fmt: skip
    assert await store.import_records([moved]) == [mid]
    assert (await store.list(scope=Scope(namespace="tenant-a"))).total == 0
    assert [i.id for i in (await store.list(scope=b)).items] == [mid]
    item = await store.get(mid)
    assert item is not None and item.scope == b and item.content == "penguin colony"
    assert item.expires_at is None and item.tags == () and item.source is None
    assert await store.forget_by_scope(Scope(namespace="tenant-a")) == 0
    assert await store.get(mid) is not None
    raw = getattr(store, "wrapped", store)
    reply = await raw_command(
        store, "HGETALL", raw._ctx.keys.term_stats(namespace_token("tenant-a"))
    )
    counts = list(reply.values()) if isinstance(reply, dict) else list(reply)[1::2]
    assert all(int(v) == 0 for v in counts)  # the old text counts nowhere


async def test_import_refuses_vectors_of_another_embedder_of_the_same_width(
    env: StoreEnv,
) -> None:
    """An export names the store's embedder; without reembed a store recording another
    one refuses the records (same width, another vector space), as the store itself
    refuses to mix them. Records naming none (older exports) are taken as they are."""
    source = env.make(_NamedEmbedder("model-a"))
    await source.remember("first note")
    await source.remember("second note")
    records = await _export(source)
    assert [r["embedder"] for r in records] == ["model-a", "model-a"]
    other = env.make(_NamedEmbedder("model-b"))
    with pytest.raises(InvalidInputError, match=r"record 1 of 2 .*'model-a'.*'model-b'") as err:
        await other.import_records(records)
    assert err.value.field == "embedder"
    assert (await other.list()).total == 0  # nothing written
    with pytest.raises(InvalidInputError, match="embedder must be a non-empty string"):
        await other.import_records([{**records[0], "embedder": 7}])
    assert len(await other.import_records(records, reembed=True)) == 2
    older = [{k: v for k, v in r.items() if k != "embedder"} for r in records]
    assert len(await env.make(_NamedEmbedder("model-b")).import_records(older)) == 2
    assert len(await env.make(_NamedEmbedder("model-a")).import_records(records)) == 2
    unnamed = env.make()  # an embedder without an id: nothing to compare
    assert len(await unnamed.import_records(records)) == 2
    assert all("embedder" not in r for r in await _export(unnamed))


async def _term_counts(store: Any, namespace: str | None) -> dict[str, int]:
    raw = getattr(store, "wrapped", store)
    key = raw._ctx.keys.term_stats(namespace_token(namespace))
    reply = await raw_command(store, "HGETALL", key)
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[0::2], reply[1::2], strict=True)
    return {
        (name.decode() if isinstance(name, bytes) else name): int(value)
        for name, value in pairs
        if int(value)
    }


@pytest.mark.parametrize("how", ["import_records", "remember_many"])
async def test_records_sharing_an_id_in_one_batch_store_only_the_last(
    env: StoreEnv, how: str
) -> None:
    """Two records under one id in one batch: the last replaces the earlier entirely, as
    a later batch would (never a mix of their fields, both texts counted, the earlier
    one's listings left behind forget, or two writes counted)."""
    store = env.make()
    await store.remember("unrelated words")
    single = await _term_counts(store, None)
    a, b = Scope(agent_id="A"), Scope(agent_id="B")
    first = {"id": "dup1", "content": "alpha beta", "scope": a, "source": "s1",
             "tags": ["t1"], "metadata": {"m": 1}}  # fmt: skip
    second = {"id": "dup1", "content": "gamma delta", "scope": b}
    if how == "import_records":
        ids = await store.import_records(
            [{**first, "scope": {"agent_id": "A"}}, {**second, "scope": {"agent_id": "B"}}]
        )
    else:
        ids = await store.remember_many([first, second])
    assert ids == ["dup1", "dup1"]  # one id per record, as documented
    item = await store.get("dup1")
    assert item is not None and item.content == "gamma delta" and item.scope == b
    assert item.source is None and item.tags == () and dict(item.metadata) == {}
    assert (await store.list(scope=a)).total == 0
    assert [i.id for i in (await store.list(scope=b)).items] == ["dup1"]
    assert (await store.stats()).counters.get("remembers") == 2  # "unrelated words" + dup1
    terms = await _term_counts(store, None)
    assert terms["n"] == 2 and "t:alpha" not in terms and terms["t:gamma"] == 1
    assert await store.forget("dup1")
    assert (await store.list(scope=a)).total == 0 and (await store.list(scope=b)).total == 0
    assert await _term_counts(store, None) == single


@pytest.mark.parametrize(
    ("learning", "problem"),
    [
        ({"eval_sum": "nan"}, "eval_sum is not a finite number"),
        ({"eval_weight": "inf"}, "eval_weight is not a finite number"),
        ({"last_reinforced_at": "yesterday"}, "last_reinforced_at is not a finite number"),
        ({"utility_ctx": "not json"}, "utility_ctx is damaged: not JSON"),
        ({"utility_ctx": "[1, 2]"}, "utility_ctx is damaged: a JSON list, not an object"),
        ({"utility_ctx": '{"c": [1, "a", 3]}'}, "utility_ctx is damaged: 1 of its 1 entries"),
    ],
)
async def test_import_refuses_learning_state_it_could_not_read_back(
    env: StoreEnv, learning: dict[str, str], problem: str
) -> None:
    """Learning state that no store writes (a NaN aggregate, usefulness per context that
    is not an object of ``[sum, weight, updated_ms]``) is refused before anything is
    written: stored, it would make the memory unreadable or its learning damaged."""
    embed = TableEmbedder()
    source = env.make(embed)
    await source.remember("kept")
    await source.feedback(await source.remember("learned"), 0.5)
    records = await _export(source)
    assert any(r["learning"] for r in records)
    target = env.make(embed)
    bad = {**records[0], "id": "f" * 32, "learning": {**records[0]["learning"], **learning}}
    with pytest.raises(InvalidInputError, match=problem):
        await target.import_records([*records, bad])
    assert (await target.list()).total == 0  # every record is validated first
    assert sorted(await target.import_records(records)) == sorted(r["id"] for r in records)


async def test_export_leaves_out_damaged_learning_state_and_stays_importable(
    env: StoreEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """Learning state no writer makes is left out of the export (the per-context entries
    that are well formed still travel), logged and counted; the record imports."""
    embed = TableEmbedder()
    source = env.make(embed)
    mid = await source.remember("learned")
    await source.feedback(mid, 0.5)
    raw = getattr(source, "wrapped", source)
    key = raw._ctx.keys.memory(mid)
    contexts = '{"good": [0.5, 1.0, 1700000000000], "bad": [1, "a", 3]}'
    await raw_command(source, "HSET", key, "eval_sum", "inf", "utility_ctx", contexts)
    before = raw._ctx.counters.get("corrupt_records", 0)
    with caplog.at_level("WARNING", logger="agent_memory.store"):
        (record,) = await _export(source)
    assert raw._ctx.counters.get("corrupt_records", 0) - before == 2
    assert caplog.text.count("exported without it") == 2
    learning = record["learning"]
    assert "eval_sum" not in learning and learning["manual_utility"] == "0.5"
    assert json.loads(learning["utility_ctx"]) == {"good": [0.5, 1.0, 1700000000000]}
    target = env.make(embed)
    assert await target.import_records([record]) == [mid]
    assert (await target.get(mid)).feedback == 0.5  # type: ignore[union-attr]
