"""``AgentMemoryDBChatStore`` (LlamaIndex's ``AsyncDBChatStore``) against the real
``llama-index-core`` and real servers.

``SQLAlchemyChatStore`` on in-memory SQLite (``Memory``'s default) is the reference:
its behaviours are replayed on it and on ours with the same assertions (``db_store`` is
either), and a real ``Memory`` that flushes and archives runs over both and must observe
the same. Ours runs on plain Valkey and Valkey + valkey-search 1.2 with both client
packages (valkey: RESP2, bytes; redis: RESP3, str), and once on a 3-primary cluster.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import Memory
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

from agent_memory.errors import (
    AgentMemoryError,
    CapabilityError,
    InvalidInputError,
    WrongTypeError,
)
from agent_memory.integrations.llama_index import AgentMemoryDBChatStore
from tests.conftest import _Servers
from tests.integrations.targets import KINDS, PACKAGES, Package, Target

pytestmark = pytest.mark.integration

ACTIVE, ARCHIVED = MessageStatus.ACTIVE, MessageStatus.ARCHIVED
TARGETS = [(k, p) for k in KINDS for p in PACKAGES]
TARGET_IDS = [f"{k}-{p.name}" for k, p in TARGETS]


def _name() -> str:
    return f"lidb{uuid.uuid4().hex[:10]}"


def _m(text: str, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=text)


def _texts(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


async def _get(store: AsyncDBChatStore, key: str = "k", **kwargs: Any) -> list[str | None]:
    return _texts(await store.get_messages(key, **kwargs))


def _sql_store() -> SQLAlchemyChatStore:
    return SQLAlchemyChatStore(table_name="llama_index_memory")  # in-memory SQLite


async def _dispose(store: SQLAlchemyChatStore) -> None:
    engine = store._async_engine
    if engine is not None:
        await engine.dispose()


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(params=[None, *TARGETS], ids=["sqlalchemy", *TARGET_IDS])
async def db_store(request: pytest.FixtureRequest, servers: _Servers) -> AsyncIterator[Any]:
    """SQLAlchemyChatStore on in-memory SQLite, or ours on each server kind and package."""
    if request.param is None:
        sql = _sql_store()
        yield sql
        await _dispose(sql)
        return
    kind, package = request.param
    url = servers.get(kind).url
    client, aclient = package.client(url, blocking=True), package.client(url)
    yield AgentMemoryDBChatStore(client=client, async_client=aclient, name=_name())
    client.close()
    await aclient.aclose()


@pytest.fixture
def name() -> str:
    return _name()


@pytest.fixture
def ours(client: Any, aclient: Any, name: str) -> AgentMemoryDBChatStore:
    return AgentMemoryDBChatStore(client=client, async_client=aclient, name=name)


# -- SQLAlchemyChatStore's behaviours, replayed on both stores -----------------------------


async def test_reads_are_oldest_first_and_filtered_by_status(db_store: Any) -> None:
    await db_store.add_message("k", _m("a"))
    await db_store.add_message("k", _m("b", "assistant"))
    await db_store.add_message("k", _m("x"), status=ARCHIVED)
    await db_store.add_message("k", _m("c"))
    assert await _get(db_store) == ["a", "b", "c"]  # ACTIVE by default
    assert await _get(db_store, status=ACTIVE) == ["a", "b", "c"]
    assert await _get(db_store, status=ARCHIVED) == ["x"]
    assert await _get(db_store, status=None) == ["a", "b", "x", "c"]  # in order of addition
    assert [m.role for m in await db_store.get_messages("k")] == ["user", "assistant", "user"]
    assert await _get(db_store, "nobody", status=None) == []


async def test_limit_and_offset_apply_after_the_status_filter(db_store: Any) -> None:
    for i in range(6):
        await db_store.add_message("k", _m(f"a{i}"))
        await db_store.add_message("k", _m(f"r{i}"), status=ARCHIVED)
    assert await _get(db_store, limit=2) == ["a0", "a1"]
    assert await _get(db_store, offset=4) == ["a4", "a5"]
    assert await _get(db_store, limit=2, offset=3) == ["a3", "a4"]
    assert await _get(db_store, limit=0) == []
    assert await _get(db_store, offset=6) == []
    assert await _get(db_store, limit=10, offset=5) == ["a5"]
    assert await _get(db_store, status=ARCHIVED, limit=2, offset=1) == ["r1", "r2"]
    assert await _get(db_store, status=None, limit=3, offset=2) == ["a1", "r1", "a2"]
    assert await _get(db_store, status=None, offset=10) == ["a5", "r5"]
    assert await _get(db_store, status=None, limit=0, offset=1) == []


async def test_count_messages_by_status(db_store: Any) -> None:
    assert await db_store.count_messages("k") == 0
    await db_store.add_messages("k", [_m("a"), _m("b"), _m("c")])
    await db_store.add_messages("k", [_m("x"), _m("y")], status=ARCHIVED)
    assert await db_store.count_messages("k") == 3
    assert await db_store.count_messages("k", status=ARCHIVED) == 2
    assert await db_store.count_messages("k", status=None) == 5
    assert await db_store.count_messages("other", status=None) == 0


async def test_add_messages_keeps_order_and_status(db_store: Any) -> None:
    await db_store.add_message("k", _m("first"))
    await db_store.add_messages("k", [_m("x"), _m("y", "assistant")], status=ARCHIVED)
    await db_store.add_messages("k", [_m("a"), _m("b")])
    assert await _get(db_store) == ["first", "a", "b"]
    assert await _get(db_store, status=ARCHIVED) == ["x", "y"]
    assert await _get(db_store, status=None) == ["first", "x", "y", "a", "b"]


async def test_set_messages_replaces_every_status(db_store: Any) -> None:
    await db_store.add_messages("k", [_m("a"), _m("b")])
    await db_store.archive_oldest_messages("k", 1)
    await db_store.add_message("k2", _m("kept"))
    await db_store.set_messages("k", [_m("x"), _m("y")])
    assert await _get(db_store, status=None) == ["x", "y"]
    assert await _get(db_store, status=ARCHIVED) == []
    await db_store.set_messages("k", [_m("z")], status=ARCHIVED)
    assert await _get(db_store, status=None) == ["z"]
    assert await _get(db_store, status=ARCHIVED) == ["z"]
    await db_store.set_messages("k", [])
    assert await _get(db_store, status=None) == []
    assert await db_store.get_keys() == ["k2"]
    assert await _get(db_store, "k2") == ["kept"]


async def test_delete_message_takes_a_message_id(db_store: Any) -> None:
    await db_store.add_messages("k", [_m("a"), _m("b"), _m("c"), _m("d")])
    deleted = await db_store.delete_message("k", 2)
    assert deleted is not None and deleted.content == "b"
    assert await db_store.delete_message("k", 2) is None  # gone
    assert await db_store.delete_message("k", 99) is None
    assert await db_store.delete_message("k", 0) is None
    assert await db_store.delete_message("k", -1) is None
    assert await db_store.delete_message("nobody", 1) is None
    await db_store.archive_oldest_messages("k", 1)  # "a" (id 1) is archived, still id 1
    archived = await db_store.delete_message("k", 1)
    assert archived is not None and archived.content == "a"
    assert await _get(db_store, status=None) == ["c", "d"]


async def test_delete_messages_by_status(db_store: Any) -> None:
    await db_store.add_messages("k", [_m("a"), _m("b")])
    await db_store.add_message("k", _m("x"), status=ARCHIVED)
    await db_store.add_message("k2", _m("other"))
    assert await db_store.delete_messages("k", status=ACTIVE) is None
    assert await _get(db_store, status=None) == ["x"]
    await db_store.add_message("k", _m("c"))
    await db_store.delete_messages("k", status=ARCHIVED)
    assert await _get(db_store, status=None) == ["c"]
    await db_store.delete_messages("k")
    assert await _get(db_store, status=None) == []
    assert await db_store.get_keys() == ["k2"]
    await db_store.delete_messages("nobody")  # no error


async def test_delete_oldest_messages_takes_active_ones(db_store: Any) -> None:
    await db_store.add_message("k", _m("old"), status=ARCHIVED)
    await db_store.add_messages("k", [_m("a"), _m("b"), _m("c")])
    assert _texts(await db_store.delete_oldest_messages("k", 2)) == ["a", "b"]
    assert await _get(db_store, status=None) == ["old", "c"]
    assert await db_store.delete_oldest_messages("k", 0) == []
    assert _texts(await db_store.delete_oldest_messages("k", 10)) == ["c"]
    assert await db_store.delete_oldest_messages("k", 1) == []
    assert await db_store.delete_oldest_messages("nobody", 1) == []
    assert await _get(db_store, status=None) == ["old"]


async def test_archive_oldest_messages_keeps_their_place(db_store: Any) -> None:
    await db_store.add_messages("k", [_m("a"), _m("b")])
    await db_store.add_message("k", _m("x"), status=ARCHIVED)
    await db_store.add_messages("k", [_m("c"), _m("d")])
    assert _texts(await db_store.archive_oldest_messages("k", 3)) == ["a", "b", "c"]
    assert await _get(db_store) == ["d"]
    assert await _get(db_store, status=ARCHIVED) == ["a", "b", "x", "c"]
    assert await _get(db_store, status=None) == ["a", "b", "x", "c", "d"]
    assert await db_store.archive_oldest_messages("k", 0) == []
    assert _texts(await db_store.archive_oldest_messages("k", 5)) == ["d"]
    assert await db_store.archive_oldest_messages("k", 1) == []
    assert await db_store.count_messages("k", status=ARCHIVED) == 5


async def test_get_keys_lists_keys_holding_messages(db_store: Any) -> None:
    assert await db_store.get_keys() == []
    await db_store.add_message("u1", _m("a"))
    await db_store.add_message("u2", _m("b"), status=ARCHIVED)
    await db_store.add_messages("u3", [_m("c")])
    await db_store.archive_oldest_messages("u1", 1)  # archived messages still count
    assert sorted(await db_store.get_keys()) == ["u1", "u2", "u3"]
    await db_store.delete_oldest_messages("u3", 1)
    await db_store.delete_messages("u2")
    assert await db_store.get_keys() == ["u1"]


async def test_messages_round_trip_exactly(db_store: Any) -> None:
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="be brief"),
        ChatMessage(role="user", content='héllo 🌍 \x00 "quoted" 1:2', additional_kwargs={"n": 1}),
        ChatMessage(
            role="assistant",
            content=None,
            additional_kwargs={"tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1}}]},
        ),
        ChatMessage(role=MessageRole.TOOL, content="2", additional_kwargs={"tool_call_id": "c1"}),
    ]
    key = "conv/ü *[x]?{tag}"
    await db_store.set_messages(key, messages)
    assert await db_store.get_messages(key) == messages
    await db_store.archive_oldest_messages(key, 2)
    assert await db_store.get_messages(key, status=None) == messages
    assert await db_store.get_keys() == [key]


# -- a real Memory over both stores --------------------------------------------------------


class RecordingBlock(BaseMemoryBlock[str]):
    """A long-term block that keeps what the short-term queue flushes into it."""

    name: str = "recorder"
    received: list[ChatMessage] = Field(default_factory=list)

    async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> str:
        return " | ".join(m.content or "" for m in self.received)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        self.received.extend(messages)


TURNS = [
    ("user", "I prefer dark mode in every editor."),
    ("assistant", "Noted, dark mode everywhere."),
    ("user", "What is the weather like in Paris today?"),
    ("assistant", "It is sunny and warm in Paris today."),
    ("user", "And what about tomorrow?"),
    ("assistant", "Rain is expected tomorrow afternoon."),
    ("user", "Thanks a lot for the forecast!"),
    ("assistant", "You are welcome."),
]


async def _memory_run(store: AsyncDBChatStore) -> dict[str, Any]:
    """A Memory small enough to flush: what it and its block observe along the way."""
    block = RecordingBlock()
    memory = Memory.from_defaults(
        session_id="session-1",
        chat_store=store,
        token_limit=40,
        token_flush_size=8,
        chat_history_token_ratio=0.5,
        tokenizer_fn=str.split,
        memory_blocks=[block],
    )
    for role, text in TURNS[:4]:
        await memory.aput(_m(text, role))
    await memory.aput_messages([_m(text, role) for role, text in TURNS[4:]])
    seen: dict[str, Any] = {
        "active": _texts(await memory.aget_all(status=ACTIVE)),
        "archived": _texts(await memory.aget_all(status=ARCHIVED)),
        "all": _texts(await memory.aget_all()),
        "flushed": _texts(block.received),
        "context": [(m.role, m.content) for m in await memory.aget()],
    }
    await memory.areset(status=ARCHIVED)
    seen["after_reset"] = _texts(await memory.aget_all())
    await memory.aset([_m("fresh start")])
    seen["after_set"] = _texts(await memory.aget_all())
    return seen


async def test_memory_behaves_the_same_over_both_stores(db_store: Any) -> None:
    reference = _sql_store()
    try:
        expected = await _memory_run(reference)
    finally:
        await _dispose(reference)
    seen = await _memory_run(db_store)
    assert seen == expected
    assert seen["archived"], "the token limit must have archived something"
    assert seen["flushed"] == seen["archived"]
    assert seen["all"] == [text for _, text in TURNS]
    assert seen["active"] == seen["all"][len(seen["archived"]) :]
    assert seen["context"][0][0] == MessageRole.SYSTEM  # the block's content
    assert seen["after_reset"] == seen["active"]
    assert seen["after_set"] == ["fresh start"]


def _blocking_memory_run(store: AsyncDBChatStore) -> list[Any]:
    """Memory's blocking wrappers, each of which runs an event loop of its own."""
    memory = Memory.from_defaults(
        session_id="s",
        chat_history=[_m("hello"), _m("hi there", "assistant")],
        chat_store=store,
        token_limit=30,
        token_flush_size=6,
        chat_history_token_ratio=0.5,
        tokenizer_fn=str.split,
    )
    for role, text in TURNS:
        memory.put(_m(text, role))
    return [
        _texts(memory.get_all()),
        _texts(memory.get_all(status=ARCHIVED)),
        [(m.role, m.content) for m in memory.get()],
    ]


def test_memory_blocking_wrappers_behave_the_same(target: Target, name: str) -> None:
    reference = _sql_store()
    expected = _blocking_memory_run(reference)
    asyncio.run(_dispose(reference))
    package = target.package
    store = AgentMemoryDBChatStore(
        client=package.client(target.url, blocking=True),
        async_client=package.client(target.url),
        name=name,
    )
    assert _blocking_memory_run(store) == expected
    assert expected[1], "the token limit must have archived something"
    store._runners.owned = True  # close both clients, from yet another loop
    asyncio.run(store.aclose())


def test_only_an_asyncio_client_serves_only_its_own_loop(target: Target, name: str) -> None:
    store = AgentMemoryDBChatStore(async_client=target.package.client(target.url), name=name)
    asyncio.run(store.add_message("k", _m("a")))  # the loop the client now belongs to
    with pytest.raises(CapabilityError):
        asyncio.run(store.get_messages("k"))


async def test_only_a_blocking_client_serves_async_in_a_thread(client: Any, name: str) -> None:
    store = AgentMemoryDBChatStore(client=client, name=name)
    await store.add_messages("k", [_m("a"), _m("b")])
    assert _texts(await store.archive_oldest_messages("k", 1)) == ["a"]
    assert await _get(store, status=None) == ["a", "b"]


async def test_from_url_owns_and_closes(target: Target, name: str) -> None:
    store = AgentMemoryDBChatStore.from_url(target.url, name=name, ttl=60)
    await store.add_message("k", _m("a"))
    assert await _get(store) == ["a"]
    assert AgentMemoryDBChatStore.class_name() == "AgentMemoryDBChatStore"
    await store.aclose()


# -- ours only: layout, corruption, TTL, errors ---------------------------------------------


async def test_layout_is_one_sorted_set_signed_by_status(
    ours: AgentMemoryDBChatStore, raw: Any
) -> None:
    await ours.add_messages("k", [_m("a"), _m("b")])
    await ours.archive_oldest_messages("k", 1)
    key = ours.chat_key("k")
    assert key == f"{ours.name}:li_db:k"
    assert raw.type(key) == "zset"
    assert raw.zrange(key, 0, -1, withscores=True) == [
        ("1:" + _m("a").model_dump_json(), -1.0),
        ("2:" + _m("b").model_dump_json(), 2.0),
    ]
    assert raw.keys(f"{ours.name}:li_db:*") == [key]


async def test_large_batches_are_sliced(ours: AgentMemoryDBChatStore) -> None:
    many = [_m(str(i)) for i in range(5000)]  # more arguments than Lua's unpack takes at once
    await ours.add_messages("k", many)
    assert await ours.count_messages("k") == 5000
    assert [int(t or "") for t in await _get(ours, status=None)] == list(range(5000))
    taken = await ours.archive_oldest_messages("k", 4500)
    assert [int(t or "") for t in _texts(taken)] == list(range(4500))
    assert _texts(await ours.delete_oldest_messages("k", 4600)) == [
        str(i) for i in range(4500, 5000)
    ]
    await ours.set_messages("k", many, status=ARCHIVED)
    assert await ours.count_messages("k", status=ARCHIVED) == 5000


async def test_corrupt_entries_are_skipped_and_counted(
    ours: AgentMemoryDBChatStore, raw: Any
) -> None:
    await ours.add_messages("k", [_m("a"), _m("b")])
    key = ours.chat_key("k")
    raw.zadd(key, {"3:not json": 3, "garbage": 4, '5:{"role": 42}': -5, "6x:{}": 6})
    await ours.add_message("k", _m("c"))  # id 7: after the largest score
    assert await _get(ours) == ["a", "b", "c"]
    assert ours.skipped == 3
    assert await _get(ours, status=None) == ["a", "b", "c"]
    assert ours.skipped == 7
    assert await ours.count_messages("k", status=None) == 7  # stored entries
    assert _texts(await ours.archive_oldest_messages("k", 3)) == ["a", "b"]
    assert ours.skipped == 8
    assert raw.zscore(key, "3:not json") == -3  # archived, not lost
    assert await ours.delete_message("k", 4) is None  # "garbage" (score 4) is deleted
    assert ours.skipped == 9
    assert raw.zscore(key, "garbage") is None
    assert await _get(ours, status=ARCHIVED) == ["a", "b"]


async def test_get_keys_skips_and_counts_keys_that_are_not_utf8(
    ours: AgentMemoryDBChatStore, raw: Any
) -> None:
    await ours.add_message("é", _m("a"))
    raw.execute_command("ZADD", ours.chat_key("a")[:-1].encode() + b"\xff", 1, "x")
    assert await ours.get_keys() == ["é"]
    assert ours.skipped == 1


async def test_ttl_slides_and_no_ttl_persists(
    client: Any, aclient: Any, name: str, raw: Any
) -> None:
    timed = AgentMemoryDBChatStore(client=client, async_client=aclient, name=name, ttl=30)
    await timed.add_message("k", _m("a"))
    key = timed.chat_key("k")
    assert 0 < raw.pttl(key) <= 30_000
    for call in (
        lambda: timed.get_messages("k"),
        lambda: timed.get_messages("k", status=None),
        lambda: timed.count_messages("k"),
        lambda: timed.add_message("k", _m("b")),
        lambda: timed.archive_oldest_messages("k", 1),
        lambda: timed.delete_messages("k", status=ARCHIVED),
    ):
        raw.pexpire(key, 5_000)
        await call()
        assert raw.pttl(key) > 5_000  # refreshed
    await timed.set_messages("k", [_m("c")])
    assert raw.pttl(key) > 5_000
    plain = AgentMemoryDBChatStore(client=client, async_client=aclient, name=name + "p")
    await plain.add_message("k", _m("a"))
    assert raw.pttl(plain.chat_key("k")) == -1


async def test_bad_input_raises_and_writes_nothing(
    ours: AgentMemoryDBChatStore, client: Any, aclient: Any, name: str, raw: Any
) -> None:
    await ours.set_messages("keep", [_m("a"), _m("b")])
    for call in (
        lambda: ours.get_messages(""),
        lambda: ours.get_messages(42),  # type: ignore[arg-type]
        lambda: ours.get_messages("k", status="active"),  # type: ignore[arg-type]
        lambda: ours.get_messages("k", limit=-1),
        lambda: ours.get_messages("k", offset=-1),
        lambda: ours.get_messages("k", limit=1.5),  # type: ignore[arg-type]
        lambda: ours.get_messages("k", limit=True),
        lambda: ours.count_messages("k", status="archived"),  # type: ignore[arg-type]
        lambda: ours.add_message("", _m("a")),
        lambda: ours.add_message("k", {"role": "user"}),  # type: ignore[arg-type]
        lambda: ours.add_message("k", _m("a"), status=None),  # type: ignore[arg-type]
        lambda: ours.add_messages("k", "text"),  # type: ignore[arg-type]
        lambda: ours.add_messages("k", [_m("a"), "b"]),  # type: ignore[list-item]
        lambda: ours.add_messages("", []),
        lambda: ours.set_messages("keep", [_m("x"), 3]),  # type: ignore[list-item]
        lambda: ours.set_messages("keep", [_m("x")], status="active"),  # type: ignore[arg-type]
        lambda: ours.delete_message("keep", 1.0),  # type: ignore[arg-type]
        lambda: ours.delete_message("keep", "1"),  # type: ignore[arg-type]
        lambda: ours.delete_message("keep", True),
        lambda: ours.delete_messages("keep", status="active"),  # type: ignore[arg-type]
        lambda: ours.delete_oldest_messages("keep", -1),
        lambda: ours.archive_oldest_messages("keep", None),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidInputError):
            await call()
    for make in (
        lambda: AgentMemoryDBChatStore(name=name),
        lambda: AgentMemoryDBChatStore(client=aclient, name=name),
        lambda: AgentMemoryDBChatStore(async_client=client, name=name),
        lambda: AgentMemoryDBChatStore(client=client, name=name, ttl=-1),
        lambda: AgentMemoryDBChatStore(client=client, name=""),
        lambda: AgentMemoryDBChatStore(client=client, name=f"{name}:li_db:x"),
        lambda: AgentMemoryDBChatStore(client=client, name=f"{name}:li_db"),
        lambda: AgentMemoryDBChatStore.from_url("http://nowhere", name=name),
    ):
        with pytest.raises(InvalidInputError):
            make()
    await ours.add_messages("k", [])  # nothing to add (SQLAlchemyChatStore fails here)
    assert await ours.get_keys() == ["keep"]  # nothing was written, nothing was lost
    assert await _get(ours, "keep", status=None) == ["a", "b"]
    assert raw.keys(f"{name}:li_db:*") == [ours.chat_key("keep")]


async def test_a_key_of_another_type_is_a_library_error(
    ours: AgentMemoryDBChatStore, raw: Any
) -> None:
    key = ours.chat_key("k")
    raw.rpush(key, "a list element")
    for call in (
        lambda: ours.get_messages("k"),
        lambda: ours.get_messages("k", status=None),
        lambda: ours.count_messages("k"),
        lambda: ours.add_message("k", _m("a")),
        lambda: ours.archive_oldest_messages("k", 1),
        lambda: ours.delete_message("k", 1),
        lambda: ours.delete_messages("k", status=ACTIVE),
    ):
        with pytest.raises(AgentMemoryError):
            await call()
    assert raw.lrange(key, 0, -1) == ["a list element"]  # untouched


async def test_a_key_of_another_type_is_refused_and_keeps_its_lifetime(
    client: Any, aclient: Any, name: str, raw: Any
) -> None:
    """Another client's list at a chat's key, with a TTL: every call but ``delete_messages``
    of the whole chat raises WrongTypeError and the key keeps its value and its (absent)
    expiry. The ``PEXPIRE`` was pipelined beside each command, so every refused call
    gave another client's key a lifetime (the server deleted it later), and
    ``set_messages`` deleted it outright."""
    timed = AgentMemoryDBChatStore(client=client, async_client=aclient, name=name, ttl=60)
    key = timed.chat_key("k")
    raw.rpush(key, "a list element")
    for call in (
        lambda: timed.get_messages("k"),
        lambda: timed.get_messages("k", status=None),
        lambda: timed.count_messages("k"),
        lambda: timed.add_message("k", _m("a")),
        lambda: timed.set_messages("k", [_m("a")]),
        lambda: timed.archive_oldest_messages("k", 1),
        lambda: timed.delete_oldest_messages("k", 1),
        lambda: timed.delete_message("k", 1),
        lambda: timed.delete_messages("k", status=ACTIVE),
    ):
        with pytest.raises(WrongTypeError):
            await call()
        assert raw.pttl(key) == -1
    assert raw.lrange(key, 0, -1) == ["a list element"]


async def test_concurrent_adds_lose_nothing(ours: AgentMemoryDBChatStore) -> None:
    # Not replayed on SQLAlchemyChatStore: on in-memory SQLite its concurrent adds lose
    # most messages (its sessions share one connection).
    await asyncio.gather(*(ours.add_message("k", _m(str(i))) for i in range(50)))
    assert sorted(int(t or "") for t in await _get(ours)) == list(range(50))
    assert await ours.count_messages("k") == 50


async def test_concurrent_adds_and_archives_are_atomic(ours: AgentMemoryDBChatStore) -> None:
    await ours.add_messages("k", [_m(f"a{i}") for i in range(20)])
    done = await asyncio.gather(
        *(ours.add_message("k", _m(f"b{i}")) for i in range(20)),
        *(ours.archive_oldest_messages("k", 2) for _ in range(5)),
    )
    archived = [m.content for taken in done[20:] if taken for m in taken]
    assert sorted(archived) == sorted(f"a{i}" for i in range(10))  # each exactly once
    assert await _get(ours, status=ARCHIVED) == [f"a{i}" for i in range(10)]
    active = await _get(ours)
    assert active[:10] == [f"a{i}" for i in range(10, 20)]
    assert sorted(active[10:]) == sorted(f"b{i}" for i in range(20))


NAME_PARTS = st.text(st.sampled_from(list(":li_db*?[]{}\\x")), max_size=8)
KEYS = st.text(
    st.one_of(st.sampled_from(list(":li_db*?[]{}")), st.characters(codec="utf-8")),
    min_size=1,
    max_size=10,
).filter(lambda k: "\x00" not in k)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    parts=st.lists(NAME_PARTS, min_size=2, max_size=2, unique=True),
    keys=st.lists(KEYS, min_size=1, max_size=3, unique=True),
)
def test_names_and_keys_never_see_each_other(
    target: Target, parts: list[str], keys: list[str]
) -> None:
    base = _name()
    names = [base + part for part in parts]
    assume(not any(":li_db" in n for n in names))  # the names the store refuses

    async def run() -> None:
        made = target.package.client(target.url)
        try:
            stores = [AgentMemoryDBChatStore(async_client=made, name=n) for n in names]
            for s, store in enumerate(stores):
                for key in keys:
                    await store.add_messages(key, [_m(f"{s}|{key}|{i}") for i in range(s + 2)])
                await store.archive_oldest_messages(keys[0], 1)
            await stores[1].delete_messages(keys[-1])
            for s, store in enumerate(stores):
                kept = keys if s == 0 else keys[:-1]
                assert await store.get_keys() == sorted(kept)
                for key in kept:
                    expected = [f"{s}|{key}|{i}" for i in range(s + 2)]
                    assert await _get(store, key, status=None) == expected
            assert await _get(stores[1], keys[-1], status=None) == []
        finally:
            await made.aclose()

    asyncio.run(run())


# -- a cluster -----------------------------------------------------------------------------


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
async def test_every_method_on_a_cluster(package: Package, cluster_url: str) -> None:
    client, aclient = package.cluster_clients(cluster_url)
    try:
        store = AgentMemoryDBChatStore(client=client, async_client=aclient, name=_name())
        keys = [f"session-{i}" for i in range(12)]  # spread over every primary's slots
        for key in keys:
            await store.set_messages(key, [_m("a"), _m("b"), _m("c")])
            await store.add_message(key, _m("x"), status=ARCHIVED)
            assert _texts(await store.archive_oldest_messages(key, 1)) == ["a"]
            assert await _get(store, key, status=None, offset=1) == ["b", "c", "x"]
            assert await store.count_messages(key, status=ARCHIVED) == 2
            assert (await store.delete_message(key, 2)) == _m("b")
            assert _texts(await store.delete_oldest_messages(key, 1)) == ["c"]
        assert await store.get_keys() == sorted(keys)
        for key in keys[1:]:
            await store.delete_messages(key)
        assert await store.get_keys() == keys[:1]
        seen = await _memory_run(store)
        assert seen["archived"] and seen["all"] == [text for _, text in TURNS]
    finally:
        client.close()
        await aclient.aclose()


async def test_a_server_that_does_not_know_the_scripts_yet_still_gets_the_ttl(
    client: Any, aclient: Any, name: str, raw: Any
) -> None:
    """The first write after a restart (or on a fresh server) meets ``NOSCRIPT``: the
    script is sent again, and the chat's ``PEXPIRE`` with it, after it."""
    timed = AgentMemoryDBChatStore(client=client, async_client=aclient, name=name, ttl=30)
    raw.script_flush()
    await timed.add_message("k", _m("a"))
    assert 0 < raw.pttl(timed.chat_key("k")) <= 30_000
