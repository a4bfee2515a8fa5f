"""The MCP tool definitions of the memory store and the checks of their arguments.

Pure: no ``mcp`` import. The JSON schemas never contain a namespace, session or scope
field; :func:`check_arguments` rejects any argument a schema does not declare (with a
specific message for authority-bearing ones) and validates types and bounds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.errors import InvalidInputError

#: Arguments that would choose a tenant or a session: always rejected.
AUTHORITY_ARGUMENTS = frozenset(
    {"namespace", "session", "session_id", "scope", "tenant", "agent_id", "thread_id"}
)
MAX_RECALL_K = 50
MAX_LIST_LIMIT = 100


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its name, description and JSON-schema properties."""

    name: str
    description: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...] = ()

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments (``additionalProperties: false``)."""
        return {
            "type": "object",
            "properties": {k: dict(v) for k, v in self.properties.items()},
            "required": list(self.required),
            "additionalProperties": False,
        }


_TAGS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 256},
    "maxItems": 64,
}


def tool_specs(with_session: bool) -> list[ToolSpec]:
    durability = {
        "type": "string",
        "enum": ["shared", "session"],
        "description": "'shared' (default): durable, visible to every conversation of this "
        "workspace. 'session': visible only in the current session.",
    }
    remember_props: dict[str, Mapping[str, Any]] = {
        "content": {"type": "string", "minLength": 1, "description": "The fact to remember."},
        "importance": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "0 (trivial) to 1 (critical); default 0.5.",
        },
        "tags": {**_TAGS, "description": "Optional keywords for later filtering."},
        "ttl_seconds": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Forget automatically after this many seconds.",
        },
    }
    list_props: dict[str, Mapping[str, Any]] = {
        "tags": {**_TAGS, "description": "Only memories carrying all these tags."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIST_LIMIT},
        "offset": {"type": "integer", "minimum": 0},
    }
    if with_session:
        remember_props["durability"] = durability
        list_props["durability"] = {
            **durability,
            "description": "List the shared memories (default) or this session's.",
        }
    return [
        ToolSpec(
            "remember",
            "Store a memory (a fact, preference or decision worth keeping) for later recall. "
            "Returns its id.",
            remember_props,
            ("content",),
        ),
        ToolSpec(
            "recall",
            "Find the memories most relevant to a query, best first. Returns them with a "
            "selection_id; call `complete` with that id once you know how useful they were.",
            {
                "query": {"type": "string", "minLength": 1, "description": "What to look for."},
                "k": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL_K},
                "tags": {**_TAGS, "description": "Only memories carrying all these tags."},
            },
            ("query",),
        ),
        ToolSpec(
            "forget",
            "Delete a memory by id.",
            {"id": {"type": "string", "minLength": 1}},
            ("id",),
        ),
        ToolSpec("list", "List stored memories, newest first, with the total.", list_props),
        ToolSpec(
            "complete",
            "Report how useful the memories of one recall were (score 0 = useless, "
            "0.5 = neutral, 1 = exactly what was needed). Returns applied=false when the "
            "selection was already completed or has expired.",
            {
                "selection_id": {"type": "string", "minLength": 1},
                "score": {"type": "number", "minimum": 0, "maximum": 1},
            },
            ("selection_id", "score"),
        ),
        ToolSpec(
            "feedback",
            "Mark one memory as useful (up to 1) or misleading (down to -1); null clears the mark.",
            {
                "id": {"type": "string", "minLength": 1},
                "value": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
            },
            ("id", "value"),
        ),
    ]


def _check_value(name: str, schema: Mapping[str, Any], value: Any) -> None:
    kinds = schema.get("type")
    allowed = kinds if isinstance(kinds, list) else [kinds]
    if value is None:
        if "null" not in allowed:
            raise InvalidInputError(f"argument {name!r} must not be null", field=name)
        return
    kind = next((k for k in allowed if k != "null"), None)
    if kind == "string":
        if not isinstance(value, str) or len(value) < schema.get("minLength", 0):
            raise InvalidInputError(f"argument {name!r} must be a non-empty string", field=name)
        if "enum" in schema and value not in schema["enum"]:
            raise InvalidInputError(
                f"argument {name!r} must be one of {schema['enum']}", field=name
            )
    elif kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidInputError(f"argument {name!r} must be a {kind}", field=name)
        if kind == "integer" and not (isinstance(value, int) or float(value).is_integer()):
            raise InvalidInputError(f"argument {name!r} must be an integer", field=name)
        if not math.isfinite(value):
            raise InvalidInputError(f"argument {name!r} must be finite", field=name)
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise InvalidInputError(f"argument {name!r} must be in [{low}, {high}]", field=name)
        if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
            raise InvalidInputError(
                f"argument {name!r} must be > {schema['exclusiveMinimum']}", field=name
            )
    elif kind == "array" and (
        not isinstance(value, list) or not all(isinstance(v, str) and v for v in value)
    ):
        raise InvalidInputError(
            f"argument {name!r} must be a list of non-empty strings", field=name
        )


def check_arguments(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """Validate a model's arguments against a tool spec; returns a plain dict.

    Raises:
        InvalidInputError: not an object, a missing or unknown argument (always for
            namespace / session / scope), or a value of the wrong type or range.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise InvalidInputError("tool arguments must be a JSON object", field="arguments")
    for key in arguments:
        if key in AUTHORITY_ARGUMENTS:
            raise InvalidInputError(
                f"argument {key!r} is not accepted: this memory server is bound to its "
                "namespace and session by its operator, tools cannot choose them",
                field=str(key),
            )
        if key not in spec.properties:
            raise InvalidInputError(
                f"unknown argument {key!r} for tool {spec.name!r} "
                f"(accepted: {', '.join(sorted(spec.properties))})",
                field=str(key),
            )
    for key in spec.required:
        if key not in arguments:
            raise InvalidInputError(
                f"missing argument {key!r} for tool {spec.name!r}", field=str(key)
            )
    for key, value in arguments.items():
        _check_value(key, spec.properties[key], value)
    return dict(arguments)
