"""The MCP tool definitions of the memory store.

Pure: no ``mcp`` import. The shared schema pieces and the argument checks live in
:mod:`agent_memory.core.tool_schema` (the application-side ``memory_tool`` uses the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_memory.core.checks import MAX_TTL_SECONDS
from agent_memory.core.tool_schema import (
    AUTHORITY_ARGUMENTS,
    IMPORTANCE,
    MEMORY_ID,
    SELECTION_ID,
    ToolSpec,
    check_arguments,
    durability_schema,
    text_schema,
)
from agent_memory.store.memory_store import DEFAULT_MAX_CONTENT_BYTES

MAX_RECALL_K = 50
MAX_LIST_LIMIT = 100


_TAGS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 256},
    "maxItems": 64,
}


def tool_specs(with_session: bool, *, max_text: int = DEFAULT_MAX_CONTENT_BYTES) -> list[ToolSpec]:
    """The MCP server's tools; ``durability`` is declared only when a session is bound.

    Args:
        with_session: whether a session is bound.
        max_text: the store's ``max_content_bytes``, the most a content or query holds.
    """
    durability = durability_schema(
        True,
        "'shared' (default): durable, visible to every conversation of this workspace. "
        "'session': visible only in the current session.",
    )
    remember_props: dict[str, Mapping[str, Any]] = {
        "content": text_schema("The fact to remember.", max_text),
        "importance": IMPORTANCE,
        "tags": {**_TAGS, "description": "Optional keywords for later filtering."},
        "ttl_seconds": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_TTL_SECONDS,
            "description": "Forget automatically after this many seconds (at most 10 years).",
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
                "query": text_schema("What to look for.", max_text),
                "k": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL_K},
                "tags": {**_TAGS, "description": "Only memories carrying all these tags."},
            },
            ("query",),
        ),
        ToolSpec(
            "forget",
            "Delete a memory by id.",
            {"id": MEMORY_ID},
            ("id",),
        ),
        ToolSpec("list", "List stored memories, newest first, with the total.", list_props),
        ToolSpec(
            "complete",
            "Report how useful the memories of one recall were (score 0 = useless, "
            "0.5 = neutral, 1 = exactly what was needed). Returns applied=false when the "
            "selection was already completed or has expired.",
            {
                "selection_id": SELECTION_ID,
                "score": {"type": "number", "minimum": 0, "maximum": 1},
            },
            ("selection_id", "score"),
        ),
        ToolSpec(
            "feedback",
            "Mark one memory as useful (up to 1) or misleading (down to -1); null clears the mark.",
            {
                "id": MEMORY_ID,
                "value": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
            },
            ("id", "value"),
        ),
    ]


__all__ = ["AUTHORITY_ARGUMENTS", "MAX_LIST_LIMIT", "MAX_RECALL_K", "ToolSpec", "check_arguments",
           "tool_specs"]  # fmt: skip
