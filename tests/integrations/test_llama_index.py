"""The LlamaIndex adapters against the real ``llama-index-core`` and real servers.

The chat store runs on plain Valkey and Valkey + valkey-search 1.2 with both client
packages (valkey: RESP2, bytes; redis: RESP3, str), and on a 3-primary cluster.
llama-index-core ships no reusable chat-store or memory-block suite, so
``SimpleChatStore``'s behaviours are replayed on ``SimpleChatStore`` and on ours with the
same assertions (sync and async), plus ``ChatMemoryBuffer`` over the store. The memory block runs inside a real LlamaIndex
``Memory`` whose token limit is small enough to flush into it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import valkey.asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.sql import MessageStatus

from agent_memory import MemoryStore, Scope, SyncMemoryStore
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import (
    AgentMemoryError,
    CapabilityError,
    InvalidInputError,
    WrongTypeError,
)
from agent_memory.integrations.llama_index import AgentMemoryBlock, AgentMemoryChatStore
from agent_memory.integrations.llama_index.memory_block import fit_text
from tests.conftest import _Servers
from tests.integrations.targets import PACKAGES, Package, Target

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama_index_memory.py"


def _name() -> str:
    return f"li{uuid.uuid4().hex[:10]}"


@pytest.fixture
def name() -> str:
    return _name()


@pytest.fixture
def chat(client: Any, aclient: Any, name: str) -> AgentMemoryChatStore:
    return AgentMemoryChatStore(client=client, async_client=aclient, name=name)


def _m(text: str, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=text)


# -- SimpleChatStore's behaviours, replayed on both stores ---------------------------------


def _scenario(store: Any) -> list[Any]:
    """SimpleChatStore's test scenarios; returns what each step observed."""
    seen: list[Any] = []
    store.add_message("user1", _m("a"))
    store.add_message("user1", _m("b", "assistant"))
    store.add_message("user2", _m("c"))
    seen.append([m.content for m in store.get_messages("user1")])
    seen.append(sorted(store.get_keys()))
    seen.append(store.get_messages("nobody"))
    store.set_messages("user1", [_m("x"), _m("y"), _m("z")])
    seen.append([m.content for m in store.get_messages("user1")])
    seen.append(store.delete_message("user1", 1).content)
    seen.append(store.delete_message("user1", 5))  # out of bound
    seen.append(store.delete_message("nobody", 0))
    seen.append(store.delete_message("user1", -1).content)
    seen.append([m.content for m in store.get_messages("user1")])
    for idx in (0, 1, -1, 99, -99):
        store.add_message("user2", _m(f"i{idx}"), idx=idx)
    seen.append([m.content for m in store.get_messages("user2")])
    seen.append(store.delete_last_message("user2").content)
    seen.append(store.delete_last_message("nobody"))
    seen.append([m.content for m in store.delete_messages("user2")])
    seen.append(store.delete_messages("user2"))
    seen.append(sorted(store.get_keys()))
    return seen


async def _ascenario(store: Any) -> list[Any]:
    """The same steps through the async twins."""
    seen: list[Any] = []
    await store.async_add_message("user1", _m("a"))
    await store.async_add_message("user1", _m("b", "assistant"))
    await store.async_add_message("user2", _m("c"))
    seen.append([m.content for m in await store.aget_messages("user1")])
    seen.append(sorted(await store.aget_keys()))
    seen.append(await store.aget_messages("nobody"))
    await store.aset_messages("user1", [_m("x"), _m("y"), _m("z")])
    seen.append([m.content for m in await store.aget_messages("user1")])
    seen.append((await store.adelete_message("user1", 1)).content)
    seen.append(await store.adelete_message("user1", 5))
    seen.append(await store.adelete_message("nobody", 0))
    seen.append((await store.adelete_message("user1", -1)).content)
    seen.append([m.content for m in await store.aget_messages("user1")])
    for idx in (0, 1, -1, 99, -99):
        if isinstance(store, SimpleChatStore):  # its async twin takes no idx
            store.add_message("user2", _m(f"i{idx}"), idx=idx)
        else:
            await store.async_add_message("user2", _m(f"i{idx}"), idx=idx)
    seen.append([m.content for m in await store.aget_messages("user2")])
    seen.append((await store.adelete_last_message("user2")).content)
    seen.append(await store.adelete_last_message("nobody"))
    seen.append([m.content for m in await store.adelete_messages("user2")])
    seen.append(await store.adelete_messages("user2"))
    seen.append(sorted(await store.aget_keys()))
    return seen


def test_behaves_as_simple_chat_store(chat: AgentMemoryChatStore) -> None:
    expected = _scenario(SimpleChatStore())
    assert _scenario(chat) == expected
    assert expected[1] == ["user1", "user2"] and expected[-1] == ["user1"]


async def test_async_twins_behave_as_simple_chat_store(chat: AgentMemoryChatStore) -> None:
    expected = await _ascenario(SimpleChatStore())
    assert await _ascenario(chat) == expected


async def test_only_a_blocking_client_serves_async_in_a_thread(client: Any, name: str) -> None:
    store = AgentMemoryChatStore(client=client, name=name)
    assert await _ascenario(store) == await _ascenario(SimpleChatStore())


async def test_only_an_asyncio_client_refuses_blocking_calls(aclient: Any, name: str) -> None:
    store = AgentMemoryChatStore(async_client=aclient, name=name)
    await store.async_add_message("k", _m("a"))
    with pytest.raises(CapabilityError):
        store.get_messages("k")
    assert [m.content for m in await store.aget_messages("k")] == ["a"]


def test_messages_round_trip_exactly(chat: AgentMemoryChatStore, raw: Any) -> None:
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="be brief"),
        ChatMessage(role="user", content='héllo 🌍 \x00 "quoted"', additional_kwargs={"n": 1}),
        ChatMessage(
            role="assistant",
            content=None,
            additional_kwargs={"tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1}}]},
        ),
        ChatMessage(role=MessageRole.TOOL, content="2", additional_kwargs={"tool_call_id": "c1"}),
    ]
    key = "conv/ü *[x]?"
    chat.set_messages(key, messages)
    assert chat.get_messages(key) == messages
    assert raw.llen(chat.chat_key(key)) == 4
    assert chat.chat_key(key) == f"{chat.name}:li_chat:{key}"


def test_get_keys_escapes_glob_characters(client: Any, name: str) -> None:
    star = AgentMemoryChatStore(client=client, name=name + "*")
    plain = AgentMemoryChatStore(client=client, name=name + "ab")
    plain.add_message("k1", _m("a"))
    star.add_message("k?[2]", _m("b"))
    assert star.get_keys() == ["k?[2]"]
    assert plain.get_keys() == ["k1"]


def test_corrupt_entries_are_skipped_and_counted(chat: AgentMemoryChatStore, raw: Any) -> None:
    chat.add_message("k", _m("a"))
    raw.rpush(chat.chat_key("k"), "not json", '{"role": 42}')
    chat.add_message("k", _m("b"))
    assert [m.content for m in chat.get_messages("k")] == ["a", "b"]
    assert chat.skipped == 2
    raw.rpush(chat.chat_key("k"), "garbage")
    assert chat.delete_last_message("k").content == "b"  # the corrupt tail is dropped
    assert chat.skipped == 3  # and counted
    taken = chat.delete_messages("k")
    assert [m.content for m in taken or []] == ["a"]
    assert chat.skipped == 5


def test_delete_last_message_over_a_corrupt_run_takes_few_round_trips(
    chat: AgentMemoryChatStore, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.core import clients

    chat.add_message("k", _m("a"))
    chat.add_message("k", _m("b"))
    assert chat.delete_last_message("k").content == "b"  # the script cache is warm
    raw.rpush(chat.chat_key("k"), *(["garbage"] * 300))
    sent: list[str] = []
    batch, command = clients.SyncExecutor.batch, clients.SyncExecutor.command

    def counted_batch(self: Any, b: Any) -> Any:
        sent.append(b.commands[0].name)
        return batch(self, b)

    def counted_command(self: Any, cmd: Any) -> Any:
        sent.append(cmd.name)
        return command(self, cmd)

    monkeypatch.setattr(clients.SyncExecutor, "batch", counted_batch)
    monkeypatch.setattr(clients.SyncExecutor, "command", counted_command)
    skipped = chat.skipped
    assert chat.delete_last_message("k").content == "a"
    assert len(sent) <= 8, sent  # not one RPOP per corrupt element
    assert chat.skipped == skipped + 300  # still logged and counted
    assert raw.llen(chat.chat_key("k")) == 0


def test_ttl_slides_and_no_ttl_persists(client: Any, name: str, raw: Any) -> None:
    timed = AgentMemoryChatStore(client=client, name=name, ttl=30)
    timed.add_message("k", _m("a"))
    assert 0 < raw.pttl(timed.chat_key("k")) <= 30_000
    raw.pexpire(timed.chat_key("k"), 5_000)
    timed.get_messages("k")
    assert raw.pttl(timed.chat_key("k")) > 5_000  # a read refreshes it
    timed.set_messages("k", [_m("b")])
    assert raw.pttl(timed.chat_key("k")) > 5_000
    plain = AgentMemoryChatStore(client=client, name=name + "p")
    plain.add_message("k", _m("a"))
    assert raw.pttl(plain.chat_key("k")) == -1


async def test_concurrent_appends_lose_nothing(chat: AgentMemoryChatStore) -> None:
    await asyncio.gather(*(chat.async_add_message("k", _m(str(i))) for i in range(50)))
    assert sorted(int(m.content or "") for m in await chat.aget_messages("k")) == list(range(50))


def test_bad_input(chat: AgentMemoryChatStore, client: Any, aclient: Any, name: str) -> None:
    for call in (
        lambda: chat.add_message("", _m("a")),
        lambda: chat.add_message("k", {"role": "user"}),  # type: ignore[arg-type]
        lambda: chat.add_message("k", _m("a"), idx=True),
        lambda: chat.set_messages("k", "text"),  # type: ignore[arg-type]
        lambda: chat.set_messages("k", [_m("a"), "b"]),  # type: ignore[list-item]
        lambda: chat.delete_message("k", 1.5),  # type: ignore[arg-type]
        lambda: AgentMemoryChatStore(name=name),
        lambda: AgentMemoryChatStore(client=aclient, name=name),
        lambda: AgentMemoryChatStore(async_client=client, name=name),
        lambda: AgentMemoryChatStore(client=client, name=name, ttl=-1),
    ):
        with pytest.raises(InvalidInputError):
            call()
    assert chat.get_keys() == []  # nothing was written


def test_a_key_of_another_type_is_a_library_error(chat: AgentMemoryChatStore, raw: Any) -> None:
    raw.set(chat.chat_key("k"), "a string")
    with pytest.raises(AgentMemoryError):
        chat.get_messages("k")
    with pytest.raises(AgentMemoryError):
        chat.add_message("k", _m("a"), idx=0)


def test_a_key_of_another_type_is_refused_and_keeps_its_lifetime(
    client: Any, name: str, raw: Any
) -> None:
    """Another client's string at a chat's key, with a TTL: every call raises
    WrongTypeError and the key keeps its value and its (absent) expiry. The scripts'
    ``PEXPIRE`` was pipelined beside them, so inserts and deletes by index gave another
    client's key a lifetime (the server deleted it later), and ``set_messages`` deleted
    it outright."""
    chat = AgentMemoryChatStore(client=client, name=name, ttl=60)
    key = chat.chat_key("k")
    raw.set(key, "another client's value")
    for call in (
        lambda: chat.get_messages("k"),
        lambda: chat.add_message("k", _m("a")),
        lambda: chat.add_message("k", _m("a"), idx=0),
        lambda: chat.set_messages("k", [_m("a")]),
        lambda: chat.delete_message("k", 0),
        lambda: chat.delete_last_message("k"),
        lambda: chat.delete_messages("k"),
    ):
        with pytest.raises(WrongTypeError):
            call()
        assert raw.pttl(key) == -1
    assert raw.get(key) == "another client's value"


def test_a_long_rewrite_with_a_lifetime_is_whole(client: Any, name: str, raw: Any) -> None:
    """Ten thousand messages in one ``set_messages`` / insert with a TTL: the script runs
    inside the lifetime wrapper, which hands it every argument but the TTL."""
    chat = AgentMemoryChatStore(client=client, name=name, ttl=60)
    chat.set_messages("k", [_m(str(i)) for i in range(10_000)])
    chat.add_message("k", _m("first"), idx=0)
    got = [m.content for m in chat.get_messages("k")]
    assert got == ["first", *map(str, range(10_000))]
    assert 0 < raw.pttl(chat.chat_key("k")) <= 60_000


async def test_from_url_owns_and_closes(target: Target, name: str) -> None:
    store = AgentMemoryChatStore.from_url(target.url, name=name)
    await store.async_add_message("k", _m("a"))
    assert [m.content for m in store.get_messages("k")] == ["a"]
    await store.aclose()


def test_chat_memory_buffer_over_the_store(chat: AgentMemoryChatStore) -> None:
    buffer = ChatMemoryBuffer.from_defaults(chat_store=chat, chat_store_key="u1", token_limit=1000)
    buffer.put(_m("hello"))
    buffer.put(_m("hi there", "assistant"))
    other = ChatMemoryBuffer.from_defaults(chat_store=chat, chat_store_key="u1")
    assert [m.content for m in other.get_all()] == ["hello", "hi there"]
    buffer.reset()
    assert chat.get_messages("u1") == []


KEYS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(keys=st.lists(KEYS, min_size=2, max_size=4, unique=True))
def test_keys_never_see_each_other(target: Target, keys: list[str]) -> None:
    made = target.package.client(target.url, blocking=True)
    try:
        store = AgentMemoryChatStore(client=made, name=_name())
        for n, key in enumerate(keys):
            store.set_messages(key, [_m(f"{key}|{i}") for i in range(n + 1)])
        store.delete_messages(keys[-1])
        for n, key in enumerate(keys[:-1]):
            assert [m.content for m in store.get_messages(key)] == [
                f"{key}|{i}" for i in range(n + 1)
            ]
        assert store.get_messages(keys[-1]) == []
        assert store.get_keys() == sorted(keys[:-1])
    finally:
        made.close()


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
async def test_every_method_on_a_cluster(package: Package, cluster_url: str) -> None:
    client, aclient = package.cluster_clients(cluster_url)
    try:
        chat = AgentMemoryChatStore(client=client, async_client=aclient, name=_name(), ttl=60)
        keys = [f"chat-{i}" for i in range(12)]  # spread over every primary's slots
        for key in keys:
            chat.set_messages(key, [_m("a"), _m("b"), _m("c")])
            chat.add_message(key, _m("x"), idx=1)
            assert (chat.delete_message(key, 0) or _m("")).content == "a"
            assert (chat.delete_last_message(key) or _m("")).content == "c"
            await chat.async_add_message(key, _m("y"))
            assert [m.content for m in await chat.aget_messages(key)] == ["x", "b", "y"]
        assert chat.get_keys() == sorted(keys) == await chat.aget_keys()
        for key in keys[1:]:
            assert [m.content for m in chat.delete_messages(key) or []] == ["x", "b", "y"]
        assert chat.get_keys() == keys[:1]
    finally:
        client.close()
        await aclient.aclose()


# -- the memory block ----------------------------------------------------------------------


@pytest.fixture
async def store(aclient: Any, name: str) -> AsyncIterator[MemoryStore]:
    memory = MemoryStore(aclient, name, HashingEmbedder(), default_threshold=2.0)
    await memory.ensure_index()
    yield memory


def _memory(block: AgentMemoryBlock, session: str = "s1") -> Memory:
    return Memory.from_defaults(
        session_id=session,
        token_limit=40,
        token_flush_size=8,
        chat_history_token_ratio=0.5,
        tokenizer_fn=str.split,
        memory_blocks=[block],
    )


TURNS = [
    ("user", "I prefer dark mode in every editor."),
    ("assistant", "Noted, dark mode everywhere."),
    ("system", "internal note that must not be remembered"),
    ("user", "Tell me about the weather for a while please."),
    ("assistant", "It is sunny and warm outside today."),
]


async def test_memory_flushes_into_the_block_and_recalls(store: MemoryStore) -> None:
    scope = Scope(namespace="acme", agent_id="assistant")
    memory = _memory(AgentMemoryBlock(store=store, scope=scope, k=3))
    for role, text in TURNS:
        await memory.aput(_m(text, role))
    archived = await memory.aget_all(status=MessageStatus.ARCHIVED)
    assert archived, "the token limit must have flushed something"
    stored = await store.list(scope=scope, limit=50)
    contents = {item.content for item in stored.items}
    assert "I prefer dark mode in every editor." in contents
    assert not any("internal note" in c for c in contents)
    assert all(item.metadata.get("session_id") == "s1" for item in stored.items)
    messages = await memory.aget(input="which editor mode do I prefer?")
    assert messages[0].role == MessageRole.SYSTEM
    assert "- I prefer dark mode in every editor." in (messages[0].content or "")


def test_fit_text_cuts_at_a_character_boundary() -> None:
    assert fit_text("short", 10) == ("short", False)
    assert fit_text("abc", 3) == ("abc", False)
    assert fit_text("aé", 2) == ("a", True)  # "é" is 2 bytes: never half of it
    assert fit_text("éé", 3) == ("é", True)
    assert fit_text("x" * 40, 32) == ("x" * 32, True)


LONG_TURNS = [
    ("user", "I prefer dark mode in every editor."),
    ("assistant", "é " * 20000),  # 80 KB, over the store's 32 KiB content limit
    ("user", "Tell me about the weather for a while please."),
    ("assistant", "It is sunny and warm outside today."),
]


async def test_a_flushed_text_over_the_limit_is_cut_and_the_flush_kept(
    aclient: Any, name: str
) -> None:
    """``Memory`` archives a flush before handing it to the block: one long text must
    not make the whole flush (and the user's ``aput``) fail."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    store = MemoryStore(aclient, name, HashingEmbedder(), default_threshold=2.0, registry=registry)
    await store.ensure_index()
    scope = Scope(namespace="acme", agent_id="assistant")
    memory = _memory(AgentMemoryBlock(store=store, scope=scope))
    for role, text in LONG_TURNS:
        await memory.aput(_m(text, role))
    contents = {item.content for item in (await store.list(scope=scope, limit=50)).items}
    assert "I prefer dark mode in every editor." in contents
    (cut,) = [c for c in contents if c.startswith("é")]
    assert len(cut.encode()) <= store.max_content_bytes and len(cut.encode()) > 32_000
    sample = registry.get_sample_value(
        "agent_memory_events_total", {"name": name, "event": "truncated_contents"}
    )
    assert sample == 1


async def test_a_flushed_text_the_store_refuses_is_cleaned_and_the_flush_kept(
    aclient: Any, name: str
) -> None:
    """A flushed message holding a control character or a lone surrogate (which the
    store refuses in a memory) is remembered with a space / U+FFFD in their place, and
    the rest of the flush with it: ``Memory`` has archived it already."""
    store = MemoryStore(aclient, name, HashingEmbedder(), default_threshold=2.0)
    await store.ensure_index()
    scope = Scope(namespace="acme", agent_id="assistant")
    block = AgentMemoryBlock(store=store, scope=scope)
    turns = [_m("I prefer dark mode."), _m("nul\x00here"), _m("bad \ud800 half"), _m("\x07")]
    await block.aput(turns)
    contents = {item.content for item in (await store.list(scope=scope, limit=50)).items}
    assert contents == {"I prefer dark mode.", "nul here", "bad \ufffd half"}


def test_a_flushed_text_over_the_limit_is_cut_through_a_sync_store(client: Any, name: str) -> None:
    sync = SyncMemoryStore(client, name, HashingEmbedder(), default_threshold=2.0,
                           max_content_bytes=1000)  # fmt: skip
    sync.ensure_index()
    unused = MemoryStore(valkey.asyncio.Valkey(), name, HashingEmbedder())
    scope = Scope(namespace="acme", agent_id="assistant")
    memory = _memory(AgentMemoryBlock(store=unused, scope=scope, sync_store=sync))
    for role, text in LONG_TURNS:
        memory.put(_m(text, role))
    contents = {item.content for item in sync.list(scope=scope, limit=50).items}
    assert "I prefer dark mode in every editor." in contents
    # 1000 bytes end inside an "é": the cut keeps 999 (whole characters only)
    assert any(c.startswith("é") and len(c.encode()) == 999 for c in contents)


async def test_block_returns_nothing_without_text(store: MemoryStore) -> None:
    block = AgentMemoryBlock(store=store, scope=Scope(namespace="n"))
    assert await block.aget([]) == ""
    assert await block.aget([ChatMessage(role="user", blocks=[])]) == ""
    await block.aput([])
    assert (await store.list(scope=Scope(namespace="n"))).total == 0


async def test_block_bad_construction(store: MemoryStore, aclient: Any) -> None:
    scope = Scope()
    for kwargs in (
        {"store": SyncMemoryStore.__new__(SyncMemoryStore), "scope": scope},
        {"store": object(), "scope": scope},
        {"store": store, "scope": {"namespace": "a"}},
        {"store": store, "scope": scope, "k": 0},
        {"store": store, "scope": scope, "retrieval_context_window": -1},
        {"store": store, "scope": scope, "roles": "user"},
        {"store": store, "scope": scope, "importance": 2},
    ):
        with pytest.raises(InvalidInputError):
            AgentMemoryBlock(**kwargs)


async def _assert_isolated(store: MemoryStore, mine: Scope, other: Scope) -> None:
    token = uuid.uuid4().hex[:8]
    writer = AgentMemoryBlock(store=store, scope=mine)
    await writer.aput([_m(f"secret {token} of the first scope")])
    reader = AgentMemoryBlock(store=store, scope=other, k=20)
    assert token not in await reader.aget([_m(f"secret {token}")])
    assert token in await writer.aget([_m(f"secret {token}")])


SCOPE_PAIRS = [
    (Scope(namespace="a"), Scope(namespace="b")),
    (Scope(namespace="a"), Scope()),
    (Scope(namespace="a", agent_id="x"), Scope(namespace="a", agent_id="y")),
    (Scope(namespace="a", thread_id="t1"), Scope(namespace="a", thread_id="t2")),
    (Scope(namespace="a*"), Scope(namespace="a")),
    (Scope(namespace="{a}"), Scope(namespace="a")),
]


@pytest.mark.parametrize(("mine", "other"), SCOPE_PAIRS)
async def test_scopes_never_see_each_other(store: MemoryStore, mine: Scope, other: Scope) -> None:
    await _assert_isolated(store, mine, other)
    await _assert_isolated(store, other, mine)


SCOPE_VALUES = st.one_of(st.none(), st.text(st.characters(codec="utf-8"), min_size=1, max_size=8))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(a=SCOPE_VALUES, b=SCOPE_VALUES)
def test_namespaces_never_see_each_other(target: Target, a: str | None, b: str | None) -> None:
    if a == b:
        return

    async def run() -> None:
        made = target.package.client(target.url)
        try:
            memory = MemoryStore(made, _name(), HashingEmbedder(), default_threshold=2.0)
            await memory.ensure_index()
            await _assert_isolated(memory, Scope(namespace=a), Scope(namespace=b))
        finally:
            await made.aclose()

    asyncio.run(run())


# -- the example ---------------------------------------------------------------------------


def test_example_runs_and_keeps_its_promise(servers: _Servers) -> None:
    env = {**os.environ, "AGENT_MEMORY_URL": servers.get("valkey").url}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for line in (
        "holds: [\"user: Hi, I'm Ada.\", 'assistant: Hello Ada!']",
        "- I prefer dark mode in every editor I use.",
    ):
        assert line in done.stdout, done.stdout[-2000:]


def test_corrupt_entries_reach_the_metrics(client: Any, name: str, raw: Any) -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    chat = AgentMemoryChatStore(client=client, name=name, registry=registry)
    chat.add_message("k", _m("a"))
    raw.rpush(chat.chat_key("k"), "not json")
    assert [m.content for m in chat.get_messages("k")] == ["a"]
    sample = registry.get_sample_value(
        "agent_memory_events_total", {"name": name, "event": "corrupt_entries"}
    )
    assert sample == 1


async def test_get_keys_skips_and_counts_keys_that_are_not_utf8(
    chat: AgentMemoryChatStore, raw: Any
) -> None:
    """A key another writer made under the name that is not UTF-8 fails no listing
    (whatever the client's decode_responses): it is skipped, logged and counted."""
    chat.add_message("é", _m("a"))
    raw.execute_command("RPUSH", chat.chat_key("a")[:-1].encode() + b"\xff", "x")
    assert chat.get_keys() == ["é"]
    assert await chat.aget_keys() == ["é"]
    assert chat.skipped == 2


def test_memorys_blocking_methods_work_through_a_sync_store(client: Any, name: str) -> None:
    """``Memory.put`` / ``get`` run each call in an event loop of their own: the block
    serves them through its ``sync_store`` (an asyncio client could not)."""
    sync = SyncMemoryStore(client, name, HashingEmbedder(), default_threshold=2.0)
    sync.ensure_index()
    unused = MemoryStore(valkey.asyncio.Valkey(), name, HashingEmbedder())
    scope = Scope(namespace="acme", agent_id="assistant")
    memory = _memory(AgentMemoryBlock(store=unused, scope=scope, k=3, sync_store=sync))
    for role, text in TURNS:
        memory.put(_m(text, role))
    contents = {item.content for item in sync.list(scope=scope, limit=50).items}
    assert "I prefer dark mode in every editor." in contents
    messages = memory.get(input="which editor mode do I prefer?")
    assert "- I prefer dark mode in every editor." in (messages[0].content or "")


async def test_a_sync_store_of_another_kind_is_refused(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError) as info:
        AgentMemoryBlock(store=store, scope=Scope(namespace="n"), sync_store=store)
    assert info.value.field == "sync_store"


def test_a_chat_written_by_a_script_the_server_did_not_know_keeps_its_ttl(
    client: Any, name: str, raw: Any
) -> None:
    chat = AgentMemoryChatStore(client=client, name=name, ttl=30)
    raw.script_flush()
    chat.set_messages("k", [_m("a"), _m("b")])  # one script, sent again after NOSCRIPT
    assert 0 < raw.pttl(chat.chat_key("k")) <= 30_000
