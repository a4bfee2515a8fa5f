"""The pydantic-ai adapters against the real ``pydantic-ai-slim`` and real servers.

The message history runs on plain Valkey and Valkey + valkey-search 1.2 with both client
packages (valkey: RESP2, bytes; redis: RESP3, str) and on a 3-primary cluster, through
``Agent.run`` / ``Agent.run_sync`` with pydantic-ai's ``FunctionModel`` (no API key, no
network): what is loaded equals what the run produced, tool calls and returns included. The memory toolset
is driven through ``Agent.run`` (so pydantic-ai's own validation and retry machinery
runs) and, for the isolation properties, through its tools' validator and function.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent, ToolFailed
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from agent_memory import MemoryStore, Scope, SyncMemoryStore
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import (
    AgentMemoryError,
    CapabilityError,
    EmbedderError,
    InvalidInputError,
    NotFoundError,
    StoreClosedError,
)
from agent_memory.integrations.pydantic_ai import AgentMemoryMessageHistory, memory_toolset
from tests.conftest import _Servers
from tests.integrations.targets import PACKAGES, Package, Target

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pydantic_ai_memory.py"


def _name() -> str:
    return f"pa{uuid.uuid4().hex[:10]}"


@pytest.fixture
def name() -> str:
    return _name()


def _history(client: Any, name: str, cid: str = "c1", **kw: Any) -> AgentMemoryMessageHistory:
    return AgentMemoryMessageHistory(cid, client=client, name=name, **kw)


def _responses(messages: list[ModelMessage]) -> int:
    return sum(isinstance(m, ModelResponse) for m in messages)


def _returns(messages: list[ModelMessage]) -> list[Any]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]


def _tool_agent() -> Agent[None, str]:
    """An agent whose model calls ``add`` once per run, then answers with its result."""

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        done = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if done:
            return ModelResponse(parts=[TextPart(f"sum={done[-1].content}")])
        return ModelResponse(parts=[ToolCallPart("add", {"a": len(messages), "b": 2})])

    agent: Agent[None, str] = Agent(FunctionModel(script))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    return agent


# -- the message history -------------------------------------------------------------------


async def test_history_round_trip_with_tool_calls(aclient: Any, name: str, raw: Any) -> None:
    agent = _tool_agent()
    history = _history(aclient, name, "conv/ü 1")
    assert await history.load() == []
    first = await agent.run("first", message_history=await history.load())
    await history.append(first.new_messages())
    assert await history.load() == first.all_messages()
    second = await agent.run("second", message_history=await history.load())
    await history.append(second.new_messages())
    loaded = await history.load()
    assert loaded == second.all_messages()
    assert len(loaded) == 8  # (prompt, tool call, tool return, answer) twice
    kinds = [p.part_kind for p in _returns(loaded)]
    assert kinds.count("tool-return") == 2 and kinds.count("user-prompt") == 2
    assert raw.type(history.key) == "list" and raw.llen(history.key) == 8
    assert history.key == f"{name}:pai_history:conv/ü 1"
    assert await history.load(limit=3) == loaded[-3:]
    assert await history.load(limit=0) == []
    await history.clear()
    assert await history.load() == [] and raw.exists(history.key) == 0


async def test_test_model_run_round_trips(aclient: Any, name: str) -> None:
    agent: Agent[None, str] = Agent(TestModel())

    @agent.tool_plain
    def weather(city: str) -> str:
        return f"sunny in {city}"

    history = _history(aclient, name)
    result = await agent.run("weather?", message_history=await history.load())
    await history.append(result.new_messages())
    assert await history.load() == result.all_messages()
    assert "weather" in {
        p.tool_name for p in _returns(await history.load()) if p.part_kind == "tool-return"
    }


async def test_corrupt_entries_are_skipped_and_counted(
    aclient: Any, name: str, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    history = _history(aclient, name)
    result = await _tool_agent().run("x")
    await history.append(result.new_messages())
    raw.rpush(history.key, "not json", '{"kind": "bogus"}', "[1, 2]")
    with caplog.at_level("WARNING"):
        assert await history.load() == result.all_messages()
    assert history.skipped == 3 and "3 corrupt" in caplog.text
    assert "not json" not in caplog.text  # never logs the content
    assert await history.load(limit=2) == result.all_messages()[-2:]  # the window grows
    assert history.skipped == 6


async def test_ttl_slides_and_no_ttl_persists(aclient: Any, name: str, raw: Any) -> None:
    messages = (await _tool_agent().run("x")).new_messages()
    timed = _history(aclient, name, "timed", ttl=30)
    await timed.append(messages)
    assert 0 < raw.pttl(timed.key) <= 30_000
    raw.pexpire(timed.key, 5_000)
    await timed.load()
    assert raw.pttl(timed.key) > 5_000
    kept = _history(aclient, name, "kept")
    await kept.append(messages)
    assert raw.pttl(kept.key) == -1


async def test_concurrent_appends_lose_nothing(aclient: Any, name: str) -> None:
    runs = [(await _tool_agent().run(f"p{i}")).new_messages() for i in range(8)]
    history = _history(aclient, name)
    await asyncio.gather(*(history.append(m) for m in runs))
    loaded = await history.load()
    assert len(loaded) == sum(len(m) for m in runs)
    for messages in runs:  # each run's messages stay together, in order
        start = loaded.index(messages[0])
        assert loaded[start : start + len(messages)] == messages


def test_sync_twins_with_run_sync(target: Target, name: str) -> None:
    client = target.package.client(target.url, blocking=True)
    try:
        agent = _tool_agent()
        history = _history(client, name)
        result = agent.run_sync("hi", message_history=history.load_sync())
        history.append_sync(result.new_messages())
        assert history.load_sync() == result.all_messages()
        assert asyncio.run(history.load()) == result.all_messages()  # async on a worker thread
        history.clear_sync()
        assert history.load_sync() == []
    finally:
        client.close()


async def test_sync_methods_need_a_blocking_client(aclient: Any, name: str) -> None:
    history = _history(aclient, name)
    with pytest.raises(CapabilityError):
        history.load_sync()
    with pytest.raises(CapabilityError):
        history.clear_sync()


async def test_bad_input(aclient: Any, name: str, target: Target) -> None:
    for cid in ("", 3, None, "x" * 1025):
        with pytest.raises(InvalidInputError):
            _history(aclient, name, cid)  # type: ignore[arg-type]
    for bad in ({"name": ""}, {"ttl": 0}, {"ttl": -1.0}, {"ttl": "1"}, {"client": None}):
        kwargs: dict[str, Any] = {"client": aclient, "name": name, **bad}
        with pytest.raises(InvalidInputError):
            AgentMemoryMessageHistory("c", **kwargs)
    history = _history(aclient, name)
    for messages in ([{"role": "user", "content": "hi"}], "hi", [None], {"a": 1}):
        with pytest.raises(InvalidInputError):
            await history.append(messages)  # type: ignore[arg-type]
    for limit in (-1, 1.5, True, "2"):
        with pytest.raises(InvalidInputError):
            await history.load(limit=limit)  # type: ignore[arg-type]
    assert await history.load() == []  # nothing was written
    with pytest.raises(InvalidInputError):
        AgentMemoryMessageHistory.from_url("http://x", "c", name=name)
    await history.append([])  # nothing to send


async def test_a_key_of_another_type_is_a_library_error(aclient: Any, name: str, raw: Any) -> None:
    history = _history(aclient, name)
    raw.set(history.key, "a string")
    with pytest.raises(AgentMemoryError):
        await history.load()


async def test_from_url_owns_and_closes(target: Target, name: str) -> None:
    async with AgentMemoryMessageHistory.from_url(target.url, "c", name=name) as history:
        await history.append((await _tool_agent().run("x")).new_messages())
        assert len(await history.load()) == 4
    with pytest.raises(StoreClosedError):
        await history.load()
    with AgentMemoryMessageHistory.from_url(target.url, "c", name=name, blocking=True) as sync:
        assert len(sync.load_sync()) == 4
        sync.clear_sync()


async def test_injected_client_is_left_open(aclient: Any, name: str) -> None:
    async with _history(aclient, name) as history:
        await history.load()
    assert await aclient.ping()
    assert await history.load() == []


CONVERSATION_IDS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(ids=st.lists(CONVERSATION_IDS, min_size=2, max_size=4, unique=True))
def test_conversations_never_see_each_other(target: Target, ids: list[str]) -> None:
    async def run() -> None:
        client = target.package.client(target.url)
        name = _name()
        agent = _tool_agent()
        try:
            expected: dict[str, list[ModelMessage]] = {}
            for n, cid in enumerate(ids):
                history = _history(client, name, cid)
                for turn in range(n + 1):
                    result = await agent.run(f"{cid}|{turn}", message_history=await history.load())
                    await history.append(result.new_messages())
                expected[cid] = result.all_messages()
            await _history(client, name, ids[-1]).clear()
            expected[ids[-1]] = []
            for cid in ids:
                assert await _history(client, name, cid).load() == expected[cid]
        finally:
            await client.aclose()

    asyncio.run(run())


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
async def test_histories_on_a_cluster(package: Package, cluster_url: str) -> None:
    client, aclient = package.cluster_clients(cluster_url)
    name, agent = _name(), _tool_agent()
    try:
        for i in range(12):  # conversations spread over every primary's slots
            history = _history(aclient, name, f"conv-{i}", ttl=60)
            result = await agent.run("add", message_history=await history.load())
            await history.append(result.new_messages())
            assert await history.load() == result.all_messages()
            blocking = _history(client, name, f"conv-{i}")
            assert blocking.load_sync() == result.all_messages()
            blocking.clear_sync()
            assert await history.load() == []
    finally:
        client.close()
        await aclient.aclose()


# -- the memory toolset --------------------------------------------------------------------


@pytest.fixture
async def store(aclient: Any, name: str) -> AsyncIterator[MemoryStore]:
    memory = MemoryStore(aclient, name, HashingEmbedder(), default_threshold=2.0)
    await memory.ensure_index()
    yield memory


async def invoke(toolset: Any, tool: str, **arguments: Any) -> Any:
    """Validate and call one tool as pydantic-ai does; a ``ToolFailed`` becomes
    ``{"error": ...}``."""
    found = toolset.tools[tool]
    found.args_validator(None, **arguments)
    try:
        return await found.function(**arguments)
    except ToolFailed as exc:
        return {"error": exc.message}


async def test_toolset_schemas_are_bound(store: MemoryStore) -> None:
    plain = memory_toolset(store, scope=Scope(namespace="acme"))
    assert sorted(plain.tools) == ["forget_memory", "recall_memory", "save_memory"]
    authority = {"namespace", "agent_id", "thread_id", "session_id", "scope", "session"}
    for tool in plain.tools.values():
        schema = tool.tool_def.parameters_json_schema
        assert schema["additionalProperties"] is False
        assert not authority & set(schema["properties"])
    save = plain.tools["save_memory"].tool_def.parameters_json_schema
    assert "durability" not in save["properties"] and save["required"] == ["text"]
    session = memory_toolset(store, scope=Scope(namespace="acme", session_id="s1"))
    durability = session.tools["save_memory"].tool_def.parameters_json_schema["properties"]
    assert durability["durability"]["enum"] == ["shared", "session"]
    only = memory_toolset(store, scope=Scope(), include=["recall"], names={"recall": "lookup"})
    assert list(only.tools) == ["lookup"]


def _memory_script(steps: list[Callable[[list[ModelMessage]], ModelResponse]]) -> FunctionModel:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return steps.pop(0)(messages)

    return FunctionModel(script)


def _call(tool: str, **args: Any) -> Callable[[list[ModelMessage]], ModelResponse]:
    return lambda messages: ModelResponse(parts=[ToolCallPart(tool, args)])


def _answer_from_tool(messages: list[ModelMessage]) -> ModelResponse:
    (part,) = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    memories = part.content["memories"]
    return ModelResponse(parts=[TextPart(memories[0]["content"] if memories else "none")])


def _say(text: str) -> Callable[[list[ModelMessage]], ModelResponse]:
    return lambda messages: ModelResponse(parts=[TextPart(text)])


async def test_agent_saves_then_recalls(store: MemoryStore, aclient: Any, name: str) -> None:
    scope = Scope(namespace="acme", agent_id="assistant")
    steps = [
        _call("save_memory", text="User prefers dark mode", importance=0.9),
        _say("Noted."),
        _call("recall_memory", query="dark mode theme", k=3),
        _answer_from_tool,
    ]
    agent = Agent(_memory_script(steps), toolsets=[memory_toolset(store, scope=scope)])
    first_history = _history(aclient, name, "conv-1")
    first = await agent.run("I like dark mode", message_history=await first_history.load())
    await first_history.append(first.new_messages())
    assert first.output == "Noted."
    assert [i.content for i in (await store.list(scope)).items] == ["User prefers dark mode"]
    second_history = _history(aclient, name, "conv-2")  # a new conversation: no history
    second = await agent.run("Which theme?", message_history=await second_history.load())
    await second_history.append(second.new_messages())
    assert second.output == "User prefers dark mode"
    assert await first_history.load() == first.all_messages()
    stored = await second_history.load()
    assert stored == second.all_messages()
    assert any(p.part_kind == "tool-return" for p in _returns(stored))


async def test_wrong_arguments_go_back_to_the_model(store: MemoryStore) -> None:
    scope = Scope(namespace="acme")
    steps = [
        _call("save_memory", text="sneaky", namespace="other"),  # authority: retried
        _call("save_memory", text="fine"),
        _call("forget_memory", id="no-such-id"),  # unknown id: ToolFailed, no retry used
        _say("done"),
    ]
    agent = Agent(_memory_script(steps), toolsets=[memory_toolset(store, scope=scope)])
    result = await agent.run("go")
    assert result.output == "done"
    parts = _returns(result.all_messages())
    outcomes = [(p.tool_name, p.outcome) for p in parts if isinstance(p, ToolReturnPart)]
    assert outcomes == [
        ("save_memory", "retried"),  # ModelRetry: the model is asked to correct it
        ("save_memory", "success"),
        ("forget_memory", "failed"),  # ToolFailed: seen, no retry budget used
    ]
    contents = [str(p.content) for p in parts if isinstance(p, ToolReturnPart)]
    assert "namespace" in contents[0] and "no memory 'no-such-id'" in contents[2]
    assert [i.content for i in (await store.list(Scope(namespace="other"))).items] == []
    assert [i.content for i in (await store.list(scope)).items] == ["fine"]


@pytest.mark.parametrize("arguments", ["[]", '["text", "x"]', '"x"', "null", "5"])
async def test_arguments_that_are_not_an_object_go_back_to_the_model(
    store: MemoryStore, arguments: str
) -> None:
    """A model may emit any JSON as a call's arguments: one that is not an object is a
    validation error the model is asked to correct, not a ``TypeError`` ending the run."""
    scope = Scope(namespace="acme")
    steps = [
        lambda messages: ModelResponse(parts=[ToolCallPart("save_memory", arguments)]),
        _say("done"),
    ]
    agent = Agent(_memory_script(steps), toolsets=[memory_toolset(store, scope=scope)])
    result = await agent.run("go")
    assert result.output == "done"
    (retry,) = [p for p in _returns(result.all_messages()) if isinstance(p, ToolReturnPart)]
    assert (retry.tool_name, retry.outcome) == ("save_memory", "retried")
    assert "Input should be an object" in str(retry.content)
    assert (await store.list(scope)).total == 0


async def test_return_errors_false_raises_library_errors(store: MemoryStore) -> None:
    toolset = memory_toolset(store, scope=Scope(namespace="acme"), return_errors=False)
    with pytest.raises(InvalidInputError):
        await invoke(toolset, "save_memory", text="x", agent_id="other")
    with pytest.raises(NotFoundError):
        await invoke(toolset, "forget_memory", id="nope")


async def test_an_embedder_failure_ends_the_run_instead_of_a_retry(aclient: Any, name: str) -> None:
    def down(text: str) -> list[float]:
        raise ConnectionError("the embedding API is down")

    memory = MemoryStore(aclient, name, down, default_threshold=2.0)
    toolset = memory_toolset(memory, scope=Scope(namespace="acme"))
    with pytest.raises(EmbedderError):
        await invoke(toolset, "save_memory", text="x")


async def test_memory_toolset_bad_construction(store: MemoryStore, aclient: Any) -> None:
    scope = Scope()
    cases: list[dict[str, Any]] = [
        {"store": SyncMemoryStore.__new__(SyncMemoryStore), "scope": scope},
        {"store": object(), "scope": scope},
        {"store": store, "scope": {"namespace": "a"}},
        {"store": store, "scope": scope, "include": ["remember"]},
        {"store": store, "scope": scope, "names": {"recall": "bad name"}},
        {"store": store, "scope": scope, "names": {"recall": "x", "save": "x"}},
    ]
    for kwargs in cases:
        with pytest.raises(InvalidInputError):
            memory_toolset(**kwargs)


async def _assert_isolated(store: MemoryStore, mine: Scope, other: Scope, durability: str) -> None:
    token = uuid.uuid4().hex[:8]
    writer = memory_toolset(store, scope=mine)
    arguments: dict[str, Any] = {"text": f"secret {token} of the first scope", "importance": 1.0}
    if mine.session_id is not None:
        arguments["durability"] = durability
    saved = await invoke(writer, "save_memory", **arguments)
    reader = memory_toolset(store, scope=other)
    seen = await invoke(reader, "recall_memory", query=f"secret {token}", k=20)
    assert saved["id"] not in {m["id"] for m in seen["memories"]}
    assert all(token not in m["content"] for m in seen["memories"])
    assert "error" in await invoke(reader, "forget_memory", id=saved["id"])  # looks unknown
    own = await invoke(writer, "recall_memory", query=f"secret {token}", k=20)
    assert saved["id"] in {m["id"] for m in own["memories"]}  # still there for its owner


SCOPE_PAIRS = [
    (Scope(namespace="a"), Scope(namespace="b"), "shared", True),
    (Scope(namespace="a"), Scope(), "shared", True),
    (Scope(namespace="a", agent_id="x"), Scope(namespace="a", agent_id="y"), "shared", True),
    (Scope(namespace="a", thread_id="t1"), Scope(namespace="a", thread_id="t2"), "shared", True),
    (Scope(namespace="a", session_id="s1"), Scope(namespace="a", session_id="s2"), "session", True),
    (
        Scope(namespace="a", agent_id="x", session_id="s1"),
        Scope(namespace="a", agent_id="x"),
        "session",
        False,
    ),
    (Scope(namespace="a*"), Scope(namespace="a"), "shared", True),
    (Scope(namespace="{a}"), Scope(namespace="a"), "shared", True),
]


@pytest.mark.parametrize(("mine", "other", "durability", "both_ways"), SCOPE_PAIRS)
async def test_scopes_never_see_each_other_through_tools(
    store: MemoryStore, mine: Scope, other: Scope, durability: str, both_ways: bool
) -> None:
    await _assert_isolated(store, mine, other, durability)
    if both_ways:
        await _assert_isolated(store, other, mine, durability)


SCOPE_VALUES = st.one_of(st.none(), st.text(st.characters(codec="utf-8"), min_size=1, max_size=8))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(a=SCOPE_VALUES, b=SCOPE_VALUES)
def test_namespaces_never_see_each_other_through_tools(
    target: Target, a: str | None, b: str | None
) -> None:
    if a == b:
        return

    async def run() -> None:
        client = target.package.client(target.url)
        try:
            memory = MemoryStore(client, _name(), HashingEmbedder(), default_threshold=2.0)
            await memory.ensure_index()
            await _assert_isolated(memory, Scope(namespace=a), Scope(namespace=b), "shared")
        finally:
            await client.aclose()

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
        "[conversation-1] assistant: Noted.",
        "[conversation-2] assistant: From memory: User prefers dark mode",
        "[conversation-2] round trip equal: True",
        "'tool-call'",
    ):
        assert line in done.stdout, done.stdout[-2000:]
