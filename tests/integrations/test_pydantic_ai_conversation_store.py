"""``AgentMemoryConversationStore`` against pydantic-ai's own ``InMemoryConversationStore``.

pydantic-ai ships no reusable store suite, and its repository's conversation-store tests
were not available here, so the behaviours below replay the contract the installed
``pydantic_ai/conversation_store.py`` documents (save/extend, a rewritten history
branching, ``branch`` / ``fork`` / ``delete`` / ``list_conversations``, scopes,
conflicts, usage and deferred tool requests) and run the SAME assertions on both stores
(the ``store`` fixture: in-memory, then ours on the in-process client, on plain Valkey and
Valkey + valkey-search 1.2 with both client packages: valkey RESP2 bytes, redis RESP3
str). The tests after
them check what only a server has: the key layout and round trips, corrupt data, bad
input, keys of another type, a property test pitting both stores against each other on
tenants, a blocking client, ``from_url`` and a real cluster.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
    InMemoryConversationStore,
)
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from valkey.crc import key_slot

from agent_memory.backends.inprocess import AsyncInProcessClient
from agent_memory.cache.keys import KeyLayout
from agent_memory.core import clients
from agent_memory.errors import (
    AgentMemoryError,
    InvalidInputError,
    NotFoundError,
    ReplyParseError,
    ServerUnavailableError,
    StoreClosedError,
    WrongTypeError,
)
from agent_memory.integrations.pydantic_ai import AgentMemoryConversationStore
from agent_memory.integrations.pydantic_ai.conversation_store import CLEANUP_FAILURES
from tests.conftest import _Servers
from tests.integrations.targets import KINDS, PACKAGES, Package, Target
from tests.integrations.test_pydantic_ai import _tool_agent
from tests.support import record_async_round_trips

pytestmark = pytest.mark.integration

BACKENDS = [(kind, package) for kind in KINDS for package in PACKAGES]
BACKEND_IDS = [f"{kind}-{package.name}" for kind, package in BACKENDS]


def _name() -> str:
    return f"pc{uuid.uuid4().hex[:10]}"


@pytest.fixture(
    params=[None, "in-process", *BACKENDS], ids=["in-memory", "in-process", *BACKEND_IDS]
)
async def store(request: pytest.FixtureRequest, servers: _Servers) -> AsyncIterator[Any]:
    """pydantic-ai's in-memory store, then ours on the library's in-process client (its
    scripts run as their Python twins) and on each server kind and client package."""
    if request.param is None:
        yield InMemoryConversationStore()
        return
    if request.param == "in-process":
        yield AgentMemoryConversationStore(client=AsyncInProcessClient(), name=_name())
        return
    kind, package = request.param
    client = package.client(servers.get(kind).url)
    yield AgentMemoryConversationStore(client=client, name=_name())
    await client.aclose()


@pytest.fixture(params=BACKENDS, ids=BACKEND_IDS)
def target(request: pytest.FixtureRequest, servers: _Servers) -> Target:
    kind, package = request.param
    return Target(kind, servers.get(kind).url, package)


@pytest.fixture
async def ours(target: Target) -> AsyncIterator[AgentMemoryConversationStore]:
    client = target.package.client(target.url)
    yield AgentMemoryConversationStore(client=client, name=_name())
    await client.aclose()


AT = datetime(2026, 1, 2, 3, 4, 5, 6789, tzinfo=timezone.utc)


def _messages(tag: str, count: int) -> list[ModelMessage]:
    """``count`` messages, a prompt then an answer, alternately (the same ones on every
    call: their timestamps are fixed)."""
    return [
        ModelRequest(parts=[UserPromptPart(f"{tag}{i}", timestamp=AT)], timestamp=AT)
        if i % 2 == 0
        else ModelResponse(parts=[TextPart(f"{tag}{i}")], timestamp=AT)
        for i in range(count)
    ]


async def _saved(
    store: ConversationStore, cid: str, messages: list[ModelMessage], **kw: Any
) -> Conversation:
    conversation = Conversation(conversation_id=cid, messages=list(messages))
    await store.save(conversation, **kw)
    return conversation


async def _ids(store: ConversationStore, cid: str) -> list[str]:
    entries = await store.load_entries(cid)
    assert entries is not None
    return [entry.id for entry in entries]


# -- the contract, on both stores ------------------------------------------------------------


async def test_save_then_load_round_trips(store: ConversationStore) -> None:
    messages = _messages("a", 4)
    usage = RunUsage(requests=2, input_tokens=30, output_tokens=7, tool_calls=1)
    conversation = Conversation(conversation_id="c/ü 1", messages=list(messages), usage=usage)
    entries = await store.save(conversation)
    assert [e.message for e in entries] == messages
    assert entries[0].parent_id is None
    assert [e.parent_id for e in entries[1:]] == [e.id for e in entries[:-1]]
    assert conversation.revision is not None and conversation.new_message_index == 4
    loaded = await store.load("c/ü 1")
    assert loaded is not None
    assert loaded.messages == messages and loaded.usage == usage
    assert loaded.revision == conversation.revision and loaded.new_message_index == 4
    assert await store.load_entries("c/ü 1") == entries
    assert await store.read_entry(entries[2].id) == entries[2]
    assert await store.load("missing") is None and await store.load_entries("missing") is None


async def test_save_appends_only_what_is_new(store: ConversationStore) -> None:
    await _saved(store, "c", _messages("a", 2))
    loaded = await store.load("c")
    assert loaded is not None
    before = await _ids(store, "c")
    loaded.messages.extend(_messages("b", 2))
    added = await store.save(loaded)
    assert [e.message for e in added] == loaded.messages[2:]
    assert added[0].parent_id == before[-1]
    assert await _ids(store, "c") == [*before, *(e.id for e in added)]
    revision = loaded.revision
    assert await store.save(loaded) == []  # nothing new, but the revision advances
    assert loaded.revision != revision
    again = await store.load("c")
    assert again is not None and again.revision == loaded.revision
    record = await store.read_record("c")
    assert record is not None and record.branches == []


async def test_load_windows(store: ConversationStore) -> None:
    messages = _messages("w", 5)
    await _saved(store, "c", messages)
    window = await store.load("c", limit=2)
    assert window is not None and window.messages == messages[-2:]
    empty = await store.load("c", limit=0)
    assert empty is not None and empty.messages == []
    entries = await store.load_entries("c", limit=3)
    assert entries is not None and [e.message for e in entries] == messages[-3:]
    with pytest.raises(UserError):
        await store.load("c", limit=-1)
    # a saved window appends to the whole conversation
    window.messages.append(ModelRequest(parts=[UserPromptPart("more")]))
    await store.save(window)
    whole = await store.load("c")
    assert whole is not None and len(whole.messages) == 6


async def test_a_rewritten_history_branches_off_the_shared_messages(
    store: ConversationStore,
) -> None:
    old = _messages("a", 4)
    first = await _saved(store, "c", old)
    ids = await _ids(store, "c")
    rewritten = Conversation(
        conversation_id="c", messages=[*old[:2], *_messages("x", 1)], revision=first.revision
    )
    added = await store.save(rewritten)
    assert len(added) == 1 and added[0].parent_id == ids[1]
    record = await store.read_record("c")
    assert record is not None and record.branches == [ids[3]] and record.head_id == added[0].id
    loaded = await store.load("c")
    assert loaded is not None and loaded.messages == rewritten.messages
    back = await store.branch("c", from_entry=ids[3], expected_revision=loaded.revision)
    assert back.messages == old
    record = await store.read_record("c")
    assert record is not None and record.branches == [added[0].id] and record.head_id == ids[3]


async def test_a_serialized_conversation_still_appends(store: ConversationStore) -> None:
    await _saved(store, "c", _messages("a", 2))
    loaded = await store.load("c")
    assert loaded is not None
    copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(loaded))
    copy.messages.append(ModelRequest(parts=[UserPromptPart("next")]))
    added = await store.save(copy)
    assert [e.message for e in added] == copy.messages[2:]
    record = await store.read_record("c")
    assert record is not None and record.branches == []


async def test_branch(store: ConversationStore) -> None:
    messages = _messages("a", 4)
    saved = await _saved(store, "c", messages)
    saved_ids = await _ids(store, "c")
    with pytest.raises(ConversationConflict):
        await store.branch("c", at=1, expected_revision="stale")
    for bad in ({"at": 5}, {"at": -1}, {"at": 1, "from_entry": saved_ids[0]}, {}):
        with pytest.raises(UserError):
            await store.branch("c", expected_revision=saved.revision, **bad)
    with pytest.raises(UserError):
        await store.branch("c", from_entry="no-such-entry", expected_revision=saved.revision)
    with pytest.raises(UserError):
        await store.branch("missing", at=0, expected_revision=None)
    branched = await store.branch("c", at=2, expected_revision=saved.revision)
    assert branched.messages == messages[:2] and branched.revision != saved.revision
    record = await store.read_record("c")
    assert record is not None and record.head_id == saved_ids[1]
    assert record.branches == [saved_ids[3]]
    branched.messages.extend(_messages("b", 2))
    added = await store.save(branched)
    assert added[0].parent_id == saved_ids[1]
    loaded = await store.load("c")
    assert loaded is not None and loaded.messages == [*messages[:2], *_messages("b", 2)]
    emptied = await store.branch("c", at=0, expected_revision=loaded.revision)
    assert emptied.messages == []
    record = await store.read_record("c")
    assert record is not None and record.head_id is None
    assert record.branches == [saved_ids[3], added[-1].id]


async def test_fork_shares_entries(store: ConversationStore) -> None:
    messages = _messages("a", 4)
    usage = RunUsage(requests=1, input_tokens=9)
    source = Conversation(conversation_id="src", messages=list(messages), usage=usage)
    await store.save(source, scope="team")
    source_ids = await _ids(store, "src")
    part = await store.fork("src", at=2, new_conversation_id="part")
    assert part.messages == messages[:2] and part.usage == RunUsage()
    assert await _ids(store, "part") == source_ids[:2]  # shared, not copied
    record = await store.read_record("part")
    assert record is not None and record.forked_from == "src"
    assert record.forked_at == source_ids[1] and record.scope == "team"
    whole = await store.fork("src", new_conversation_id="whole", scope="other")
    assert whole.messages == messages and whole.usage == usage
    record = await store.read_record("whole")
    assert record is not None and record.scope == "other"
    picked = await store.fork("src", from_entry=source_ids[2])
    assert picked.messages == messages[:3] and picked.conversation_id not in {"src", "part"}
    empty = await store.fork("src", at=0, new_conversation_id="empty")
    assert empty.messages == []
    with pytest.raises(ConversationConflict):
        await store.fork("src", new_conversation_id="part")
    with pytest.raises(UserError):
        await store.fork("src", source_scope="someone-else")
    with pytest.raises(UserError):
        await store.fork("missing")
    with pytest.raises(UserError):
        await store.fork("src", at=1, from_entry=source_ids[0])
    # the source carries on; the fork keeps what it forked
    loaded = await store.load("src")
    assert loaded is not None
    loaded.messages.extend(_messages("b", 2))
    await store.save(loaded)
    assert (await store.load("part")).messages == messages[:2]  # type: ignore[union-attr]
    part.messages.extend(_messages("p", 1))
    added = await store.save(part)
    assert added[0].parent_id == source_ids[1]


async def test_delete_releases_what_no_history_reaches(store: ConversationStore) -> None:
    await _saved(store, "src", _messages("a", 4), scope="alice")
    ids = await _ids(store, "src")
    await store.fork("src", at=2, new_conversation_id="fork")
    await store.delete("src", scope="bob")  # another tenant's delete leaves it
    assert await store.load("src") is not None
    await store.delete("src", scope="alice")
    assert await store.load("src") is None
    assert [r.conversation_id for r in await store.list_conversations()] == ["fork"]
    fork = await store.load("fork")
    assert fork is not None and fork.messages == _messages("a", 2)
    for entry_id in ids[:2]:
        assert (await store.read_entry(entry_id)).id == entry_id
    for entry_id in ids[2:]:
        with pytest.raises(KeyError):
            await store.read_entry(entry_id)
    await store.delete("fork")
    for entry_id in ids:
        with pytest.raises(KeyError):
            await store.read_entry(entry_id)
    await store.delete("never-stored")  # nothing to do
    assert await store.list_conversations() == []


async def test_delete_keeps_the_branches_of_the_others(store: ConversationStore) -> None:
    saved = await _saved(store, "c", _messages("a", 4))
    ids = await _ids(store, "c")
    await store.branch("c", at=1, expected_revision=saved.revision)
    await store.fork("c", from_entry=ids[3], new_conversation_id="f")  # from a branch left
    await store.delete("c")
    forked = await store.load("f")
    assert forked is not None and forked.messages == _messages("a", 4)
    assert (await store.read_entry(ids[3])).parent_id == ids[2]


async def test_list_conversations(store: ConversationStore) -> None:
    await _saved(store, "a", _messages("a", 1), scope="alice")
    await _saved(store, "b", _messages("b", 1), scope="bob")
    await _saved(store, "c", _messages("c", 1), scope="alice")
    await _saved(store, "d", _messages("d", 1))
    listed = await store.list_conversations()
    assert [r.conversation_id for r in listed] == ["d", "c", "b", "a"]
    assert [r.conversation_id for r in await store.list_conversations(scope="alice")] == ["c", "a"]
    assert [r.conversation_id for r in await store.list_conversations(limit=2)] == ["d", "c"]
    assert [r.conversation_id for r in await store.list_conversations(scope="alice", limit=1)] == [
        "c"
    ]
    assert [r.conversation_id for r in await store.list_conversations(scope="bob", limit=5)] == [
        "b"
    ]
    assert await store.list_conversations(scope="nobody") == []
    assert await store.list_conversations(limit=0) == []
    with pytest.raises(UserError):
        await store.list_conversations(limit=-1)
    loaded = await store.load("a")
    assert loaded is not None
    loaded.messages.extend(_messages("a+", 1))
    await store.save(loaded)  # saving moves it to the front, scope kept
    listed = await store.list_conversations()
    assert [r.conversation_id for r in listed] == ["a", "d", "c", "b"]
    assert listed[0].scope == "alice" and listed[0].updated_at > listed[1].updated_at
    assert listed[0].head_id == (await _ids(store, "a"))[-1]


async def test_concurrent_saves_conflict(store: ConversationStore) -> None:
    await _saved(store, "c", _messages("a", 2))
    first, second = await store.load("c"), await store.load("c")
    assert first is not None and second is not None
    first.messages.extend(_messages("first", 1))
    second.messages.extend(_messages("second", 1))
    await store.save(first)
    with pytest.raises(ConversationConflict) as caught:
        await store.save(second)
    assert caught.value.conversation_id == "c"
    copies = [await store.load("c") for _ in range(5)]
    for i, copy in enumerate(copies):
        assert copy is not None
        copy.messages.extend(_messages(f"racer{i}-", 1))
    outcomes = await asyncio.gather(*(store.save(c) for c in copies if c), return_exceptions=True)
    assert sum(isinstance(o, list) for o in outcomes) == 1
    assert sum(isinstance(o, ConversationConflict) for o in outcomes) == 4
    loaded = await store.load("c")
    assert loaded is not None and len(loaded.messages) == 4  # one racer's message, not five
    with pytest.raises(ConversationConflict):
        await store.save(Conversation(conversation_id="c", messages=_messages("new", 1)))
    with pytest.raises(ConversationConflict):
        await store.save(loaded, scope="someone")
    await store.delete("c")
    with pytest.raises(ConversationConflict):
        await store.save(loaded)  # deleted since it was loaded


async def test_scope_hides_a_conversation_from_other_tenants(store: ConversationStore) -> None:
    await _saved(store, "c", _messages("secret", 2), scope="alice")
    assert await store.load("c", scope="bob") is None
    assert await store.load_entries("c", scope="bob") is None
    assert (await store.load("c", scope="alice")) is not None
    assert (await store.load("c")) is not None  # no scope: the application itself
    assert await store.list_conversations(scope="bob") == []
    with pytest.raises(UserError):
        await store.branch("c", at=0, expected_revision=None, scope="bob")
    with pytest.raises(UserError):
        await store.fork("c", source_scope="bob")
    loaded = await store.load("c")
    assert loaded is not None
    with pytest.raises(ConversationConflict):
        await store.save(loaded, scope="bob")
    await store.save(loaded)  # keeps its scope
    record = await store.read_record("c")
    assert record is not None and record.scope == "alice"


async def test_primitives_conflict_as_documented(store: ConversationStore) -> None:
    await _saved(store, "c", _messages("a", 1))
    record = await store.read_record("c")
    assert record is not None
    orphan = dataclasses.replace(record, head_id="no-such-entry", revision="r2")
    with pytest.raises(ConversationConflict):
        await store.write_record(orphan, expected_revision=record.revision)
    fresh = ConversationRecord(conversation_id="c", head_id=None)
    with pytest.raises(ConversationConflict):
        await store.write_record(fresh, expected_revision=None)
    with pytest.raises(ConversationConflict):
        await store.write_record(fresh, expected_revision="stale")
    with pytest.raises(ConversationConflict):
        await store.delete_record("c", expected_revision="stale")
    with pytest.raises(ConversationConflict):
        await store.delete_record("missing", expected_revision="r")
    with pytest.raises(KeyError):
        await store.read_entry("no-such-entry")
    # a record with new entries, written directly
    entry = ConversationEntry(parent_id=record.head_id, message=_messages("b", 1)[0])
    moved = dataclasses.replace(record, head_id=entry.id, revision="r3")
    await store.write_record(moved, new_entries=[entry], expected_revision=record.revision)
    assert await store.read_entry(entry.id) == entry
    loaded = await store.load("c")
    assert loaded is not None and loaded.revision == "r3" and len(loaded.messages) == 2
    assert await store.read_history(entry.id, limit=1) == [entry]
    assert await store.read_history(None) == []
    # a record written with another scope moves to that scope's listing
    rescoped = dataclasses.replace(moved, scope="team", revision="r4")
    await store.write_record(rescoped, expected_revision="r3")
    assert [r.conversation_id for r in await store.list_conversations(scope="team")] == ["c"]
    unscoped = dataclasses.replace(rescoped, scope=None, revision="r5")
    await store.write_record(unscoped, expected_revision="r4")
    assert await store.list_conversations(scope="team") == []
    assert [r.scope for r in await store.list_conversations()] == [None]


def _deferred_agent() -> Agent[None, str | DeferredToolRequests]:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if done:
            return ModelResponse(parts=[TextPart(f"done: {done[-1].content}")])
        args = {"path": "a.txt", "why": "tidy up"}
        return ModelResponse(parts=[ToolCallPart("delete_file", args, tool_call_id="call-1")])

    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(script), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str, why: str) -> str:
        return f"{path} deleted"

    return agent


async def test_usage_and_deferred_tool_requests_round_trip(store: ConversationStore) -> None:
    agent = _deferred_agent()
    paused = await agent.run("delete a.txt", conversation=Conversation(conversation_id="d"))
    assert isinstance(paused.output, DeferredToolRequests)
    await store.save(paused, scope="alice")
    loaded = await store.load("d", scope="alice")
    assert loaded is not None
    assert loaded.deferred_tool_requests == paused.output
    assert loaded.deferred_tool_requests is not None
    assert loaded.deferred_tool_requests.approvals[0].args == {"path": "a.txt", "why": "tidy up"}
    assert loaded.usage == paused.usage and loaded.usage.requests == 1
    # a whole fork keeps what the conversation waits on, a partial one waits on nothing
    whole = await store.fork("d", new_conversation_id="d-whole")
    assert whole.deferred_tool_requests == paused.output
    partial = await store.fork("d", at=1, new_conversation_id="d-part")
    assert partial.deferred_tool_requests is None and partial.usage == RunUsage()
    results = loaded.deferred_tool_requests.build_results(approve_all=True)
    resumed = await agent.run(conversation=loaded, deferred_tool_results=results)
    assert resumed.output == "done: a.txt deleted"
    await store.save(resumed)
    final = await store.load("d")
    assert final is not None and final.deferred_tool_requests is None
    assert final.messages == resumed.all_messages() and final.usage == resumed.usage
    assert final.usage.tool_calls == 1 and final.usage.requests == 2
    waiting = await store.load("d-whole")
    assert waiting is not None and waiting.deferred_tool_requests == paused.output
    # a branch away from the pause forgets what it waited on
    record = await store.read_record("d-whole")
    assert record is not None
    branched = await store.branch("d-whole", at=1, expected_revision=record.revision)
    assert branched.deferred_tool_requests is None
    kept = await store.branch("d-whole", at=1, expected_revision=branched.revision)
    assert kept.deferred_tool_requests is None


async def test_agent_runs_are_saved_and_reloaded(store: ConversationStore) -> None:
    agent = _tool_agent()
    conversation = await store.load("run") or Conversation(conversation_id="run")
    first = await agent.run("first", conversation=conversation)
    await store.save(first)
    loaded = await store.load("run")
    assert loaded is not None and loaded.messages == first.all_messages()
    second = await agent.run("second", conversation=loaded)
    saved = await store.save(second)
    assert [e.message for e in saved] == second.new_messages()
    again = await store.load("run")
    assert again is not None and again.messages == second.all_messages()
    assert again.usage == second.usage and again.revision == second.conversation.revision
    kinds = [p.part_kind for m in again.messages for p in m.parts]
    assert kinds.count("tool-call") == 2 and kinds.count("tool-return") == 2
    test_agent: Agent[None, str] = Agent(TestModel())

    @test_agent.tool_plain
    def weather(city: str) -> str:
        return f"sunny in {city}"

    other = await test_agent.run("weather?", conversation=Conversation(conversation_id="tm"))
    await store.save(other)
    reloaded = await store.load("tm")
    assert reloaded is not None and reloaded.messages == other.all_messages()


# -- what only the server store has --------------------------------------------------------


async def test_layout_is_cluster_safe_and_entries_spread(
    ours: AgentMemoryConversationStore, raw: Any
) -> None:
    await _saved(ours, "c1", _messages("a", 6), scope="alice")
    await ours.fork("c1", at=3, new_conversation_id="c2")
    layout = ours.layout
    catalog = [layout.record("c1"), layout.record("c2"), layout.updated, layout.links]
    catalog += [layout.refs, layout.scope("alice")]
    assert {key_slot(k.encode()) for k in catalog} == {key_slot(layout.catalog.encode())}
    assert [raw.type(k) for k in catalog] == ["hash", "hash", "zset", "hash", "hash", "zset"]
    ids = await _ids(ours, "c1")
    entry_keys = [layout.entry(i) for i in ids]
    assert all(raw.type(k) == "hash" for k in entry_keys)
    assert len({key_slot(k.encode()) for k in entry_keys}) > 1  # spread over the cluster
    assert entry_keys[0] == f"{ours.name}:pai_conv:entry:{ids[0]}"
    tag = hashlib.sha256(ours.name.encode()).hexdigest()[:16]
    assert layout.record("c1") == f"{ours.name}:pai_conv:{{{tag}}}:rec:c1"
    assert raw.zrange(layout.scope("alice"), 0, -1) == ["c1", "c2"]  # the fork kept the scope
    assert raw.zrange(layout.updated, 0, -1) == ["c1", "c2"]
    refs = raw.hgetall(layout.refs)
    # each entry is held by its child; c2's tip holds the third too, c1's tip the last
    assert refs == {ids[0]: "1", ids[1]: "1", ids[2]: "2", ids[3]: "1", ids[4]: "1", ids[5]: "1"}
    assert raw.hget(layout.record("c1"), "tips") == ids[5]
    loaded = await ours.load("c1")
    assert loaded is not None
    loaded.messages.extend(_messages("b", 1))
    (added,) = await ours.save(loaded, scope="alice")  # the new head takes over the tip
    refs = raw.hgetall(layout.refs)
    assert refs[ids[5]] == "1" and refs[added.id] == "1"
    assert raw.hget(layout.record("c1"), "tips") == added.id
    assert raw.zrange(layout.scope("alice"), 0, -1) == ["c2", "c1"]
    await ours.delete("c1")
    await ours.delete("c2")
    assert raw.keys(f"{ours.name}:pai_conv*") == []  # nothing left behind


async def test_round_trips_match_the_module_doc(
    ours: AgentMemoryConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _saved(ours, "warm", _messages("w", 2))  # the scripts are cached from here on
    await ours.fork("warm")
    await ours.list_conversations()
    await ours.delete("warm")
    sent = record_async_round_trips(monkeypatch)

    def trips() -> int:
        count = len(sent)
        sent.clear()
        return count

    await _saved(ours, "c", _messages("a", 40))
    assert trips() == 3  # record read; the 40 messages; the record script
    loaded = await ours.load("c")
    assert trips() == 3 and loaded is not None  # record; id chain; the 40 messages
    await ours.load("c", limit=5)
    assert trips() == 3
    loaded.messages.extend(_messages("b", 2))
    await ours.save(loaded)
    assert trips() == 3
    await ours.list_conversations()
    assert trips() == 1
    await ours.fork("c", new_conversation_id="f")
    assert trips() == 4  # record, history (2), record script: no message is copied
    await ours.read_entry((await _ids(ours, "f"))[0])
    trips()
    await ours.delete("c")
    assert trips() == 2  # record read; script (the fork holds every entry: none released)
    await ours.delete("f")
    assert trips() == 3  # record read; script; unlink of the 42 released messages


async def test_a_failed_cleanup_never_fails_a_committed_delete(
    ours: AgentMemoryConversationStore,
    raw: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await _saved(ours, "c", _messages("a", 3))
    ids = await _ids(ours, "c")
    batch = clients.AsyncExecutor.batch

    async def no_unlink(self: Any, b: Any) -> Any:
        if any(c.name.upper() == "UNLINK" for c in b.commands):
            raise ServerUnavailableError("connection dropped")
        return await batch(self, b)

    monkeypatch.setattr(clients.AsyncExecutor, "batch", no_unlink)
    with caplog.at_level(logging.WARNING):
        await ours.delete("c")  # the script committed: no error for the caller
    assert await ours.load("c") is None
    assert "could not delete 3 released message(s)" in caplog.text
    assert all(raw.exists(ours.layout.entry(i)) for i in ids)  # left behind, unreferenced
    assert raw.hlen(ours.layout.links) == 0
    monkeypatch.undo()
    await ours.list_conversations()  # the buffered counter rides on the next round trip
    failures = raw.hget(KeyLayout(ours.name).stats, CLEANUP_FAILURES)
    assert failures is not None and int(failures) == 1


async def test_corrupt_entries_are_skipped_logged_and_counted(
    ours: AgentMemoryConversationStore, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    messages = _messages("a", 4)
    await _saved(ours, "c", messages)
    ids = await _ids(ours, "c")
    raw.hset(ours.layout.entry(ids[1]), "message", "not json at all")
    raw.hset(ours.layout.entry(ids[2]), "kind", "something-newer")
    with caplog.at_level(logging.WARNING):
        loaded = await ours.load("c")
    assert loaded is not None and loaded.messages == [messages[0], messages[3]]
    assert ours.skipped == 2 and "skipped 2 corrupt" in caplog.text
    assert "not json" not in caplog.text  # never the content
    entries = await ours.load_entries("c")
    assert entries is not None and [e.id for e in entries] == [ids[0], ids[3]]
    assert entries[1].parent_id == ids[2]  # the links stay whole
    with pytest.raises(ReplyParseError):
        await ours.read_entry(ids[1])
    loaded.messages.extend(_messages("b", 1))
    added = await ours.save(loaded)  # a loaded conversation still appends
    assert added[0].parent_id == ids[3]
    raw.delete(ours.layout.entry(ids[0]))  # a message gone while its record is unchanged
    with pytest.raises(NotFoundError):
        await ours.load("c")


async def test_a_corrupt_record_is_a_library_error_and_skipped_in_listings(
    ours: AgentMemoryConversationStore, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    await _saved(ours, "bad", _messages("a", 2))
    await _saved(ours, "good", _messages("b", 2))
    raw.hset(ours.layout.record("bad"), "record", '{"conversation_id": "bad", "format_version": 9}')
    with pytest.raises(ReplyParseError):
        await ours.load("bad")
    with pytest.raises(ReplyParseError):
        await ours.save(Conversation(conversation_id="bad"))
    with caplog.at_level(logging.WARNING):
        listed = await ours.list_conversations()
    assert [r.conversation_id for r in listed] == ["good"]
    assert ours.skipped == 1 and "corrupt record" in caplog.text
    raw.hset(ours.layout.record("good"), "record", b"\xff\xfe")  # not even UTF-8
    assert await ours.list_conversations() == [] and ours.skipped == 3


async def test_an_index_entry_whose_record_is_gone_is_dropped_not_reported_corrupt(
    target: Target, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A record deleted or evicted behind the store's back: the listing drops its id
    from the index it read (logged, ``ghost_entries``), never counts it as corrupt; a
    record that exists but cannot be read stays reported and listed in the index."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    client = target.package.client(target.url)
    ours = AgentMemoryConversationStore(client=client, name=_name(), registry=registry)
    try:
        for cid, scope in (("gone", "alice"), ("damaged", None), ("kept", "alice")):
            await _saved(ours, cid, _messages(cid, 2), scope=scope)
        layout = ours.layout
        raw.delete(layout.record("gone"))
        raw.hdel(layout.record("damaged"), "record")  # exists, but cannot be read
        with caplog.at_level(logging.INFO):
            listed = await ours.list_conversations()
        assert [r.conversation_id for r in listed] == ["kept"]
        assert ours.skipped == 1  # the damaged record only
        assert "skipped 1 corrupt record" in caplog.text
        assert "dropped 1 index entr" in caplog.text
        assert raw.zrange(layout.updated, 0, -1) == ["damaged", "kept"]
        events = {"name": ours.name, "event": "ghost_entries"}
        assert registry.get_sample_value("agent_memory_events_total", events) == 1
        # the scope's index is healed when it is listed
        assert raw.zrange(layout.scope("alice"), 0, -1) == ["gone", "kept"]
        listed = await ours.list_conversations(scope="alice")
        assert [r.conversation_id for r in listed] == ["kept"]
        assert raw.zrange(layout.scope("alice"), 0, -1) == ["kept"]
        assert registry.get_sample_value("agent_memory_events_total", events) == 2
        caplog.clear()
        with caplog.at_level(logging.INFO):
            await ours.list_conversations()  # nothing left to drop
        assert "dropped" not in caplog.text and ours.skipped == 2
    finally:
        await client.aclose()


async def test_a_gone_record_is_dropped_from_the_index_in_process() -> None:
    """The same on the in-process client (the listing script's twin)."""
    client = AsyncInProcessClient()
    ours = AgentMemoryConversationStore(client=client, name=_name())
    await _saved(ours, "gone", _messages("g", 2))
    await _saved(ours, "kept", _messages("k", 2))
    client.keyspace.delete(ours.layout.record("gone"))
    listed = await ours.list_conversations()
    assert [r.conversation_id for r in listed] == ["kept"] and ours.skipped == 0
    assert client.keyspace.execute(("ZRANGE", ours.layout.updated, 0, -1)) == ["kept"]


async def test_bad_input_raises_invalid_input_and_writes_nothing(
    ours: AgentMemoryConversationStore, raw: Any, target: Target
) -> None:
    record = ConversationRecord(conversation_id="c", head_id=None)
    entry = ConversationEntry(parent_id=None, message=_messages("a", 1)[0])
    calls: list[Any] = [
        ours.read_record(""),
        ours.read_record(3),  # type: ignore[arg-type]
        ours.load(""),
        ours.read_history("x", limit=1.5),  # type: ignore[arg-type]
        ours.save(Conversation(conversation_id="")),
        ours.read_entry(""),
        ours.read_entry("a\nb"),
        ours.read_history("x", limit=True),
        ours.read_records(scope=3),  # type: ignore[arg-type]
        ours.read_records(limit=-1),
        ours.write_record("c", expected_revision=None),  # type: ignore[arg-type]
        ours.write_record(record, expected_revision=""),
        ours.write_record(dataclasses.replace(record, head_id="a\nb"), expected_revision=None),
        ours.write_record(dataclasses.replace(record, branches=[3]), expected_revision=None),  # type: ignore[list-item]
        ours.write_record(record, new_entries=[object()], expected_revision=None),  # type: ignore[list-item]
        ours.write_record(record, new_entries="abc", expected_revision=None),  # type: ignore[arg-type]
        ours.write_record(
            record,
            new_entries=[dataclasses.replace(entry, message="hi")],  # type: ignore[arg-type]
            expected_revision=None,
        ),
        ours.delete_record("c", expected_revision=""),
        ours.delete("", scope=None),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError):
            await call
    for kwargs in ({"name": ""}, {"name": 3}, {"client": None}, {"client": object()}):
        arguments: dict[str, Any] = {"client": ours.client, "name": "n", **kwargs}
        with pytest.raises(InvalidInputError):
            AgentMemoryConversationStore(**arguments)
    with pytest.raises(InvalidInputError):
        AgentMemoryConversationStore.from_url("http://x", name="n")
    assert raw.keys(f"{ours.name}:*") == []


async def test_list_conversations_with_an_unbounded_limit_lists_all(
    ours: AgentMemoryConversationStore,
) -> None:
    await _saved(ours, "a", _messages("a", 1))
    await _saved(ours, "b", _messages("b", 1))
    for limit in (sys.maxsize, 2**63, 2**32, 2**32 - 1):  # "no real limit" idioms
        listed = await ours.list_conversations(limit=limit)
        assert [r.conversation_id for r in listed] == ["b", "a"], limit


async def test_entries_that_would_loop_are_refused_and_nothing_is_written(
    ours: AgentMemoryConversationStore, raw: Any
) -> None:
    message = _messages("a", 1)[0]
    record = ConversationRecord(conversation_id="c", head_id="e1")
    loops = [
        [ConversationEntry(id="e1", parent_id="e1", message=message)],  # its own parent
        [  # a loop among new entries
            ConversationEntry(id="e1", parent_id="e2", message=message),
            ConversationEntry(id="e2", parent_id="e1", message=message),
        ],
        [  # a parent that comes later
            ConversationEntry(id="e1", parent_id="e2", message=message),
            ConversationEntry(id="e2", parent_id=None, message=message),
        ],
        [  # the same id twice
            ConversationEntry(id="e1", parent_id=None, message=message),
            ConversationEntry(id="e1", parent_id=None, message=message),
        ],
    ]
    for entries in loops:
        with pytest.raises(InvalidInputError):
            await ours.write_record(record, new_entries=entries, expected_revision=None)
    assert raw.keys(f"{ours.name}:*") == []
    # a parent neither stored nor an earlier new entry: refused by the write script
    await _saved(ours, "kept", _messages("k", 2))
    orphan = [ConversationEntry(id="e1", parent_id="nowhere", message=message)]
    with pytest.raises(InvalidInputError, match="nowhere"):
        await ours.write_record(record, new_entries=orphan, expected_revision=None)
    assert await ours.read_record("c") is None
    assert not raw.exists(ours.layout.entry("e1"))  # its message was taken back
    assert not raw.hexists(ours.layout.links, "e1")


async def test_a_looping_chain_left_in_the_store_is_reported_not_walked_forever(
    ours: AgentMemoryConversationStore, raw: Any
) -> None:
    await _saved(ours, "c", _messages("a", 3))
    ids = await _ids(ours, "c")
    raw.hset(ours.layout.links, ids[0], ids[2])  # another writer closed a loop
    with pytest.raises(ReplyParseError, match="loop"):
        await asyncio.wait_for(ours.load("c"), 10)
    with pytest.raises(ReplyParseError, match="loop"):
        await asyncio.wait_for(ours.read_history(ids[2]), 10)
    # a window shorter than the loop still reads (the walk stops at the window)
    assert [e.id for e in await ours.read_history(ids[2], limit=2)] == ids[1:]
    assert raw.ping()  # the server never went busy


async def test_a_reused_entry_id_never_overwrites_a_stored_message(
    ours: AgentMemoryConversationStore, raw: Any
) -> None:
    messages = _messages("a", 2)
    await _saved(ours, "c", messages)
    ids = await _ids(ours, "c")
    other = _messages("other", 1)[0]
    reuse = ConversationEntry(id=ids[1], parent_id=None, message=other)
    fresh = ConversationEntry(id="fresh", parent_id=ids[1], message=other)
    record = ConversationRecord(conversation_id="d", head_id="fresh")
    with pytest.raises(InvalidInputError, match="another message"):
        await ours.write_record(record, new_entries=[reuse, fresh], expected_revision=None)
    loaded = await ours.load("c")
    assert loaded is not None and loaded.messages == messages  # c's message untouched
    assert await ours.read_record("d") is None
    assert not raw.exists(ours.layout.entry("fresh"))  # what the refused write stored: gone
    # the same entry again (a retried write): accepted, nothing changes
    same = await ours.read_entry(ids[1])
    follow = ConversationEntry(id="next", parent_id=ids[1], message=other)
    record = ConversationRecord(conversation_id="d", head_id="next")
    await ours.write_record(record, new_entries=[same, follow], expected_revision=None)
    forked = await ours.load("d")
    assert forked is not None and forked.messages == [*messages, other]
    assert (await ours.load("c")) is not None


def test_a_name_that_could_share_keys_with_another_store_is_refused(
    target: Target,
) -> None:
    client = target.package.client(target.url)
    # "a:pai_conv:entry:x" + entry "y" would be the key of name "a" + entry "x:pai_conv:entry:y"
    for name in ("a:pai_conv:entry:x", "a:pai_conv", "pai_conv:x:pai_conv"):
        with pytest.raises(InvalidInputError, match="pai_conv"):
            AgentMemoryConversationStore(client=client, name=name)
        with pytest.raises(InvalidInputError, match="pai_conv"):
            AgentMemoryConversationStore.from_url(target.url, name=name)
    AgentMemoryConversationStore(client=client, name="pai_conv:x")  # cannot collide


async def test_a_key_of_another_type_is_a_library_error(
    ours: AgentMemoryConversationStore, raw: Any
) -> None:
    await _saved(ours, "c", _messages("a", 2))
    layout = ours.layout
    raw.set(layout.record("other"), "a string")
    with pytest.raises(WrongTypeError):
        await ours.load("other")
    with pytest.raises(WrongTypeError):
        await ours.write_record(
            ConversationRecord(conversation_id="other", head_id=None), expected_revision=None
        )
    raw.delete(layout.updated)
    raw.set(layout.updated, "a string")
    with pytest.raises(WrongTypeError):
        await ours.list_conversations()
    loaded = await ours.load("c")
    assert loaded is not None
    loaded.messages.extend(_messages("b", 1))
    with pytest.raises(WrongTypeError):
        await ours.save(loaded)
    with pytest.raises(WrongTypeError):
        await ours.delete("c")
    raw.delete(layout.updated)
    links = raw.hgetall(layout.links)
    raw.delete(layout.links)
    raw.set(layout.links, "a string")
    with pytest.raises(WrongTypeError):
        await ours.load("c")
    raw.delete(layout.links)
    raw.hset(layout.links, mapping=links)
    # nothing was half written: the conversation carries on as it was
    again = await ours.load("c")
    assert again is not None and again.messages == _messages("a", 2)
    assert again.revision == loaded.revision
    raw.set(layout.entry("e1"), "a string")
    with pytest.raises(AgentMemoryError):
        await ours.read_entry("e1")


TENANT_SCOPES = st.one_of(st.none(), st.text(st.characters(codec="utf-8"), max_size=6))
TENANT_IDS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=10)


async def _observe(
    store: ConversationStore, plan: list[tuple[str | None, str]], probe: str | None
) -> dict[str, Any]:
    """What each tenant sees of conversations saved by ``plan`` (scope, id), after
    every other tenant tried to reach them."""
    owners = {cid: scope for scope, cid in plan}
    for scope, cid in plan:
        await _saved(store, cid, _messages(f"{scope}|{cid}|", 2), scope=scope)
    scopes = list(dict.fromkeys([*(scope for scope, _ in plan), probe]))
    for cid, owner in owners.items():
        for scope in scopes:
            if scope is not None and scope != owner:
                await store.delete(cid, scope=scope)  # another tenant's delete: no effect
    seen: dict[str, Any] = {}
    for scope in scopes:
        listed = await store.list_conversations(scope=scope)
        seen[f"list {scope!r}"] = sorted((r.conversation_id, r.scope) for r in listed)
        for cid, owner in owners.items():
            loaded = await store.load(cid, scope=scope)
            texts = (
                None if loaded is None else [p.content for m in loaded.messages for p in m.parts]
            )
            seen[f"load {cid!r} as {scope!r}"] = texts
            reachable = scope is None or scope == owner
            assert (loaded is not None) == reachable
            if loaded is not None:
                assert all(str(t).startswith(f"{owner}|{cid}|") for t in texts or [])
            if scope is not None:
                assert all(r.scope == scope for r in listed)
    return seen


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    plan=st.lists(
        st.tuples(TENANT_SCOPES, TENANT_IDS), min_size=1, max_size=5, unique_by=lambda t: t[1]
    ),
    probe=TENANT_SCOPES,
)
def test_tenants_never_see_each_other(
    target: Target, plan: list[tuple[str | None, str]], probe: str | None
) -> None:
    async def run() -> None:
        client = target.package.client(target.url)
        try:
            ours = AgentMemoryConversationStore(client=client, name=_name())
            expected = await _observe(InMemoryConversationStore(), plan, probe)
            assert await _observe(ours, plan, probe) == expected
            elsewhere = AgentMemoryConversationStore(client=client, name=_name())
            for _, cid in plan:  # the same ids under another name are other conversations
                assert await elsewhere.load(cid) is None
        finally:
            await client.aclose()

    asyncio.run(run())


async def test_a_blocking_client_runs_in_a_worker_thread(target: Target) -> None:
    client = target.package.client(target.url, blocking=True)
    try:
        store = AgentMemoryConversationStore(client=client, name=_name())
        result = await _tool_agent().run("hi", conversation=Conversation(conversation_id="b"))
        await store.save(result)
        loaded = await store.load("b")
        assert loaded is not None and loaded.messages == result.all_messages()
        assert store.client is client
    finally:
        client.close()


async def test_from_url_owns_and_closes_an_injected_client_stays_open(
    target: Target, ours: AgentMemoryConversationStore
) -> None:
    name = _name()
    async with AgentMemoryConversationStore.from_url(target.url, name=name) as owned:
        await _saved(owned, "c", _messages("a", 2))
        assert len((await owned.load("c")).messages) == 2  # type: ignore[union-attr]
    with pytest.raises(StoreClosedError):
        await owned.load("c")
    async with AgentMemoryConversationStore(client=ours.client, name=name) as shared:
        assert len((await shared.load("c")).messages) == 2  # type: ignore[union-attr]
    assert await ours.client.ping()
    assert await shared.load("c") is not None  # still usable
    assert "AgentMemoryConversationStore" in repr(shared)


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
async def test_on_a_cluster(package: Package, cluster_url: str) -> None:
    client: Any
    if package.name == "valkey":
        from valkey.asyncio.cluster import ValkeyCluster

        client = ValkeyCluster.from_url(cluster_url)
    else:
        from redis.asyncio.cluster import RedisCluster

        client = RedisCluster.from_url(cluster_url, decode_responses=True)
    from valkey.cluster import ValkeyCluster as Raw

    raw = Raw.from_url(cluster_url, decode_responses=True)
    store = AgentMemoryConversationStore(client=client, name=_name())
    try:
        agent = _tool_agent()
        for i in range(4):
            scope = "even" if i % 2 == 0 else "odd"
            result = await agent.run(f"p{i}", conversation=Conversation(conversation_id=f"c{i}"))
            await store.save(result, scope=scope)
            loaded = await store.load(f"c{i}", scope=scope)
            assert loaded is not None
            more = await agent.run(f"q{i}", conversation=loaded)
            await store.save(more)
            again = await store.load(f"c{i}")
            assert again is not None and again.messages == more.all_messages()
        ids = await _ids(store, "c0")
        assert len({key_slot(store.layout.entry(i).encode()) for i in ids}) > 1
        fork = await store.fork("c0", at=4, new_conversation_id="f", scope="odd")
        record = await store.read_record("c1")
        assert record is not None
        branched = await store.branch("c1", at=2, expected_revision=record.revision)
        assert len(branched.messages) == 2 and len(fork.messages) == 4
        listed = await store.list_conversations(scope="odd")
        assert [r.conversation_id for r in listed] == ["c1", "f", "c3"]
        for record in await store.list_conversations():
            await store.delete(record.conversation_id)
        leftover = [k for k in raw.scan_iter(match=f"{store.name}:pai_conv*")]
        assert leftover == []
    finally:
        raw.close()
        await client.aclose()
