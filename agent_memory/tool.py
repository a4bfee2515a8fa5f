"""``memory_tool``: let a model save memories, within bounds set by the application.

The namespace, agent and session are bound when the tool is made: the model's
arguments can only carry the text, durability, labels and importance, and any attempt
to name a tenant, agent, thread or session is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, overload

from agent_memory.core.tool_schema import (
    IMPORTANCE,
    ToolSpec,
    check_arguments,
    durability_schema,
    parse_arguments,
    text_schema,
)
from agent_memory.errors import InvalidInputError
from agent_memory.schema.labels import MAX_KEYS, MAX_LABEL_CHARS, MAX_VALUES_PER_KEY
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.sync_store import SyncMemoryStore

# What OpenAI and Anthropic accept as a function name (without their '-').
_TOOL_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")

_DESCRIPTION = (
    "Save a fact, preference or decision worth remembering in long-term memory. "
    "Use short, self-contained statements."
)


class _ToolCore:
    """What the sync and async tools share: schema and argument validation."""

    def __init__(
        self,
        store: MemoryStore | SyncMemoryStore,
        *,
        namespace: str | None,
        agent_id: str | None,
        session_id: str | None,
        name: str,
    ) -> None:
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise InvalidInputError(
                f"tool name must be 1-64 ASCII letters, digits or '_', got {name!r:.80}",
                field="name",
            )
        self.store = store
        self.scope = Scope(namespace=namespace, agent_id=agent_id, session_id=session_id)
        self.name = name
        self.description = _DESCRIPTION
        self.spec = self._spec()

    def _spec(self) -> ToolSpec:
        # The store's label limits (schema.labels), so a call valid under the schema is
        # one the store accepts: keys and values of 1-64 characters, at most 16 keys and
        # 16 values a key (or the policy's fewer).
        settings = self.store._ctx.settings
        policy = settings.label_policy
        per_key = MAX_VALUES_PER_KEY if policy is None else policy.max_values_per_key
        bounded = {"minLength": 1, "maxLength": MAX_LABEL_CHARS}
        labels: dict[str, Any] = {
            "type": "object",
            "description": 'Optional labels, e.g. {"topic": ["deploys"]}.',
            "maxProperties": MAX_KEYS,
            "propertyNames": dict(bounded),
            "additionalProperties": {
                "type": "array",
                "items": {"type": "string", **bounded},
                "maxItems": per_key,
            },
        }
        if policy is not None and policy.allowed_keys is not None:
            labels["propertyNames"]["enum"] = sorted(policy.allowed_keys)
        durability = durability_schema(
            self.scope.session_id is not None,
            "'shared' memories outlive the session; 'session' ones do not.",
        )
        properties = {
            "text": text_schema("What to remember.", settings.max_content_bytes),
            "durability": durability,
            "labels": labels,
            "importance": IMPORTANCE,
        }
        return ToolSpec(self.name, self.description, properties, ("text",))

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments a model may pass."""
        return self.spec.input_schema()

    def to_openai(self) -> dict[str, Any]:
        """Definition for OpenAI function calling (``tools=[...]``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name, "description": self.description,
                "parameters": self.parameters,
            },
        }  # fmt: skip

    def to_anthropic(self) -> dict[str, Any]:
        """Definition for Anthropic tool use (``tools=[...]``)."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def prepare(self, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Validate a model's arguments into ``remember`` keyword arguments.

        Raises:
            InvalidInputError: unknown or authority-bearing arguments, bad types or
                bounds, a session write without a bound session.
        """
        arguments = parse_arguments(arguments)
        if arguments.get("durability") == "session" and self.scope.session_id is None:
            raise InvalidInputError(
                "this tool has no session bound; durability must be 'shared'", field="durability"
            )
        checked = check_arguments(self.spec, arguments, owner="memory tool")
        return {
            "content": checked["text"],
            "importance": checked.get("importance", 0.5),
            "labels": checked.get("labels"),
            "durability": checked.get("durability", "shared"),
            "scope": self.scope,
            "source": "tool",
        }


class MemoryTool(_ToolCore):
    """The memory tool of an async :class:`MemoryStore` (``await tool.run(args)``)."""

    async def run(self, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Perform the validated write; returns ``{"id": ..., "stored": True}``.

        Raises:
            InvalidInputError: rejected arguments (nothing is written).
        """
        store = self.store
        assert isinstance(store, MemoryStore)
        memory_id = await store.remember(**self.prepare(arguments))
        return {"id": memory_id, "stored": True}


class SyncMemoryTool(_ToolCore):
    """The memory tool of a :class:`SyncMemoryStore` (``tool.run(args)``)."""

    def run(self, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Perform the validated write; returns ``{"id": ..., "stored": True}``.

        Raises:
            InvalidInputError: rejected arguments (nothing is written).
        """
        store = self.store
        assert isinstance(store, SyncMemoryStore)
        memory_id = store.remember(**self.prepare(arguments))
        return {"id": memory_id, "stored": True}


@overload
def memory_tool(
    store: MemoryStore,
    *,
    session_id: str | None = None,
    namespace: str | None = None,
    agent_id: str | None = None,
    name: str = "save_memory",
) -> MemoryTool: ...
@overload
def memory_tool(
    store: SyncMemoryStore,
    *,
    session_id: str | None = None,
    namespace: str | None = None,
    agent_id: str | None = None,
    name: str = "save_memory",
) -> SyncMemoryTool: ...
def memory_tool(
    store: MemoryStore | SyncMemoryStore,
    *,
    session_id: str | None = None,
    namespace: str | None = None,
    agent_id: str | None = None,
    name: str = "save_memory",
) -> MemoryTool | SyncMemoryTool:
    """A tool definition that lets a model write memories into a bound scope.

    Args:
        store: the store to write to (async store -> async ``run``).
        session_id: binds session writes (``durability="session"`` is offered only then).
        namespace, agent_id: the tenant and agent every write lands in.
        name: the function name the model sees (1-64 ASCII letters, digits or ``_``).

    Raises:
        InvalidInputError: not a store, bad name or scope values.
    """
    if isinstance(store, MemoryStore):
        return MemoryTool(
            store, namespace=namespace, agent_id=agent_id, session_id=session_id, name=name
        )
    if isinstance(store, SyncMemoryStore):
        return SyncMemoryTool(
            store, namespace=namespace, agent_id=agent_id, session_id=session_id, name=name
        )
    raise InvalidInputError("memory_tool needs a MemoryStore or SyncMemoryStore", field="store")
