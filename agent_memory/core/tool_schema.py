"""Model-facing tool definitions and the checks of a model's arguments, written once.

Both tool surfaces use this module: :func:`agent_memory.memory_tool` (function calling in
the application's own agent loop) and the MCP server (:mod:`agent_memory.integrations.mcp`).
Pure: no store, no I/O. A model never chooses where a memory goes: schemas declare no
namespace, agent, thread or session field, and :func:`check_arguments` rejects any argument
a schema does not declare (with a specific message for authority-bearing ones) before it
checks types and bounds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.errors import InvalidInputError

#: Arguments that would choose a tenant, an agent, a thread or a session: always rejected.
AUTHORITY_ARGUMENTS = frozenset(
    {"namespace", "session", "session_id", "agent", "agent_id", "thread", "thread_id",
     "scope", "tenant", "user", "user_id", "store", "name"}
)  # fmt: skip

#: The ``importance`` argument of every tool that writes a memory.
IMPORTANCE: Mapping[str, Any] = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": "0 (trivial) to 1 (critical); default 0.5.",
}


#: A memory id as the store accepts it (``check_id``): 1-128 ASCII letters, digits, ``_``, ``-``.
MEMORY_ID: Mapping[str, Any] = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$"}

#: A recall's selection id as the store accepts it (32 lowercase hex digits).
SELECTION_ID: Mapping[str, Any] = {"type": "string", "pattern": "^[0-9a-f]{32}$"}


def text_schema(description: str, max_chars: int) -> dict[str, Any]:
    """A memory text or query: non-empty, at most ``max_chars`` characters.

    The store counts UTF-8 bytes (``max_content_bytes``); a JSON schema counts
    characters. A text of more characters than the byte limit is always over it, so
    ``maxLength`` refuses what is certainly too long; a shorter text of multi-byte
    characters may still be refused by the store, as the description says.
    """
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": max_chars,
        "description": f"{description} At most {max_chars} bytes of UTF-8.",
    }


def durability_schema(with_session: bool, description: str) -> dict[str, Any]:
    """The ``durability`` argument: ``session`` is offered only when a session is bound."""
    kinds = ["shared", "session"] if with_session else ["shared"]
    return {"type": "string", "enum": kinds, "description": description}


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


def parse_arguments(arguments: object) -> Mapping[str, Any]:
    """A model's arguments as a mapping: JSON text is decoded, ``None`` is no arguments.

    Raises:
        InvalidInputError: text that is not JSON (or nested too deep to decode), or
            anything but an object.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except RecursionError:
            raise InvalidInputError(
                "tool arguments are not JSON this library reads: nested too deep",
                field="arguments",
            ) from None
        except ValueError as exc:
            raise InvalidInputError(
                f"tool arguments are not JSON: {exc}", field="arguments"
            ) from exc
    if not isinstance(arguments, Mapping):
        raise InvalidInputError("tool arguments must be a JSON object", field="arguments")
    return arguments


def check_arguments(spec: ToolSpec, arguments: object, *, owner: str = "tool") -> dict[str, Any]:
    """Validate a model's arguments against a tool spec; returns a plain dict.

    Args:
        spec: the tool's definition.
        arguments: a mapping, JSON text or ``None``.
        owner: names what is bound in the authority message ("memory server", "tool").

    Raises:
        InvalidInputError: not an object, a missing or unknown argument (always for
            namespace / agent / session / scope), or a value of the wrong type or range.
    """
    arguments = parse_arguments(arguments)
    for key in arguments:
        if key in AUTHORITY_ARGUMENTS:
            raise InvalidInputError(
                f"argument {key!r} is not accepted: this {owner} is bound to its namespace "
                "and session by the application; they cannot be chosen by the model",
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
        _check_value(str(key), spec.properties[key], value)
    return dict(arguments)


def _check_value(name: str, schema: Mapping[str, Any], value: Any) -> None:
    kinds = schema.get("type")
    allowed = kinds if isinstance(kinds, list) else [kinds]
    if value is None:
        if "null" not in allowed:
            raise InvalidInputError(f"argument {name!r} must not be null", field=name)
        return
    kind = next((k for k in allowed if k != "null"), None)
    if kind == "string":
        _check_string(name, schema, value)
    elif kind in ("number", "integer"):
        _check_number(name, schema, value, integer=kind == "integer")
    elif kind == "array":
        _check_array(name, schema, value)
    elif kind == "object":
        _check_object(name, schema, value)


def _check_array(name: str, schema: Mapping[str, Any], value: Any) -> None:
    """A list of non-empty strings within the schema's ``maxItems`` and its items'
    ``maxLength``."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidInputError(
            f"argument {name!r} must be a list of non-empty strings", field=name
        )
    most = schema.get("maxItems")
    if most is not None and len(value) > most:
        raise InvalidInputError(
            f"argument {name!r} must have at most {most} items, got {len(value)}", field=name
        )
    longest = schema.get("items", {}).get("maxLength")
    if longest is not None and any(len(v) > longest for v in value):
        raise InvalidInputError(
            f"argument {name!r} must hold strings of at most {longest} characters", field=name
        )


def _check_string(name: str, schema: Mapping[str, Any], value: Any) -> None:
    if not isinstance(value, str) or len(value) < schema.get("minLength", 0):
        raise InvalidInputError(f"argument {name!r} must be a non-empty string", field=name)
    longest = schema.get("maxLength")
    if longest is not None and len(value) > longest:
        raise InvalidInputError(
            f"argument {name!r} must be at most {longest} characters, got {len(value)}",
            field=name,
        )
    pattern = schema.get("pattern")
    if pattern is not None and not re.search(pattern, value):
        raise InvalidInputError(
            f"argument {name!r} must match {pattern}, got {value[:60]!r}", field=name
        )
    if "enum" in schema and value not in schema["enum"]:
        raise InvalidInputError(f"argument {name!r} must be one of {schema['enum']}", field=name)


def _check_number(name: str, schema: Mapping[str, Any], value: Any, *, integer: bool) -> None:
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"argument {name!r} must be {kind}", field=name)
    if integer and not (isinstance(value, int) or float(value).is_integer()):
        raise InvalidInputError(f"argument {name!r} must be an integer", field=name)
    try:
        finite = math.isfinite(float(value))
    except OverflowError:  # an int beyond any float
        finite = False
    if not finite:
        raise InvalidInputError(f"argument {name!r} must be a finite number", field=name)
    low, high = schema.get("minimum"), schema.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        if low is not None and high is not None:
            bounds = f"in [{low}, {high}]"
        else:
            bounds = f">= {low}" if low is not None else f"<= {high}"
        raise InvalidInputError(f"argument {name!r} must be {bounds}", field=name)
    if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
        raise InvalidInputError(
            f"argument {name!r} must be > {schema['exclusiveMinimum']}", field=name
        )


def _check_object(name: str, schema: Mapping[str, Any], value: Any) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError(f"argument {name!r} must be an object", field=name)
    most = schema.get("maxProperties")
    if most is not None and len(value) > most:
        raise InvalidInputError(
            f"argument {name!r} must have at most {most} keys, got {len(value)}", field=name
        )
    keys = schema.get("propertyNames", {})
    shortest, longest = keys.get("minLength", 0), keys.get("maxLength")
    for key in value:
        if len(key) < shortest or (longest is not None and len(key) > longest):
            most_chars = "" if longest is None else f" and at most {longest}"
            raise InvalidInputError(
                f"argument {name!r} has a key of {len(key)} characters "
                f"(keys have at least {shortest}{most_chars})",
                field=name,
            )
    names = keys.get("enum")
    unknown = sorted(set(value) - set(names)) if names is not None else []
    if unknown:
        raise InvalidInputError(
            f"argument {name!r} has key(s) {unknown} outside {sorted(names)}", field=name
        )
    members = schema.get("additionalProperties")
    if isinstance(members, Mapping):
        for key, member in value.items():
            _check_value(f"{name}.{key}", members, member)
