"""The OpenAI Agents SDK adapters against the real ``openai-agents`` and real servers.

The SDK ships no reusable session test suite, so the behaviours its own session tests
check (``tests/memory/test_session.py`` and ``tests/extensions/memory/test_redis_session.py``
of the 0.24.0 sdist: order, ``limit`` windows, ``pop_item``, corrupt entries, session
settings, separate sessions, unicode, concurrency, cancellation after a known outcome,
runs through ``Runner``) are ported here, on plain Valkey and Valkey + valkey-search 1.2
with both client packages (valkey: RESP2, bytes; redis: RESP3, str), plus a cluster.
The memory tools are invoked through ``FunctionTool.on_invoke_tool`` with a real
``ToolContext`` and through ``Runner.run`` with a scripted model (no API key, no network,
tracing disabled).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    SessionSettings,
    Usage,
)
from agents.memory import Session
from agents.tool_context import ToolContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from agent_memory import MemoryStore, Scope, SyncMemoryStore
from agent_memory.core import clients
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import (
    InvalidInputError,
    NotFoundError,
    ServerResponseError,
    StoreClosedError,
)
from agent_memory.integrations.openai_agents import AgentMemorySession, memory_tools
from tests.integrations.targets import Target
from tests.support import record_async_round_trips

pytestmark = pytest.mark.integration


def _name() -> str:
    return f"oa{uuid.uuid4().hex[:10]}"


@pytest.fixture
def name() -> str:
    return _name()


def _session(aclient: Any, name: str, sid: str = "s1", **kw: Any) -> AgentMemorySession:
    return AgentMemorySession(sid, client=aclient, name=name, **kw)


def _msgs(*texts: str) -> list[Any]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)
    ]


def _contents(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


# -- the Session protocol -----------------------------------------------------------------


async def test_is_a_session_and_round_trips(aclient: Any, name: str, raw: Any) -> None:
    session = _session(aclient, name, "direct_test")
    assert isinstance(session, Session)
    assert session.session_id == "direct_test"
    assert session.session_settings == SessionSettings()
    items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
    await session.add_items(items)  # type: ignore[arg-type]
    assert await session.get_items() == items
    assert raw.type(f"{name}:oai_session:direct_test") == "list"
    assert [json.loads(e) for e in raw.lrange(session.key, 0, -1)] == items
    stats = raw.hgetall(f"{name}:__stats")
    assert stats["session:writes"] == "1" and stats["session:reads"] == "1"
    await session.clear_session()
    assert await session.get_items() == []
    assert raw.exists(session.key) == 0


async def test_pop_item(aclient: Any, name: str) -> None:
    session = _session(aclient, name)
    assert await session.pop_item() is None
    await session.add_items(_msgs("Hello", "Hi there!", "How are you?"))
    assert len(await session.get_items()) == 3
    assert await session.pop_item() == {"role": "user", "content": "How are you?"}
    assert _contents(await session.get_items()) == ["Hello", "Hi there!"]
    assert (await session.pop_item() or {})["content"] == "Hi there!"
    assert (await session.pop_item() or {})["content"] == "Hello"
    assert await session.pop_item() is None
    assert await session.get_items() == []


async def test_pop_only_touches_its_session(aclient: Any, name: str) -> None:
    one, two = _session(aclient, name, "session_1"), _session(aclient, name, "session_2")
    await one.add_items(_msgs("Session 1 message"))
    await two.add_items(_msgs("Session 2 message 1", "Session 2 message 2"))
    assert (await two.pop_item() or {})["content"] == "Session 2 message 2"
    assert _contents(await one.get_items()) == ["Session 1 message"]
    assert _contents(await two.get_items()) == ["Session 2 message 1"]


async def test_get_items_limit(aclient: Any, name: str) -> None:
    session = _session(aclient, name)
    texts = ["Message 1", "Response 1", "Message 2", "Response 2", "Message 3", "Response 3"]
    await session.add_items(_msgs(*texts))
    assert _contents(await session.get_items()) == texts
    assert _contents(await session.get_items(limit=2)) == texts[-2:]
    assert _contents(await session.get_items(limit=4)) == texts[-4:]
    assert _contents(await session.get_items(limit=10)) == texts
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-3) == []  # as the SDK's RedisSession
    for bad in (True, 1.5, "2"):
        with pytest.raises(InvalidInputError):
            await session.get_items(limit=bad)  # type: ignore[arg-type]


async def test_session_settings(aclient: Any, name: str) -> None:
    session = _session(aclient, name, session_settings=SessionSettings(limit=2))
    texts = [f"m{i}" for i in range(5)]
    await session.add_items(_msgs(*texts))
    assert _contents(await session.get_items()) == texts[-2:]
    assert _contents(await session.get_items(limit=4)) == texts[-4:]  # explicit wins
    from_dict = _session(aclient, name, session_settings={"limit": 3})
    assert from_dict.session_settings == SessionSettings(limit=3)
    assert _contents(await from_dict.get_items()) == texts[-3:]
    for bad in ({"limit": 1, "unknown": 2}, {"limit": "many"}, 5):
        with pytest.raises(InvalidInputError):
            _session(aclient, name, session_settings=bad)


async def test_corrupt_entries_are_skipped_and_dropped(
    aclient: Any, name: str, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    session = _session(aclient, name)
    await session.add_items(_msgs("valid 0", "valid 1", "valid 2"))
    raw.rpush(session.key, "not valid json {{{", "[1, 2]", "7")
    with caplog.at_level("WARNING", logger="agent_memory.cache"):
        assert _contents(await session.get_items(limit=2)) == ["valid 1", "valid 2"]
    assert "3 element(s) are not JSON objects; skipped" in caplog.text  # logged, counted
    assert _contents(await session.get_items()) == ["valid 0", "valid 1", "valid 2"]
    limited = _session(aclient, name, session_settings=SessionSettings(limit=2))
    assert _contents(await limited.get_items()) == ["valid 1", "valid 2"]
    assert await session.pop_item() == {"role": "user", "content": "valid 2"}
    assert raw.llen(session.key) == 2
    raw.delete(session.key)
    raw.rpush(session.key, "not valid json {{{")
    caplog.clear()
    with caplog.at_level("WARNING", logger="agent_memory.cache"):
        assert await session.pop_item() is None
    assert "1 element(s) are not JSON objects; dropped by a pop" in caplog.text
    assert await session.get_items() == []
    raw.set(session.key, "a string")  # another type at the key: the library's error
    with pytest.raises(ServerResponseError):
        await session.get_items()


def test_newest_valid_finds_the_last_decodable_element() -> None:
    from agent_memory.integrations._list_log import newest_valid
    from agent_memory.integrations.openai_agents.items import decode_item

    assert newest_valid([], decode_item) == (-1, None)
    assert newest_valid(["x", b"\xff", "7"], decode_item) == (-1, None)
    assert newest_valid(['{"a": 1}', "x", '{"b": 2}', "y"], decode_item) == (2, {"b": 2})


async def test_a_pop_over_a_corrupt_run_takes_few_round_trips(
    aclient: Any, name: str, raw: Any, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    session = _session(aclient, name, ttl=60)
    await session.add_items(_msgs("keep me", "top"))
    await session.pop_item()  # warms the script cache
    sent = record_async_round_trips(monkeypatch)
    await session.add_items(_msgs("again"))
    sent.clear()
    assert (await session.pop_item() or {})["content"] == "again"
    assert len(sent) == 1  # a valid top: one round trip, its PEXPIRE riding along
    raw.rpush(session.key, *(["not json"] * 200))  # another writer's damage
    sent.clear()
    with caplog.at_level("WARNING", logger="agent_memory.cache"):
        assert (await session.pop_item() or {})["content"] == "keep me"
    assert len(sent) <= 8, sent  # RPOP, a few doubling LRANGE windows, one guarded pop
    assert "200 element(s) are not JSON objects; dropped by a pop" in caplog.text
    assert raw.llen(session.key) == 0 and await session.pop_item() is None
    raw.rpush(session.key, *(["not json"] * 100))  # nothing valid at all
    assert await session.pop_item() is None
    assert raw.llen(session.key) == 0


async def test_a_pop_over_corrupt_elements_never_drops_a_concurrent_append(
    aclient: Any, name: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session(aclient, name)
    await session.add_items(_msgs("old"))
    raw.rpush(session.key, *(["not json"] * 50))
    sent = record_async_round_trips(monkeypatch)
    batch = clients.AsyncExecutor.batch  # the counting one
    reads: list[int] = []

    async def append_after_the_read(self: Any, b: Any) -> Any:
        got = await batch(self, b)
        if any(c.name.upper() == "LRANGE" for c in b.commands):
            reads.append(len(got[0]))
            if len(reads) == 2:  # the window that found "old": another client appends
                raw.rpush(session.key, json.dumps({"role": "user", "content": "new"}))
        return got

    monkeypatch.setattr(clients.AsyncExecutor, "batch", append_after_the_read)
    assert (await session.pop_item() or {})["content"] == "new"  # the newest valid one
    assert reads == [32, 50]
    # the guarded pop saw the tail changed and removed nothing; an RPOP took "new"
    assert [names[0] for names in sent] == ["RPOP", "LRANGE", "LRANGE", "EVAL", "RPOP"]
    monkeypatch.undo()
    assert raw.llen(session.key) == 50  # "old" and the 49 corrupt ones above it kept
    assert (await session.pop_item() or {})["content"] == "old"
    assert await session.get_items() == []


async def test_unicode_special_ids_and_metacharacters(aclient: Any, name: str) -> None:
    items = [
        {"role": "user", "content": "こんにちは 👋 \u00e9"},
        {"role": "assistant", "content": '\'; DROP TABLE x; -- "quoted" \\ {}'},
        {"role": "user", "content": "lone \udc80 surrogate"},
    ]
    ids = ["{tag}", "a:b", "*", "[x]?", "spaces and\nnewline", "é"]
    for sid in ids:
        await _session(aclient, name, sid).add_items([*items, {"role": "user", "content": sid}])
    for sid in ids:
        assert await _session(aclient, name, sid).get_items() == [
            *items,
            {"role": "user", "content": sid},
        ]


async def test_concurrent_writers_lose_nothing(aclient: Any, name: str) -> None:
    sessions = [_session(aclient, name, "shared") for _ in range(4)]
    await asyncio.gather(
        *(
            s.add_items(_msgs(f"w{w}-{i}", f"w{w}-{i}b"))
            for w, s in enumerate(sessions)
            for i in range(10)
        )
    )
    got = await sessions[0].get_items()
    assert len(got) == 80
    for w in range(4):  # each batch stays whole and in order
        mine = [c for c in _contents(got) if c.startswith(f"w{w}-")]
        assert sorted(mine) == sorted(f"w{w}-{i}{s}" for i in range(10) for s in ("", "b"))
        for i in range(10):
            assert mine.index(f"w{w}-{i}") + 1 == mine.index(f"w{w}-{i}b")


async def test_cancelled_mutation_completes_then_cancels(aclient: Any, name: str) -> None:
    session = _session(aclient, name)
    task = asyncio.create_task(session.add_items(_msgs("kept")))
    await asyncio.sleep(0)  # the write is under way
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _contents(await session.get_items()) == ["kept"]


async def test_ttl_slides_and_no_ttl_persists(aclient: Any, name: str, raw: Any) -> None:
    forever = _session(aclient, name, "forever")
    await forever.add_items(_msgs("x"))
    assert raw.pttl(forever.key) == -1
    brief = _session(aclient, name, "brief", ttl=30)
    await brief.add_items(_msgs("x", "y"))
    assert 0 < raw.pttl(brief.key) <= 30_000
    raw.pexpire(brief.key, 5_000)
    await brief.get_items()  # a read refreshes the lifetime
    assert raw.pttl(brief.key) > 5_000
    raw.pexpire(brief.key, 5_000)
    await brief.pop_item()
    assert raw.pttl(brief.key) > 5_000


async def test_bad_input(aclient: Any, name: str, target: Target) -> None:
    import valkey

    blocking = valkey.Valkey.from_url(target.url)
    try:
        with pytest.raises(InvalidInputError, match="asyncio"):
            AgentMemorySession("s", client=blocking, name=name)
    finally:
        blocking.close()
    for bad_id in ("", None, 5, "x" * 2000):
        with pytest.raises(InvalidInputError):
            AgentMemorySession(bad_id, client=aclient, name=name)  # type: ignore[arg-type]
    for bad_ttl in (0, -1, float("nan"), "1"):
        with pytest.raises(InvalidInputError):
            AgentMemorySession("s", client=aclient, name=name, ttl=bad_ttl)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        AgentMemorySession("s", client=object(), name=name)
    session = _session(aclient, name)
    for bad_items in ("text", {"role": "user"}, [1], [{"x": {1, 2}}], [{"x": float("nan")}], None):
        with pytest.raises(InvalidInputError):
            await session.add_items(bad_items)  # type: ignore[arg-type]
    assert await session.get_items() == []  # nothing was written
    await session.add_items([])  # nothing to send


async def test_from_url_owns_and_closes(target: Target, name: str) -> None:
    async with AgentMemorySession.from_url(target.url, "s", name=name, ttl=60) as session:
        await session.add_items(_msgs("a"))
        assert _contents(await session.get_items()) == ["a"]
    with pytest.raises(StoreClosedError):
        await session.get_items()
    await session.close()  # idempotent
    with pytest.raises(InvalidInputError):
        AgentMemorySession.from_url("http://nope", "s", name=name)


async def test_injected_client_is_left_open(aclient: Any, name: str) -> None:
    session = _session(aclient, name)
    await session.close()
    await session.add_items(_msgs("still usable"))
    assert await aclient.ping()


# -- isolation between sessions (property) -------------------------------------------------

SESSION_IDS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(ids=st.lists(SESSION_IDS, min_size=2, max_size=4, unique=True))
def test_sessions_never_see_each_other(target: Target, ids: list[str]) -> None:
    async def run() -> None:
        client = target.package.client(target.url)
        name = _name()
        try:
            for n, sid in enumerate(ids):
                await _session(client, name, sid).add_items(
                    _msgs(*(f"{sid}|{i}" for i in range(n + 1)))
                )
            await _session(client, name, ids[0]).pop_item()
            await _session(client, name, ids[-1]).clear_session()
            for n, sid in enumerate(ids):
                got = _contents(await _session(client, name, sid).get_items())
                expected = [f"{sid}|{i}" for i in range(n + 1)]
                if sid == ids[0]:
                    expected = expected[:-1]
                if sid == ids[-1]:
                    expected = []
                assert got == expected
        finally:
            await client.aclose()

    asyncio.run(run())


# -- runs through the SDK ------------------------------------------------------------------


class ScriptedModel(Model):
    """A fake model: answers each call with the next scripted output, records inputs."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.inputs: list[list[Any]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(
            [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        )
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{uuid.uuid4().hex[:8]}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
    )


def call(name: str, **arguments: Any) -> ResponseFunctionToolCall:
    call_id = f"call_{uuid.uuid4().hex[:8]}"
    return ResponseFunctionToolCall(
        id=call_id,
        call_id=call_id,
        type="function_call",
        name=name,
        arguments=json.dumps(arguments),
    )


RUN_CONFIG = RunConfig(tracing_disabled=True)


async def test_runner_keeps_history_per_session(aclient: Any, name: str) -> None:
    model = ScriptedModel(
        [[say("San Francisco")], [say("California")], [say("I like dogs")], [say("cats")]]
    )
    agent = Agent(name="test", model=model)
    one, two = _session(aclient, name, "session_1"), _session(aclient, name, "session_2")
    first = await Runner.run(
        agent, "What city is the Golden Gate Bridge in?", session=one, run_config=RUN_CONFIG
    )
    assert first.final_output == "San Francisco"
    second = await Runner.run(agent, "What state is it in?", session=one, run_config=RUN_CONFIG)
    assert second.final_output == "California"
    assert len(model.inputs[-1]) == 3  # question, answer, new question
    await Runner.run(agent, "I like dogs", session=two, run_config=RUN_CONFIG)
    assert len(model.inputs[-1]) == 1  # another session starts empty
    await Runner.run(agent, "What do I like?", session=one, run_config=RUN_CONFIG)
    assert [i.get("content") for i in model.inputs[-1] if i.get("role") == "user"] == [
        "What city is the Golden Gate Bridge in?",
        "What state is it in?",
        "What do I like?",
    ]
    assert len(await one.get_items()) == 6
    model.turns.append([say("ok")])
    limited = RunConfig(tracing_disabled=True, session_settings=SessionSettings(limit=2))
    await Runner.run(agent, "again", session=one, run_config=limited)
    assert len(model.inputs[-1]) == 3  # 2 from history + the new one


@pytest.mark.parametrize("method", ["run", "run_streamed"])
async def test_sdk_scripted_model_with_the_session(aclient: Any, name: str, method: str) -> None:
    """The SDK's own test double (``agents.testing.ScriptedModel``), streamed and not."""
    from agents.testing import ScriptedModel as SdkScriptedModel
    from agents.testing import assistant_message

    model = SdkScriptedModel()
    agent = Agent(name="test", model=model)
    session = _session(aclient, name, f"sdk-{method}")

    async def turn(text: str, answer: str) -> Any:
        model.enqueue([assistant_message(answer)])
        if method == "run":
            return await Runner.run(agent, text, session=session, run_config=RUN_CONFIG)
        streamed = Runner.run_streamed(agent, text, session=session, run_config=RUN_CONFIG)
        async for _ in streamed.stream_events():
            pass
        return streamed

    assert (await turn("Hi there", "Hello")).final_output == "Hello"
    assert (await turn("Do you remember?", "Yes")).final_output == "Yes"
    last = model.calls[-1].input
    assert isinstance(last, list) and len(last) == 3
    assert [i.get("role") for i in await session.get_items()] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


# -- memory tools ---------------------------------------------------------------------------


@pytest.fixture
async def store(aclient: Any, name: str) -> AsyncIterator[MemoryStore]:
    memory = MemoryStore(aclient, name, HashingEmbedder(), default_threshold=2.0)
    await memory.ensure_index()
    yield memory


def _context(tool: FunctionTool, arguments: str) -> ToolContext[Any]:
    return ToolContext(
        context=None,
        tool_name=tool.name,
        tool_call_id=f"call_{uuid.uuid4().hex[:6]}",
        tool_arguments=arguments,
    )


async def invoke(tool: FunctionTool, **arguments: Any) -> Any:
    text = json.dumps(arguments)
    return json.loads(await tool.on_invoke_tool(_context(tool, text), text))


def _by_name(tools: list[FunctionTool]) -> dict[str, FunctionTool]:
    return {t.name: t for t in tools}


async def test_tool_schemas_are_strict_and_bound(store: MemoryStore) -> None:
    plain = _by_name(memory_tools(store, scope=Scope(namespace="acme")))
    assert sorted(plain) == ["forget_memory", "recall_memory", "save_memory"]
    for tool in plain.values():
        schema = tool.params_json_schema
        assert tool.strict_json_schema and schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
        assert not {"namespace", "agent_id", "session_id", "thread_id", "scope"} & set(
            schema["properties"]
        )
    assert "durability" not in plain["save_memory"].params_json_schema["properties"]
    with_session = _by_name(memory_tools(store, scope=Scope(namespace="acme", session_id="c1")))
    assert with_session["save_memory"].params_json_schema["properties"]["durability"]["enum"] == [
        "shared",
        "session",
    ]
    renamed = memory_tools(store, scope=Scope(), include=["recall"], names={"recall": "lookup"})
    assert [t.name for t in renamed] == ["lookup"]


async def test_tools_save_recall_forget_in_the_bound_scope(store: MemoryStore) -> None:
    scope = Scope(namespace="acme", agent_id="assistant", session_id="c1")
    tools = _by_name(memory_tools(store, scope=scope))
    saved = await invoke(
        tools["save_memory"], text="User prefers dark mode", importance=0.8, durability="shared"
    )
    assert saved["stored"] is True
    item = await store.get(saved["id"])
    assert (
        item is not None
        and item.scope == scope
        and item.importance == 0.8
        and item.source == "tool"
    )
    session_only = await invoke(
        tools["save_memory"], text="User is on a train today", importance=None, durability="session"
    )
    assert (await store.get(session_only["id"])).durability == "session"  # type: ignore[union-attr]
    found = await invoke(tools["recall_memory"], query="dark mode", k=None)
    assert found["memories"][0]["content"] == "User prefers dark mode"
    assert found["selection_id"]
    assert {m["id"] for m in found["memories"]} == {saved["id"], session_only["id"]}
    assert await invoke(tools["forget_memory"], id=saved["id"]) == {
        "id": saved["id"],
        "forgotten": True,
    }
    assert await store.get(saved["id"]) is None


async def test_tools_reject_authority_and_bad_arguments(store: MemoryStore) -> None:
    tools = _by_name(memory_tools(store, scope=Scope(namespace="acme")))
    for arguments in (
        {"text": "x", "namespace": "other"},
        {"text": "x", "agent_id": "root"},
        {"text": "x", "durability": "session"},  # no session bound: not offered
        {"text": "  "},
        {"text": "x", "importance": 3},
        {"text": 5},
        {},
    ):
        result = await invoke(tools["save_memory"], **arguments)
        assert "error" in result, arguments
    assert (await invoke(tools["recall_memory"], query="x", k=500))["error"]
    garbage = await tools["save_memory"].on_invoke_tool(_context(tools["save_memory"], "{"), "{")
    assert "error" in json.loads(garbage)
    assert (await store.list(Scope(namespace="acme"))).total == 0  # nothing was written
    raising = _by_name(memory_tools(store, scope=Scope(namespace="acme"), return_errors=False))
    with pytest.raises(InvalidInputError, match="bound"):
        await invoke(raising["save_memory"], text="x", namespace="other")
    with pytest.raises(NotFoundError):
        await invoke(raising["forget_memory"], id="0" * 26)


async def test_an_oversized_id_is_not_echoed_back_to_the_model(store: MemoryStore) -> None:
    """The error a model reads names the bad id by its start: a megabyte id came back
    whole, filling the model's context with its own garbage."""
    scope = Scope(namespace="acme")
    tools = _by_name(memory_tools(store, scope=scope))
    kept = await invoke(tools["save_memory"], text="kept", importance=None)
    answer = await invoke(tools["forget_memory"], id="z" * 1_000_000)
    assert answer["error"].startswith("not a memory id: 'zzz")
    assert len(answer["error"]) < 200
    assert [i.id for i in (await store.list(scope)).items] == [kept["id"]]


async def test_memory_tools_bad_construction(store: MemoryStore, aclient: Any) -> None:
    with pytest.raises(InvalidInputError):
        memory_tools(store, scope={"namespace": "x"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        memory_tools(store, scope=Scope(), include=["delete_everything"])
    with pytest.raises(InvalidInputError):
        memory_tools(store, scope=Scope(), names={"save": "has space"})
    with pytest.raises(InvalidInputError):
        memory_tools(store, scope=Scope(), names={"save": "recall_memory"})
    with pytest.raises(InvalidInputError):
        memory_tools(object(), scope=Scope())  # type: ignore[arg-type]
    import valkey

    sync = SyncMemoryStore(valkey.Valkey(), "x", HashingEmbedder())
    with pytest.raises(InvalidInputError, match="async"):
        memory_tools(sync, scope=Scope())  # type: ignore[arg-type]


# Pairs of scopes that must not see each other's memories through the tools, with the
# durability the first one saves with and whether the second one's memories must stay
# hidden from the first too (a session scope sees its namespace's shared pool: one way).
SCOPE_PAIRS = [
    (Scope(namespace="a"), Scope(namespace="b"), "shared", True),
    (Scope(), Scope(namespace="a"), "shared", True),
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


async def _assert_isolated(store: MemoryStore, mine: Scope, other: Scope, durability: str) -> None:
    token = uuid.uuid4().hex[:8]
    text = f"secret {token} of the first scope"
    writer = _by_name(memory_tools(store, scope=mine))
    arguments: dict[str, Any] = {"text": text, "importance": 1.0}
    if mine.session_id is not None:
        arguments["durability"] = durability
    saved = await invoke(writer["save_memory"], **arguments)
    reader = _by_name(memory_tools(store, scope=other))
    seen = await invoke(reader["recall_memory"], query=f"secret {token}", k=20)
    assert saved["id"] not in {m["id"] for m in seen["memories"]}
    assert all(token not in m["content"] for m in seen["memories"])
    assert "error" in await invoke(reader["forget_memory"], id=saved["id"])  # looks unknown
    own = await invoke(writer["recall_memory"], query=f"secret {token}", k=20)
    assert saved["id"] in {m["id"] for m in own["memories"]}  # still there, visible to its owner


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


async def test_runner_calls_the_memory_tools(store: MemoryStore, aclient: Any, name: str) -> None:
    scope = Scope(namespace="acme", agent_id="assistant")
    model = ScriptedModel(
        [
            [call("save_memory", text="User prefers dark mode", importance=0.9)],
            [say("Noted.")],
            [call("recall_memory", query="dark mode theme", k=3)],
            [say("You prefer dark mode.")],
        ]
    )
    agent = Agent(name="assistant", model=model, tools=memory_tools(store, scope=scope))  # type: ignore[arg-type]
    session = _session(aclient, name, "conv-1")
    first = await Runner.run(agent, "I like dark mode", session=session, run_config=RUN_CONFIG)
    assert first.final_output == "Noted."
    stored = await store.list(scope)
    assert [i.content for i in stored.items] == ["User prefers dark mode"]
    second = await Runner.run(
        agent, "Which theme do I like?", session=session, run_config=RUN_CONFIG
    )
    assert second.final_output == "You prefer dark mode."
    outputs = [i for i in model.inputs[-1] if i.get("type") == "function_call_output"]
    assert "User prefers dark mode" in outputs[-1]["output"]
    kinds = [i.get("type", "message") for i in await session.get_items()]
    assert kinds.count("function_call") == 2 and kinds.count("function_call_output") == 2


# -- cluster --------------------------------------------------------------------------------


@pytest.mark.parametrize("package", ["valkey", "redis"])
async def test_sessions_on_a_cluster(package: str, cluster_url: str) -> None:
    if package == "valkey":
        from valkey.asyncio.cluster import ValkeyCluster

        client: Any = ValkeyCluster.from_url(cluster_url)
    else:
        from redis.asyncio.cluster import RedisCluster

        client = RedisCluster.from_url(cluster_url, decode_responses=True)
    name = _name()
    try:
        sessions = [_session(client, name, f"conv-{i}", ttl=60) for i in range(12)]  # many slots
        for i, session in enumerate(sessions):
            await session.add_items(_msgs(*(f"{i}-{j}" for j in range(3))))
        for i, session in enumerate(sessions):
            assert _contents(await session.get_items(limit=2)) == [f"{i}-1", f"{i}-2"]
            assert (await session.pop_item() or {})["content"] == f"{i}-2"
            await session.clear_session()
            assert await session.get_items() == []
    finally:
        await client.aclose()
