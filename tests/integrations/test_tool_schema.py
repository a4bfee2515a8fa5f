"""One set of tool rules for the application's memory tool and the MCP server."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agent_memory import MemoryStore, Scope, SyncMemoryStore, memory_tool
from agent_memory.backends.inprocess import InProcessClient, Keyspace
from agent_memory.core.tool_schema import (
    AUTHORITY_ARGUMENTS,
    ToolSpec,
    check_arguments,
    parse_arguments,
)
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.integrations.mcp_tools import tool_specs
from tests.conftest import _Servers

SPEC = ToolSpec(
    "t",
    "test",
    {
        "text": {"type": "string", "minLength": 1},
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
        "m": {"type": "integer", "minimum": 0},
        "labels": {
            "type": "object",
            "propertyNames": {"enum": ["topic"]},
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
    },
    ("text",),
)


def test_arguments_parse_from_json_text_or_mapping() -> None:
    assert parse_arguments('{"text": "x"}') == {"text": "x"}
    assert parse_arguments(None) == {}
    for bad in ("not json", "[1]", 3):
        with pytest.raises(InvalidInputError, match="arguments"):
            parse_arguments(bad)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"text": "x", "agent_id": "other"}, "bound to its namespace"),
        ({"text": "x", "colour": 1}, "unknown argument 'colour'"),
        ({}, "missing argument 'text'"),
        ({"text": "x", "n": 2.5}, "must be an integer"),
        ({"text": "x", "n": 9}, r"must be in \[1, 5\]"),
        ({"text": "x", "n": "3"}, "'n' must be an integer"),
        ({"text": "x", "m": -1}, "'m' must be >= 0$"),
        ({"text": "x", "labels": ["topic"]}, "must be an object"),
        ({"text": "x", "labels": {"colour": ["red"]}}, r"outside \['topic'\]"),
        ({"text": "x", "labels": {"topic": "deploys"}}, "labels.topic"),
    ],
)
def test_each_bad_argument_is_named(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        check_arguments(SPEC, arguments)


def test_json_nested_too_deep_is_refused() -> None:
    """json.loads raised RecursionError."""
    nested = '{"text": "x", "labels": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(InvalidInputError, match="nested too deep") as info:
        parse_arguments(nested)
    assert info.value.field == "arguments"
    with pytest.raises(InvalidInputError, match="nested too deep"):
        check_arguments(SPEC, nested.encode())


@pytest.mark.parametrize(
    "arguments",
    [
        {"text": "x", "n": 10**400},
        {"text": "x", "n": -(10**400)},
        '{"text": "x", "n": 1' + "0" * 400 + "}",
    ],
    ids=["int", "negative-int", "json"],
)
def test_an_integer_beyond_a_float_is_refused(arguments: Any) -> None:
    """math.isfinite raised OverflowError."""
    with pytest.raises(InvalidInputError, match="'n' must be a finite number") as info:
        check_arguments(SPEC, arguments)
    assert info.value.field == "n"


def test_good_arguments_come_back_as_given() -> None:
    arguments = {"text": "x", "n": 5, "labels": {"topic": ["a"]}}
    assert check_arguments(SPEC, arguments) == arguments


def test_both_tool_surfaces_share_the_rules() -> None:
    store = SyncMemoryStore(InProcessClient(Keyspace()), "tool_rules", HashingEmbedder())
    tool = memory_tool(store, namespace="a", session_id="s")
    remember = next(s for s in tool_specs(True) if s.name == "remember")
    assert (
        tool.parameters["properties"]["importance"]
        == remember.input_schema()["properties"]["importance"]
    )
    assert tool.parameters["properties"]["durability"]["enum"] == ["shared", "session"]
    for key in AUTHORITY_ARGUMENTS:
        with pytest.raises(InvalidInputError, match="bound to its namespace"):
            tool.prepare({"text": "x", key: "b"})
        with pytest.raises(InvalidInputError, match="bound to its namespace"):
            check_arguments(remember, {"content": "x", key: "b"})
    for bad in (
        {"text": "x", "importance": 2},
        {"text": "x", "importance": True},
        {"text": "x", "importance": 10**400},
        '{"text": "x", "importance": 1' + "0" * 400 + "}",
    ):
        with pytest.raises(InvalidInputError, match="importance"):
            tool.prepare(bad)
    assert store.list().total == 0
    store.close()


@pytest.mark.parametrize(
    "name", ["save_mémoire", "\u0663", "\uff53\uff41\uff56\uff45", "save\n", "a-b", ""]
)
def test_a_tool_name_no_provider_accepts_is_refused(name: str) -> None:
    """Function names are ASCII letters, digits and ``_`` (OpenAI and Anthropic refuse
    others at the request): a non-ASCII letter or digit is refused when the tool is made,
    not by the provider once a model is called."""
    store = SyncMemoryStore(InProcessClient(Keyspace()), "tool_names", HashingEmbedder())
    with pytest.raises(InvalidInputError, match="tool name") as caught:
        memory_tool(store, namespace="a", name=name)
    assert caught.value.field == "name"


@pytest.mark.parametrize("name", ["_", "save_memory", "S" * 64, "v2"])
def test_a_tool_name_of_ascii_letters_digits_and_underscores_is_accepted(name: str) -> None:
    store = SyncMemoryStore(InProcessClient(Keyspace()), "tool_names", HashingEmbedder())
    assert memory_tool(store, namespace="a", name=name).to_openai()["function"]["name"] == name


def _schema_valid(schema: dict[str, Any], arguments: dict[str, Any]) -> bool:
    import jsonschema

    return jsonschema.Draft202012Validator(schema).is_valid(arguments)


_LIMIT = 32 * 1024
_MAX_TTL = 10 * 365 * 24 * 3600
_UNKNOWN_ID = "m" * 128


@pytest.mark.integration
@pytest.mark.parametrize(
    ("tool", "arguments", "valid"),
    [
        ("remember", {"content": "x" * _LIMIT}, True),
        ("remember", {"content": "x" * (_LIMIT + 1)}, False),
        ("remember", {"content": "x", "ttl_seconds": _MAX_TTL}, True),
        ("remember", {"content": "x", "ttl_seconds": _MAX_TTL + 1}, False),
        ("recall", {"query": "x" * _LIMIT}, True),
        ("recall", {"query": "x" * (_LIMIT + 1)}, False),
        ("forget", {"id": _UNKNOWN_ID}, True),
        ("forget", {"id": "*"}, False),
        ("forget", {"id": "m" * 129}, False),
        ("feedback", {"id": "a:b", "value": 1}, False),
        ("complete", {"selection_id": "0" * 32, "score": 1}, True),
        ("complete", {"selection_id": "not-a-selection", "score": 1}, False),
    ],
)
async def test_the_mcp_schemas_accept_what_the_store_accepts(
    servers: _Servers, tool: str, arguments: dict[str, Any], valid: bool
) -> None:
    """A call valid under the published schema is accepted (an unknown id is "not
    found", a call it may make); one the store refuses is refused by the schema too."""
    from agent_memory.integrations.mcp import MemoryTools

    store = MemoryStore.from_url(
        servers.get("valkey-redisearch").url, name=f"ts_{uuid.uuid4().hex[:8]}",
        embed=HashingEmbedder(),
    )  # fmt: skip
    async with store:
        tools = MemoryTools(store, namespace="a")
        schema = next(d["inputSchema"] for d in tools.definitions() if d["name"] == tool)
        assert _schema_valid(schema, arguments) is valid
        try:
            await tools.call(tool, arguments)
        except NotFoundError:
            pass  # a well-formed id of no memory: a call the model may make
        except InvalidInputError:
            assert not valid, "the schema allowed a call the tool refused"
        else:
            assert valid, "the schema refused a call the tool accepted"
        if not valid:
            assert (await store.list(Scope(namespace="a"))).total == 0


def _labels(keys: int, values: int, chars: int = 1) -> dict[str, list[str]]:
    return {f"{k:0{chars}d}": [f"{v:0{chars}d}" for v in range(values)] for k in range(keys)}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("labels", "valid"),
    [
        (_labels(16, 16, chars=64), True),
        (_labels(17, 1), False),
        (_labels(1, 17), False),
        (_labels(1, 1, chars=65), False),
        ({"topic": [""]}, False),
        ({"": ["x"]}, False),
    ],
    ids=["at-the-limits", "17-keys", "17-values", "65-chars", "empty-value", "empty-key"],
)
async def test_the_memory_tool_schema_holds_the_label_limits(
    servers: _Servers, labels: dict[str, list[str]], valid: bool
) -> None:
    """The store takes at most 16 label keys of 16 values, each 1-64 characters: the
    schema said only "arrays of strings", so a model following it could be refused."""
    store = MemoryStore.from_url(
        servers.get("valkey-redisearch").url, name=f"ts_{uuid.uuid4().hex[:8]}",
        embed=HashingEmbedder(),
    )  # fmt: skip
    async with store:
        tool = memory_tool(store, namespace="a")
        arguments = {"text": "x", "labels": labels}
        assert _schema_valid(tool.parameters, arguments) is valid
        if valid:
            assert (await tool.run(arguments))["stored"]
        else:
            with pytest.raises(InvalidInputError, match="labels") as caught:
                await tool.run(arguments)
            assert caught.value.field.startswith("labels")
            assert (await store.list(Scope(namespace="a"))).total == 0
