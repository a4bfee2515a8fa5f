"""The MCP server, driven by the official MCP client over stdio against a real server."""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from agent_memory import MemoryStore, Scope
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.integrations.mcp import AUTHORITY_ARGUMENTS, MemoryTools, check_arguments
from tests.conftest import _Servers

pytestmark = pytest.mark.integration


def _params(url: str, name: str, *extra: str) -> StdioServerParameters:
    args = ["-m", "agent_memory.cli.main", "--url", url, "--name", name, "mcp"]
    return StdioServerParameters(
        command=sys.executable, args=[*args, "--embedder", "hashing", *extra]
    )


async def _call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def test_stdio_server_with_the_real_client(servers: _Servers) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"mcp_{uuid.uuid4().hex[:8]}"
    # A memory of another tenant, written directly: the server must never reach it.
    other = MemoryStore.from_url(url, name=name, embed=HashingEmbedder())
    async with other:
        foreign = await other.remember(
            "the launch code of the other tenant", scope=Scope(namespace="tenant-b")
        )
        async with (
            stdio_client(_params(url, name, "--namespace", "tenant-a")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            tools = {t.name: t for t in listed.tools}
            assert set(tools) == {"remember", "recall", "forget", "list", "complete", "feedback"}
            for tool in tools.values():
                schema = tool.input_schema
                assert schema["additionalProperties"] is False
                assert not AUTHORITY_ARGUMENTS & set(schema["properties"]), tool.name
            assert "durability" not in tools["remember"].input_schema["properties"]

            first = await _call(
                session,
                "remember",
                {"content": "The user prefers dark mode", "importance": 0.9, "tags": ["prefs"]},
            )
            await _call(session, "remember", {"content": "Deploys happen on Tuesdays"})

            recalled = await _call(session, "recall", {"query": "dark mode", "k": 3})
            assert recalled["selection_id"]
            assert recalled["memories"][0]["id"] == first["id"]
            assert recalled["memories"][0]["content"] == "The user prefers dark mode"
            launch = await _call(session, "recall", {"query": "launch code of the other tenant"})
            assert all(m["id"] != foreign for m in launch["memories"])

            page = await _call(session, "list", {"limit": 10})
            assert page["total"] == 2
            assert {m["content"] for m in page["memories"]} == {
                "The user prefers dark mode",
                "Deploys happen on Tuesdays",
            }
            tagged = await _call(session, "list", {"tags": ["prefs"]})
            assert [m["id"] for m in tagged["memories"]] == [first["id"]]

            # The model tries to pick another tenant: rejected, nothing written.
            attempt = await session.call_tool(
                "remember", {"content": "planted", "namespace": "tenant-b"}
            )
            assert attempt.is_error
            assert "namespace" in attempt.content[0].text  # type: ignore[union-attr]
            for key in ("session_id", "scope"):
                rejected = await session.call_tool("recall", {"query": "x", key: "tenant-b"})
                assert rejected.is_error
            assert (await session.call_tool("list", {"bogus": 1})).is_error
            assert (await session.call_tool("recall", {"query": "x", "k": 0})).is_error

            # A foreign id is "not found", and stays in its tenant.
            stolen = await session.call_tool("forget", {"id": foreign})
            assert stolen.is_error
            assert "NotFoundError" in stolen.content[0].text  # type: ignore[union-attr]
            assert await other.get(foreign) is not None
            # So is another tenant's selection, even with its id.
            theirs = (
                await other.recall("launch code", scope=Scope(namespace="tenant-b"))
            ).selection_id
            assert await _call(session, "complete", {"selection_id": theirs, "score": 0.0}) == {
                "applied": False
            }
            assert await other.complete(theirs, 1.0)  # still there for its own tenant

            assert (await _call(session, "forget", {"id": first["id"]})) == {"forgotten": True}
            assert (await _call(session, "list", {}))["total"] == 1

            done = await _call(
                session, "complete", {"selection_id": recalled["selection_id"], "score": 1.0}
            )
            assert done == {"applied": True}
            again = await _call(
                session, "complete", {"selection_id": recalled["selection_id"], "score": 0.0}
            )
            assert again == {"applied": False}
            deploys = await _call(session, "list", {})
            kept = deploys["memories"][0]["id"]
            assert await _call(session, "feedback", {"id": kept, "value": 1}) == {"recorded": True}
            assert await _call(session, "feedback", {"id": kept, "value": None}) == {
                "recorded": True
            }
            assert (await session.call_tool("feedback", {"id": foreign, "value": -1})).is_error

        planted = await other.list(Scope(namespace="tenant-b"))
        assert [i.id for i in planted.items] == [foreign]
        assert (await other.list(Scope(namespace="tenant-a"))).total == 1


async def test_session_binding_with_the_real_client(servers: _Servers) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"mcp_{uuid.uuid4().hex[:8]}"
    bound = ("--namespace", "tenant-a", "--session", "s1")
    async with (
        stdio_client(_params(url, name, *bound)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["remember"].input_schema["properties"]["durability"]["enum"] == [
            "shared",
            "session",
        ]
        await _call(session, "remember", {"content": "scratch note", "durability": "session"})
        await _call(session, "remember", {"content": "durable note"})
        hits = await _call(session, "recall", {"query": "note"})
        assert {m["content"] for m in hits["memories"]} == {"scratch note", "durable note"}
        mine = await _call(session, "list", {"durability": "session"})
        assert [m["content"] for m in mine["memories"]] == ["scratch note"]
        shared = await _call(session, "list", {})
        assert [m["content"] for m in shared["memories"]] == ["durable note"]
    store = MemoryStore.from_url(url, name=name, embed=HashingEmbedder())
    async with store:
        # Another session of the same namespace does not see the session memory.
        other = await store.recall("note", scope=Scope(namespace="tenant-a", session_id="s2"))
        assert [h.item.content for h in other] == ["durable note"]


def test_check_arguments_rejects_authority_and_unknown_arguments() -> None:
    from agent_memory.backends.inprocess import AsyncInProcessClient, Keyspace

    store = MemoryStore(AsyncInProcessClient(Keyspace()), "mcp_args", HashingEmbedder())
    tools = MemoryTools(store, namespace="a")
    spec = tools._specs["remember"]
    assert check_arguments(spec, {"content": "x"}) == {"content": "x"}
    for key in sorted(AUTHORITY_ARGUMENTS):
        with pytest.raises(InvalidInputError, match="bound to its namespace"):
            check_arguments(spec, {"content": "x", key: "b"})
    for bad in (
        [],
        {},
        {"content": ""},
        {"content": "x", "importance": 2},
        {"content": "x", "importance": True},
        {"content": "x", "tags": "prefs"},
        {"content": "x", "ttl_seconds": 0},
        {"content": "x", "durability": "session"},
    ):
        with pytest.raises(InvalidInputError):
            check_arguments(spec, bad)
    assert check_arguments(tools._specs["feedback"], {"id": "m", "value": None})["value"] is None


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("remember", {"content": "x", "tags": [f"t{i}" for i in range(65)]}),
        ("remember", {"content": "x", "tags": ["t" * 257]}),
        ("recall", {"query": "x", "tags": [f"t{i}" for i in range(65)]}),
        ("list", {"tags": [f"t{i}" for i in range(65)]}),
    ],
    ids=["remember-too-many", "remember-too-long", "recall-too-many", "list-too-many"],
)
async def test_tags_beyond_the_declared_bounds_are_refused_before_anything_is_written(
    servers: _Servers, tool: str, arguments: dict[str, Any]
) -> None:
    """The schema a model sees declares at most 64 tags of at most 256 characters: a
    call beyond them is refused naming ``tags``, as every declared bound is."""
    url = servers.get("valkey-redisearch").url
    store = MemoryStore.from_url(url, name=f"mcp_{uuid.uuid4().hex[:8]}", embed=HashingEmbedder())
    async with store:
        tools = MemoryTools(store, namespace="a")
        with pytest.raises(InvalidInputError, match="'tags'") as caught:
            await tools.call(tool, arguments)
        assert caught.value.field == "tags"
        assert (await store.list(Scope(namespace="a"))).total == 0


async def test_tools_in_process_ids_outside_the_scope_are_not_found() -> None:
    from agent_memory.backends.inprocess import AsyncInProcessClient, Keyspace

    client = AsyncInProcessClient(Keyspace())
    store = MemoryStore(client, "mcp_inproc", HashingEmbedder())
    tools = MemoryTools(store, namespace="a", session_id="s1")
    theirs = await store.remember(
        "session of s2", scope=Scope(namespace="a", session_id="s2"), durability="session"
    )
    with pytest.raises(NotFoundError):
        await tools.call("forget", {"id": theirs})
    with pytest.raises(InvalidInputError, match="unknown tool"):
        await tools.call("drop_everything", {})
    mine = (await tools.call("remember", {"content": "mine", "durability": "session"}))["id"]
    assert (await tools.call("forget", {"id": mine})) == {"forgotten": True}
    assert await store.get(theirs) is not None


async def test_complete_applies_only_the_selections_of_the_bound_scope() -> None:
    from agent_memory.backends.inprocess import AsyncInProcessClient, Keyspace

    store = MemoryStore(AsyncInProcessClient(Keyspace()), "mcp_complete", HashingEmbedder())
    await store.remember("tenant b prefers dark mode", scope=Scope(namespace="b"))
    theirs = (await store.recall("dark mode", scope=Scope(namespace="b"))).selection_id
    tools = MemoryTools(store, namespace="a")
    await tools.call("remember", {"content": "tenant a prefers light mode"})
    mine = (await tools.call("recall", {"query": "light mode"}))["selection_id"]

    assert await tools.call("complete", {"selection_id": theirs, "score": 0.0}) == {
        "applied": False
    }
    assert await store.complete(theirs, 1.0)  # untouched: still there for its own tenant
    with pytest.raises(InvalidInputError, match="selection_id"):
        await tools.call("complete", {"selection_id": "not-hex", "score": 0.0})
    restarted = MemoryTools(store, namespace="a")  # the store checks the scope, not the process
    assert await restarted.call("complete", {"selection_id": mine, "score": 1.0}) == {
        "applied": True
    }
    assert await tools.call("complete", {"selection_id": mine, "score": 1.0}) == {"applied": False}


async def test_an_unexpected_exception_is_a_tool_error_and_the_session_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A defect (an exception outside the library's hierarchy) reaches the model as a
    tool error, logged with its traceback; the next call of the session still works."""
    from mcp import Client

    from agent_memory.backends.inprocess import AsyncInProcessClient, Keyspace
    from agent_memory.integrations.mcp import build_server

    store = MemoryStore(AsyncInProcessClient(Keyspace()), "mcp_defect", HashingEmbedder())
    tools = MemoryTools(store, namespace="a")

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a defect in the store")

    async with Client(build_server(tools)) as client:
        monkeypatch.setattr(store, "recall", broken)
        failed = await client.call_tool("recall", {"query": "anything"})
        assert failed.is_error
        assert failed.structured_content == {
            "error": "InternalError",
            "message": "the memory server failed: RuntimeError('a defect in the store')",
        }
        assert "a defect in the store" in caplog.text and "Traceback" in caplog.text
        monkeypatch.undo()
        remembered = await client.call_tool("remember", {"content": "still serving"})
        assert not remembered.is_error


async def test_a_forged_tool_name_cannot_forge_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    """The tool name is the model's text: it was logged raw (a newline in it wrote a
    line of the model's choosing into the operator's log) and echoed whole."""
    import logging

    from mcp import Client

    from agent_memory.backends.inprocess import AsyncInProcessClient, Keyspace
    from agent_memory.integrations.mcp import build_server

    store = MemoryStore(AsyncInProcessClient(Keyspace()), "mcp_forged", HashingEmbedder())
    forged = "x\nCRITICAL agent_memory: forged\x1b[2K" + "y" * 100_000
    caplog.set_level(logging.INFO, logger="agent_memory.integrations.mcp")
    async with Client(build_server(MemoryTools(store, namespace="a"))) as client:
        failed = await client.call_tool(forged, {})
        assert failed.is_error
        assert len(failed.content[0].text) < 200  # type: ignore[union-attr]
        assert not (await client.call_tool("list", {})).is_error
    lines = [r.getMessage() for r in caplog.records if r.name.endswith("integrations.mcp")]
    assert lines and all("\n" not in line and "\x1b" not in line for line in lines)
