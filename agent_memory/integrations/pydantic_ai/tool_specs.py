"""The memory tools' schemas and argument checks, bound to one scope (pure: no I/O).

The rules are :func:`agent_memory.memory_tool`'s: the application binds the scope
(namespace, agent, thread, session) when it makes the tools; no schema has a field that
could choose one, any argument a schema does not declare is rejected (with a specific
message for ``namespace`` / ``agent_id`` / ``session_id`` / ``scope`` ...), and
``durability="session"`` is offered only when a session is bound. Optional arguments are
optional in the schema (pydantic-ai makes a schema strict itself where a provider wants
it) and also accept ``null`` for "the default".
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from agent_memory.core.tool_schema import IMPORTANCE, ToolSpec, check_arguments, durability_schema
from agent_memory.errors import InvalidInputError
from agent_memory.schema.types import MemoryItem, RecallResult, Scope

MAX_RECALL_K = 20
DEFAULT_RECALL_K = 5

RECALL, SAVE, FORGET = "recall", "save", "forget"
KINDS = (RECALL, SAVE, FORGET)
DEFAULT_NAMES = {RECALL: "recall_memory", SAVE: "save_memory", FORGET: "forget_memory"}


def spec(kind: str, name: str, scope: Scope) -> ToolSpec:
    """The definition of tool ``kind`` (``recall``, ``save`` or ``forget``).

    Raises:
        InvalidInputError: an unknown kind.
    """
    if kind == RECALL:
        return ToolSpec(
            name,
            "Search long-term memory for facts, preferences or decisions relevant to a "
            "query. Returns the best matches first, each with its id.",
            {
                "query": {"type": "string", "minLength": 1, "description": "What to look for."},
                "k": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": MAX_RECALL_K,
                    "description": f"How many memories at most (default {DEFAULT_RECALL_K}).",
                },
            },
            ("query",),
        )
    if kind == SAVE:
        properties: dict[str, Mapping[str, Any]] = {
            "text": {
                "type": "string",
                "minLength": 1,
                "description": "What to remember: one short, self-contained statement.",
            },
            "importance": {**IMPORTANCE, "type": ["number", "null"]},
        }
        if scope.session_id is not None:
            properties["durability"] = durability_schema(
                True, "'shared' memories outlive this conversation; 'session' ones do not."
            )
        return ToolSpec(
            name,
            "Save a fact, preference or decision worth remembering in long-term memory.",
            properties,
            ("text",),
        )
    if kind == FORGET:
        return ToolSpec(
            name,
            "Delete one memory by the id a recall returned (when it is wrong or outdated).",
            {"id": {"type": "string", "minLength": 1, "description": "The memory's id."}},
            ("id",),
        )
    raise InvalidInputError(f"unknown memory tool {kind!r} (one of {KINDS})", field="include")


def _text(args: Mapping[str, Any], key: str) -> str:
    value = str(args[key])
    if not value.strip():
        raise InvalidInputError(f"argument {key!r} must not be blank", field=key)
    return value


def save_arguments(tool: ToolSpec, scope: Scope, arguments: object) -> dict[str, Any]:
    """``MemoryStore.remember`` keyword arguments for a model's ``save`` call.

    Raises:
        InvalidInputError: unknown or authority-bearing arguments, bad types or bounds.
    """
    args = check_arguments(tool, arguments, owner="memory tool")
    importance = args.get("importance")
    return {
        "content": _text(args, "text"),
        "importance": 0.5 if importance is None else float(importance),
        "durability": args.get("durability") or "shared",
        "scope": scope,
        "source": "tool",
    }


def recall_arguments(tool: ToolSpec, scope: Scope, arguments: object) -> dict[str, Any]:
    """``MemoryStore.recall`` keyword arguments for a model's ``recall`` call.

    Raises:
        InvalidInputError: unknown or authority-bearing arguments, bad types or bounds.
    """
    args = check_arguments(tool, arguments, owner="memory tool")
    k = args.get("k")
    return {
        "query": _text(args, "query"),
        "k": DEFAULT_RECALL_K if k is None else int(k),
        "scope": scope,
    }


def forget_argument(tool: ToolSpec, arguments: object) -> str:
    """The memory id of a model's ``forget`` call.

    Raises:
        InvalidInputError: unknown or authority-bearing arguments, a bad id.
    """
    return _text(check_arguments(tool, arguments, owner="memory tool"), "id")


def owns(scope: Scope, item: MemoryItem) -> bool:
    """Whether ``item`` is one the tools bound to ``scope`` may see (and so forget): same
    namespace; same agent and thread when those are bound; a session memory only of the
    bound session."""
    found = item.scope
    if found.namespace != scope.namespace:
        return False
    if scope.agent_id is not None and found.agent_id != scope.agent_id:
        return False
    if scope.thread_id is not None and found.thread_id != scope.thread_id:
        return False
    return item.durability != "session" or found.session_id == scope.session_id


def _iso(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).isoformat()


def recall_output(result: RecallResult) -> dict[str, Any]:
    """What the model reads back from a recall (JSON-ready)."""
    memories = [
        {
            "id": hit.item.id,
            "content": hit.item.content,
            "score": round(hit.score, 4),
            "importance": hit.item.importance,
            "durability": hit.item.durability,
            "created_at": _iso(hit.item.created_at),
        }
        for hit in result
    ]
    return {"selection_id": result.selection_id, "memories": memories}


__all__ = [
    "DEFAULT_NAMES",
    "DEFAULT_RECALL_K",
    "KINDS",
    "MAX_RECALL_K",
    "forget_argument",
    "owns",
    "recall_arguments",
    "recall_output",
    "save_arguments",
    "spec",
]
