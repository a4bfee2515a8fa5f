"""One set of tool rules for the application's memory tool and the MCP server."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory import SyncMemoryStore, memory_tool
from agent_memory.backends.inprocess import InProcessClient, Keyspace
from agent_memory.core.tool_schema import (
    AUTHORITY_ARGUMENTS,
    ToolSpec,
    check_arguments,
    parse_arguments,
)
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import InvalidInputError
from agent_memory.integrations.mcp_tools import tool_specs

SPEC = ToolSpec(
    "t",
    "test",
    {
        "text": {"type": "string", "minLength": 1},
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
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
        ({"text": "x", "labels": ["topic"]}, "must be an object"),
        ({"text": "x", "labels": {"colour": ["red"]}}, r"outside \['topic'\]"),
        ({"text": "x", "labels": {"topic": "deploys"}}, "labels.topic"),
    ],
)
def test_each_bad_argument_is_named(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        check_arguments(SPEC, arguments)


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
    for bad in ({"text": "x", "importance": 2}, {"text": "x", "importance": True}):
        with pytest.raises(InvalidInputError, match="importance"):
            tool.prepare(bad)
    assert store.list().total == 0
    store.close()
