"""The LangChain adapters against the real ``langchain-core`` and real servers.

The official ``langchain-tests`` suites (``SyncCacheTestSuite`` / ``AsyncCacheTestSuite``
for the LLM cache, ``BaseStoreSyncTests`` / ``BaseStoreAsyncTests`` for the byte store;
the package ships none for chat histories) run on plain Valkey and on Valkey with
valkey-search 1.2, with both client packages (valkey: RESP2, bytes; redis: RESP3, str).
Our own tests cover what the suites do not: chat histories, bad input, isolation
between sessions / names / namespaces, sync-only and async-only construction, and real
LangChain models (``FakeListChatModel``) using the cache and the history.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.caches import BaseCache
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, Generation
from langchain_core.stores import BaseStore, InvalidKeyException
from langchain_tests.integration_tests import (
    AsyncCacheTestSuite,
    BaseStoreAsyncTests,
    BaseStoreSyncTests,
    SyncCacheTestSuite,
)
from prometheus_client import CollectorRegistry

from agent_memory import LlmCache, SyncLlmCache, SyncSessionStore
from agent_memory.core import clients as core_clients
from agent_memory.errors import (
    CapabilityError,
    InvalidInputError,
    ReplyParseError,
    WrongTypeError,
)
from agent_memory.integrations.langchain import (
    AgentMemoryByteStore,
    AgentMemoryCache,
    AgentMemoryChatMessageHistory,
    InvalidStoreKeyError,
)
from agent_memory.integrations.langchain.llm_cache import model_of_llm_string, request_of
from tests.integrations.targets import Target

pytestmark = pytest.mark.integration


def _name() -> str:
    return f"lc{uuid.uuid4().hex[:10]}"


# -- the official suites ------------------------------------------------------------------


class TestSyncCacheSuite(SyncCacheTestSuite):
    @pytest.fixture
    def cache(self, target: Target) -> Iterator[BaseCache]:
        client = target.sync_client()
        yield AgentMemoryCache(SyncLlmCache(client, _name()))
        client.close()


class TestAsyncCacheSuite(AsyncCacheTestSuite):
    @pytest.fixture
    async def cache(self, target: Target) -> AsyncIterator[BaseCache]:
        client = target.async_client()
        yield AgentMemoryCache(async_cache=LlmCache(client, _name()))
        await client.aclose()


class TestSyncByteStoreSuite(BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, target: Target) -> Iterator[BaseStore[str, bytes]]:
        client = target.sync_client()
        yield AgentMemoryByteStore(client=client, name=_name())
        client.close()

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00\xff bar", "buzz ü".encode()


class TestAsyncByteStoreSuite(BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    async def kv_store(self, target: Target) -> AsyncIterator[BaseStore[str, bytes]]:
        client = target.async_client()
        yield AgentMemoryByteStore(async_client=client, name=_name())
        await client.aclose()

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00\xff bar", "buzz ü".encode()


# -- LLM cache ----------------------------------------------------------------------------


@pytest.fixture
async def both_cache(target: Target) -> AsyncIterator[AgentMemoryCache]:
    """A cache with a blocking and an asyncio client over one name."""
    name = _name()
    client, aclient = target.sync_client(), target.async_client()
    yield AgentMemoryCache(SyncLlmCache(client, name), async_cache=LlmCache(aclient, name))
    client.close()
    await aclient.aclose()


def _chat_generation() -> ChatGeneration:
    message = AIMessage(
        "sunny",
        tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "call_1"}],
        usage_metadata={"input_tokens": 1000, "output_tokens": 500, "total_tokens": 1500},
        response_metadata={"model_name": "gpt-4o-mini"},
    )
    return ChatGeneration(message=message, generation_info={"finish_reason": "stop"})


async def test_cache_round_trips_chat_generations_sync_and_async(
    both_cache: AgentMemoryCache,
) -> None:
    llm = "{'model_name': 'gpt-4o-mini', 'temperature': 0.0}---[('stop', None)]"
    stored = [_chat_generation(), ChatGenerationChunk(message=AIMessageChunk("chunk"))]
    both_cache.update("prompt", llm, stored)
    assert both_cache.lookup("prompt", llm) == stored
    assert await both_cache.alookup("prompt", llm) == stored  # written sync, read async
    await both_cache.aupdate("other", llm, [Generation(text="plain", generation_info=None)])
    assert both_cache.lookup("other", llm) == [Generation(text="plain")]
    assert both_cache.lookup("prompt", llm + " ") is None  # any llm_string change misses
    assert both_cache.lookup("prompt ", llm) is None
    sync_cache = both_cache.sync_cache
    assert sync_cache is not None
    stats = sync_cache.stats()
    assert stats.llm_hits == 3 and stats.llm_misses == 2
    assert stats.cost_saved_micros > 0  # usage_metadata of the hits, priced gpt-4o-mini
    assert sync_cache.invalidate_by_model("gpt-4o-mini") == 2  # the model labels entries
    assert both_cache.lookup("prompt", llm) is None
    await both_cache.aclear()


async def test_cache_isolation_between_names(target: Target) -> None:
    client = target.sync_client()
    try:
        one, two = (
            AgentMemoryCache(SyncLlmCache(client, _name())),
            AgentMemoryCache(SyncLlmCache(client, _name())),
        )
        one.update("p", "llm", [Generation(text="one")])
        assert two.lookup("p", "llm") is None
        two.update("p", "llm", [Generation(text="two")])
        two.clear()
        assert one.lookup("p", "llm") == [Generation(text="one")]
        one.clear()
    finally:
        client.close()


async def test_cache_serves_fake_chat_model(both_cache: AgentMemoryCache) -> None:
    model = FakeListChatModel(responses=["first", "second", "third"], cache=both_cache)
    assert model.invoke("hello").content == "first"
    assert model.invoke("hello").content == "first"  # cached: the fake did not advance
    assert model.invoke("bye").content == "second"
    assert (await model.ainvoke("hello")).content == "first"
    assert (await model.ainvoke("new")).content == "third"
    assert (await model.ainvoke("new")).content == "third"


async def test_cache_foreign_entry_is_a_reported_miss(
    target: Target, caplog: pytest.LogCaptureFixture
) -> None:
    name, registry = _name(), CollectorRegistry()
    client, aclient = target.sync_client(), target.async_client()
    sync_cache = SyncLlmCache(client, name, registry=registry)
    cache = AgentMemoryCache(sync_cache, async_cache=LlmCache(aclient, name, registry=registry))
    try:
        sync_cache.store(request_of("p", "llm"), {"not": "generations"})
        with caplog.at_level(logging.WARNING, logger="agent_memory.cache"):
            assert cache.lookup("p", "llm") is None
        assert "not a list" in caplog.text
        sync_cache.store(request_of("p", "llm"), [{"type": "Bogus"}])
        assert await cache.alookup("p", "llm") is None
        sync_cache.flush_stats()  # the reports reach the metric with the tiers' next calls
        await cache.async_cache.flush_stats()  # type: ignore[union-attr]
        reported = registry.get_sample_value(
            "agent_memory_events_total", {"name": name, "event": "corrupt_entries"}
        )
        assert reported == 2
    finally:
        client.close()
        await aclient.aclose()


async def test_cache_bad_input(both_cache: AgentMemoryCache) -> None:
    with pytest.raises(InvalidInputError):
        both_cache.update("p", "llm", ["not a generation"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        await both_cache.aupdate("p", "llm", "text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        both_cache.lookup(b"p", "llm")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await both_cache.alookup("p", None)  # type: ignore[arg-type]
    bad = Generation(text="x", generation_info={"blob": b"\x00"})
    with pytest.raises(InvalidInputError):
        both_cache.update("p", "llm", [bad])
    assert both_cache.lookup("p", "llm") is None  # nothing was written
    with pytest.raises(InvalidInputError):
        AgentMemoryCache()
    with pytest.raises(InvalidInputError):
        AgentMemoryCache(both_cache.async_cache)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        AgentMemoryCache(both_cache.sync_cache, ttl=0)


async def test_cache_single_client_modes(target: Target) -> None:
    name = _name()
    client, aclient = target.sync_client(), target.async_client()
    try:
        sync_only = AgentMemoryCache(SyncLlmCache(client, name), ttl=60)
        await sync_only.aupdate("p", "llm", [Generation(text="x")])  # in a worker thread
        assert await sync_only.alookup("p", "llm") == [Generation(text="x")]
        assert 0 < client.pttl(f"{name}:llm:" + request_key_digest("p", "llm")) <= 60_000
        async_only = AgentMemoryCache(async_cache=LlmCache(aclient, name))
        assert await async_only.alookup("p", "llm") == [Generation(text="x")]
        with pytest.raises(CapabilityError):
            async_only.lookup("p", "llm")
        with pytest.raises(CapabilityError):
            async_only.clear()
        await sync_only.aclear()
        assert await async_only.alookup("p", "llm") is None
    finally:
        client.close()
        await aclient.aclose()


def request_key_digest(prompt: str, llm_string: str) -> str:
    from agent_memory.cache.llm_params import request_digest

    return request_digest(request_of(prompt, llm_string))


def test_model_of_llm_string() -> None:
    serialized = (
        '{"id": ["langchain", "chat_models", "openai", "ChatOpenAI"], "kwargs": '
        '{"model_name": "gpt-4o", "temperature": 0.2}, "lc": 1}---[(\'stop\', None)]'
    )
    assert model_of_llm_string(serialized) == "gpt-4o"
    assert model_of_llm_string("[('_type', 'fake-list-chat-model'), ('model', 'm-1')]") == "m-1"
    assert model_of_llm_string("[('_type', 'fake-list-chat-model')]") == "fake-list-chat-model"
    assert model_of_llm_string("anything") == "langchain"


async def test_cache_from_url_owns_its_clients(target: Target) -> None:
    cache = AgentMemoryCache.from_url(target.url, name=_name(), ttl=30)
    cache.update("p", "llm", [Generation(text="x")])
    assert await cache.alookup("p", "llm") == [Generation(text="x")]
    await cache.aclear()
    await cache.aclose()
    with pytest.raises(InvalidInputError):
        AgentMemoryCache.from_url("http://nope", name="x")


# -- chat message history -----------------------------------------------------------------


@dataclass
class Histories:
    """Builds histories of one cache name over one blocking and one asyncio client."""

    name: str
    client: Any
    aclient: Any

    def make(self, session_id: str, **options: Any) -> AgentMemoryChatMessageHistory:
        return AgentMemoryChatMessageHistory(
            session_id,
            client=self.client,
            async_client=self.aclient,
            name=options.pop("name", self.name),
            **options,
        )


@pytest.fixture
async def histories(target: Target) -> AsyncIterator[Histories]:
    client, aclient = target.sync_client(), target.async_client()
    yield Histories(_name(), client, aclient)
    client.close()
    await aclient.aclose()


CONVERSATION = [
    SystemMessage("be brief"),
    HumanMessage("weather in Oslo? ü 漢字", name="ann"),
    AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}]),
    ToolMessage("sunny", tool_call_id="c1"),
    AIMessage(
        [{"type": "text", "text": "Sunny."}],
        usage_metadata={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
    ),
]


async def test_history_sync_and_async(histories: Histories, raw: Any) -> None:
    history = histories.make("s1")
    assert isinstance(history, BaseChatMessageHistory)
    assert history.messages == [] and await history.aget_messages() == []
    history.add_messages(CONVERSATION[:2])
    await history.aadd_messages(CONVERSATION[2:])
    assert history.messages == CONVERSATION
    assert await history.aget_messages() == CONVERSATION
    history.add_user_message("and tomorrow?")
    assert (await history.aget_messages())[-1] == HumanMessage("and tomorrow?")
    history.add_messages([])  # nothing to send
    # the session tier sees the same history: one field of the thread hash
    session = SyncSessionStore(histories.client, histories.name)
    stored = session.get("s1", "messages")
    assert [m["type"] for m in stored] == ["system", "human", "ai", "tool", "ai", "human"]
    assert 0 < raw.pttl(f"{histories.name}:session:s1") <= 86_400_000
    history.clear()
    assert history.messages == []
    await history.aadd_messages([HumanMessage("again")])
    await history.aclear()
    assert await history.aget_messages() == []


async def test_history_isolation_and_other_thread_keys(histories: Histories) -> None:
    one, two = histories.make("alice"), histories.make("bob")
    other_name = histories.make("alice", name=_name())
    one.add_messages([HumanMessage("from alice")])
    two.add_messages([HumanMessage("from bob")])
    assert one.messages == [HumanMessage("from alice")]
    assert two.messages == [HumanMessage("from bob")]
    assert other_name.messages == []  # the same session id under another name
    session = SyncSessionStore(histories.client, histories.name)
    session.set("alice", "cart", ["apple"])
    one.clear()
    assert session.get("alice", "cart") == ["apple"]  # clear leaves the thread's state
    assert two.messages == [HumanMessage("from bob")]
    separate = histories.make("alice", key="scratch")
    separate.add_messages([AIMessage("in another field")])
    assert one.messages == [] and separate.messages == [AIMessage("in another field")]


async def test_history_setter_replaces(histories: Histories) -> None:
    history = histories.make("s")
    history.add_messages(CONVERSATION)
    history.messages = [HumanMessage("only this")]
    assert await history.aget_messages() == [HumanMessage("only this")]


async def test_history_replace_leaves_a_thread_key_of_another_type_as_it_is(
    histories: Histories, raw: Any
) -> None:
    """Replacing the messages of a thread whose key another writer gave another type
    raises WrongTypeError and changes nothing there, its TTL (none) included."""
    key = f"{histories.name}:session:foreign"
    raw.set(key, "not a hash")
    with pytest.raises(WrongTypeError):
        histories.make("foreign").messages = [HumanMessage("x")]
    assert raw.pttl(key) == -1 and raw.get(key) == "not a hash"


async def test_history_concurrent_appends_lose_nothing(histories: Histories) -> None:
    history = histories.make("busy")

    def writer(n: int) -> None:
        mine = AgentMemoryChatMessageHistory("busy", client=histories.client, name=histories.name)
        for i in range(10):
            mine.add_messages([HumanMessage(f"{n}-{i}")])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    await asyncio.gather(*(history.aadd_messages([AIMessage(f"async-{i}")]) for i in range(10)))
    for thread in threads:
        thread.join()
    contents = [m.content for m in history.messages]
    assert len(contents) == 50
    for n in range(4):  # each writer's messages in its order
        assert [c for c in contents if str(c).startswith(f"{n}-")] == [
            f"{n}-{i}" for i in range(10)
        ]


async def test_history_ttl_none_keeps_the_thread(histories: Histories, raw: Any) -> None:
    history = histories.make("forever", ttl=None)
    history.add_messages([HumanMessage("x")])
    assert raw.pttl(f"{histories.name}:session:forever") == -1


async def test_history_bad_input(histories: Histories, raw: Any) -> None:
    for bad_id in ("", 7, None):
        with pytest.raises(InvalidInputError):
            histories.make(bad_id)
    with pytest.raises(InvalidInputError):
        histories.make("s", key="")
    with pytest.raises(InvalidInputError):
        histories.make("s", ttl=-1)
    with pytest.raises(InvalidInputError):
        AgentMemoryChatMessageHistory("s", name="n")  # no client
    with pytest.raises(InvalidInputError):
        AgentMemoryChatMessageHistory("s", client=histories.aclient, name="n")
    with pytest.raises(InvalidInputError):
        AgentMemoryChatMessageHistory("s", async_client=histories.client, name="n")
    history = histories.make("s")
    with pytest.raises(InvalidInputError):
        history.add_messages(["not a message"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        await history.aadd_messages(HumanMessage("not a list"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        history.add_messages([HumanMessage([{"type": "text", "text": "x", "blob": b"\x00"}])])
    assert history.messages == []  # nothing was written
    # a field holding something else is reported, never overwritten
    raw.hset(f"{histories.name}:session:s", "messages", '{"not": "a list"}')
    with pytest.raises(ReplyParseError):
        history.messages  # noqa: B018
    with pytest.raises(ReplyParseError):
        await history.aadd_messages([HumanMessage("x")])
    assert raw.hget(f"{histories.name}:session:s", "messages") == '{"not": "a list"}'


async def test_history_skips_and_counts_elements_that_are_not_messages(
    histories: Histories, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Another writer's elements in the array are skipped, logged and counted; the
    history stays readable and appendable (a RunnableWithMessageHistory keeps going)."""
    registry = CollectorRegistry()
    history = histories.make("s", registry=registry)
    history.add_messages([HumanMessage("hello")])
    key = f"{histories.name}:session:s"
    stored = raw.hget(key, "messages")
    foreign = '{"type":"bogus","data":{}},5,{"type":"human"},{"type":"ai","data":{"content":7}}'
    raw.hset(key, "messages", stored[:-1] + "," + foreign + "]")
    history.add_messages([AIMessage("next turn")])
    with caplog.at_level(logging.WARNING):
        assert history.messages == [HumanMessage("hello"), AIMessage("next turn")]
    assert "skipped 4 corrupt element(s)" in caplog.text
    assert await history.aget_messages() == [HumanMessage("hello"), AIMessage("next turn")]
    assert history.skipped == 8
    counted = registry.get_sample_value(
        "agent_memory_events_total", {"name": histories.name, "event": "corrupt_entries"}
    )
    assert counted == 8
    assert len(raw.hget(key, "messages")) > len(stored)  # the foreign elements stay


async def test_history_names_that_would_share_a_key_are_refused(
    histories: Histories, target: Target
) -> None:
    """With name ``x:session:b`` and session ``c`` a history would read and clear the
    messages of name ``x`` and session ``b:session:c``: such names are refused."""
    tenant = histories.make("b:session:c")
    tenant.add_messages([HumanMessage("secret of tenant A")])
    for name in (f"{histories.name}:session:b", f"{histories.name}:session", "session:session"):
        with pytest.raises(InvalidInputError) as caught:
            histories.make("c", name=name)
        assert caught.value.field == "name"
        with pytest.raises(InvalidInputError):
            AgentMemoryChatMessageHistory.from_url(target.url, "c", name=name)
    for name in (f"{histories.name}:sessions", f"session:{histories.name}", "a:session-b"):
        assert histories.make("c", name=name).messages == []
    assert tenant.messages == [HumanMessage("secret of tenant A")]


async def test_history_keeps_a_lone_surrogate_as_a_json_escape(
    histories: Histories, raw: Any
) -> None:
    history = histories.make("s")
    odd = [AIMessage("bad \ud83d output"), HumanMessage("fine ü")]
    history.add_messages(odd[:1])
    await history.aadd_messages(odd[1:])
    assert history.messages == odd
    assert "\\ud83d" in raw.hget(f"{histories.name}:session:s", "messages")
    history.messages = [HumanMessage("\udc00 replaced")]
    assert await history.aget_messages() == [HumanMessage("\udc00 replaced")]
    assert 0 < raw.pttl(f"{histories.name}:session:s") <= 86_400_000


async def test_history_single_client_modes(histories: Histories) -> None:
    sync_only = AgentMemoryChatMessageHistory("s", client=histories.client, name=histories.name)
    await sync_only.aadd_messages([HumanMessage("via a worker thread")])
    async_only = AgentMemoryChatMessageHistory(
        "s", async_client=histories.aclient, name=histories.name
    )
    assert await async_only.aget_messages() == [HumanMessage("via a worker thread")]
    with pytest.raises(CapabilityError):
        async_only.messages  # noqa: B018
    with pytest.raises(CapabilityError):
        async_only.add_messages([HumanMessage("x")])


@pytest.mark.filterwarnings("ignore::langchain_core._api.LangChainDeprecationWarning")
async def test_history_with_runnable_and_cached_model(histories: Histories, target: Target) -> None:
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    cache = AgentMemoryCache(
        SyncLlmCache(histories.client, histories.name),
        async_cache=LlmCache(histories.aclient, histories.name),
    )
    model = FakeListChatModel(responses=["hi Ann", "you are Ann"], cache=cache)
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | model,
        histories.make,
        input_messages_key="question",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "ann"}}
    assert chain.invoke({"question": "I am Ann"}, config=config).content == "hi Ann"
    answer = await chain.ainvoke({"question": "who am I?"}, config=config)
    assert answer.content == "you are Ann"
    assert [m.content for m in histories.make("ann").messages] == [
        "I am Ann",
        "hi Ann",
        "who am I?",
        "you are Ann",
    ]


async def test_history_from_url(target: Target) -> None:
    history = AgentMemoryChatMessageHistory.from_url(target.url, "s", name=_name())
    history.add_messages([HumanMessage("x")])
    assert await history.aget_messages() == [HumanMessage("x")]
    await history.aclear()
    await history.aclose()


# -- byte store ---------------------------------------------------------------------------


@pytest.fixture
async def stores(target: Target) -> AsyncIterator[tuple[Any, Any]]:
    client, aclient = target.sync_client(), target.async_client()
    yield client, aclient
    client.close()
    await aclient.aclose()


async def test_store_keys_values_and_prefixes(stores: tuple[Any, Any], raw: Any) -> None:
    client, aclient = stores
    name = _name()
    store = AgentMemoryByteStore(client=client, async_client=aclient, name=name)
    odd = ["a:b", "a*", "a[1]", "a?", "a\\z", "ü 漢字", ""]
    store.mset([(k, k.encode() + b"\xff") for k in odd])
    assert store.mget(odd) == [k.encode() + b"\xff" for k in odd]
    assert sorted(store.yield_keys(prefix="a*")) == ["a*"]  # glob characters are literal
    assert sorted(store.yield_keys(prefix="a[")) == ["a[1]"]
    assert sorted(store.yield_keys(prefix="a")) == sorted(["a:b", "a*", "a[1]", "a?", "a\\z"])
    assert sorted([k async for k in store.ayield_keys()]) == sorted(odd)
    assert raw.exists(f"{name}:kv:default:a:b") == 1
    await store.amdelete(["a:b", "missing"])
    assert await store.amget(["a:b", "a*"]) == [None, b"a*\xff"]
    store.mdelete(odd)
    assert list(store.yield_keys()) == []


async def test_store_isolation_between_namespaces(stores: tuple[Any, Any]) -> None:
    client, aclient = stores
    name = _name()
    first = AgentMemoryByteStore(client=client, async_client=aclient, name=name, namespace="m1")
    second = AgentMemoryByteStore(client=client, async_client=aclient, name=name, namespace="m:2")
    other = AgentMemoryByteStore(client=client, async_client=aclient, name=_name(), namespace="m1")
    first.mset([("k", b"1")])
    await second.amset([("k", b"2")])
    assert first.mget(["k"]) == [b"1"]
    assert await second.amget(["k"]) == [b"2"]
    assert other.mget(["k"]) == [None]
    assert list(first.yield_keys()) == ["k"] and list(other.yield_keys()) == []
    first.mdelete(["k"])
    assert second.mget(["k"]) == [b"2"]


async def test_store_one_round_trip_per_call(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, aclient = stores
    store = AgentMemoryByteStore(client=client, async_client=aclient, name=_name(), ttl=60)
    sent: list[int] = []
    batch, abatch = core_clients.SyncExecutor.batch, core_clients.AsyncExecutor.batch

    def spy(self: Any, b: Any) -> Any:
        sent.append(len(b.commands))
        return batch(self, b)

    async def aspy(self: Any, b: Any) -> Any:
        sent.append(len(b.commands))
        return await abatch(self, b)

    monkeypatch.setattr(core_clients.SyncExecutor, "batch", spy)
    monkeypatch.setattr(core_clients.AsyncExecutor, "batch", aspy)
    pairs = [(f"k{i}", bytes([i])) for i in range(50)]
    store.mset(pairs)
    assert store.mget([k for k, _ in pairs]) == [v for _, v in pairs]
    await store.amdelete([k for k, _ in pairs[:25]])
    store.mget([])
    assert sent == [50, 50, 25]
    assert 0 < client.pttl(store._core.prefix + "k30") <= 60_000


async def test_store_bad_input(stores: tuple[Any, Any]) -> None:
    client, aclient = stores
    store = AgentMemoryByteStore(client=client, async_client=aclient, name=_name())
    with pytest.raises(InvalidStoreKeyError) as caught:
        store.mget([1])  # type: ignore[list-item]
    assert isinstance(caught.value, InvalidInputError)
    assert isinstance(caught.value, InvalidKeyException)
    with pytest.raises(InvalidKeyException):
        await store.amset([("\ud800", b"x")])
    with pytest.raises(InvalidInputError):
        store.mset([("k", "text")])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        store.mset([("k",)])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        store.mget("abc")
    with pytest.raises(InvalidStoreKeyError):
        list(store.yield_keys(prefix=b"a"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        AgentMemoryByteStore(client=client, name=_name(), namespace="")
    with pytest.raises(InvalidInputError):
        AgentMemoryByteStore(client=client, name="")
    with pytest.raises(InvalidInputError):
        AgentMemoryByteStore(client=client, name="n", ttl=float("nan"))
    only_async = AgentMemoryByteStore(async_client=aclient, name=_name())
    with pytest.raises(CapabilityError):
        only_async.mget(["k"])
    only_sync = AgentMemoryByteStore(client=client, name=_name())
    await only_sync.amset([("k", b"v")])  # in a worker thread
    assert [k async for k in only_sync.ayield_keys()] == ["k"]


async def test_store_skips_and_counts_keys_another_writer_made(
    stores: tuple[Any, Any], raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A key under the namespace that is not UTF-8, or that holds another type than a
    string, fails no call: yield_keys skips it, mget reads it as absent, both log and
    count it (whatever the client's decode_responses)."""
    client, aclient = stores
    registry = CollectorRegistry()
    name = _name()
    store = AgentMemoryByteStore(client=client, async_client=aclient, name=name, registry=registry)
    store.mset([("a", b"1"), ("é", b"2")])
    raw.execute_command("SET", f"{name}:kv:default:".encode() + b"\xff\xfe", "x")
    raw.hset(f"{name}:kv:default:h", "f", "v")
    with caplog.at_level(logging.WARNING):
        assert sorted(store.yield_keys()) == ["a", "h", "é"]
        assert sorted([k async for k in store.ayield_keys()]) == ["a", "h", "é"]
        assert store.mget(["a", "h"]) == [b"1", None]
        assert await store.amget(["h", "é"]) == [None, b"2"]
    assert "not UTF-8" in caplog.text and "another type" in caplog.text
    counted = registry.get_sample_value(
        "agent_memory_events_total", {"name": name, "event": "corrupt_entries"}
    )
    assert counted == 4
    store.mset([("h", b"3")])  # a write replaces the foreign value
    assert store.mget(["h"]) == [b"3"]


async def test_store_from_url(target: Target) -> None:
    store = AgentMemoryByteStore.from_url(target.url, name=_name(), namespace="docs")
    await store.amset([("k", b"v")])
    assert store.mget(["k"]) == [b"v"]
    store.mdelete(["k"])
    await store.aclose()


# -- cluster ------------------------------------------------------------------------------


def _cluster_clients(package: str, url: str) -> tuple[Any, Any]:
    if package == "valkey":
        from valkey.asyncio.cluster import ValkeyCluster as AsyncValkeyCluster
        from valkey.cluster import ValkeyCluster

        return ValkeyCluster.from_url(url), AsyncValkeyCluster.from_url(url)
    from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
    from redis.cluster import RedisCluster

    return RedisCluster.from_url(url, decode_responses=True), AsyncRedisCluster.from_url(
        url, decode_responses=True
    )


@pytest.mark.parametrize("package", ["valkey", "redis"])
async def test_adapters_on_a_cluster(package: str, cluster_url: str) -> None:
    client, aclient = _cluster_clients(package, cluster_url)
    name = _name()
    try:
        store = AgentMemoryByteStore(client=client, async_client=aclient, name=name)
        keys = [f"key-{i}" for i in range(40)]  # spread over every primary's slots
        store.mset([(k, k.encode()) for k in keys])
        assert await store.amget(keys) == [k.encode() for k in keys]
        assert sorted(store.yield_keys(prefix="key-1")) == sorted(
            k for k in keys if k.startswith("key-1")
        )
        assert len([k async for k in store.ayield_keys()]) == 40
        await store.amdelete(keys)
        assert store.mget(keys) == [None] * 40

        cache = AgentMemoryCache(SyncLlmCache(client, name), async_cache=LlmCache(aclient, name))
        cache.update("p", "llm", [Generation(text="x")])
        assert await cache.alookup("p", "llm") == [Generation(text="x")]
        await cache.aclear()
        assert cache.lookup("p", "llm") is None

        history = AgentMemoryChatMessageHistory("s", client=client, async_client=aclient, name=name)
        history.add_messages([HumanMessage("a")])
        await history.aadd_messages([AIMessage("b")])
        assert await history.aget_messages() == [HumanMessage("a"), AIMessage("b")]
        history.clear()
        assert history.messages == []
    finally:
        client.close()
        await aclient.aclose()
