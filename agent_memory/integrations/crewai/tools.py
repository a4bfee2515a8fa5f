"""Memory tools for CrewAI agents (the ``crewai`` extra).

>>> agent = Agent(role="assistant", ..., tools=memory_tools(sync_store,
...               scope=Scope(namespace="acme", agent_id="assistant")))

:func:`memory_tools` turns a :class:`~agent_memory.SyncMemoryStore` into CrewAI ``Tool``
objects (``recall_memory``, ``save_memory``, ``forget_memory``) bound to the scope the
application gives; the model never chooses a namespace, agent, thread or session (see
:mod:`agent_memory.integrations._memory_tools` for the rules and the strict schemas,
which are what CrewAI shows the model). CrewAI runs tools synchronously, so the bodies
are the blocking twins of ``_memory_tools.MemoryToolCalls``. Each tool returns JSON
text; a call the model got wrong returns CrewAI's ``ToolFailure`` (reason
``INVALID_INPUT``; an id unknown or outside the scope: ``TOOL_REPORTED``, code
``not_found``), so the agent sees the message and CrewAI's ``tool_failure_policy``
decides what else happens. Failures of the server or the embedder raise
:mod:`agent_memory.errors` exceptions. CrewAI's text (ReAct) tool calling drops arguments
a schema does not declare before a tool sees them; its native function calling passes
them, and these tools refuse them. Either way the bound scope is the only one written.

These tools write plain memories of the scope; CrewAI's ``Memory`` (through
:class:`~.storage.AgentMemoryStorage`) sees only the records it saved itself, while a
recall by these tools also finds the ``Memory``'s records of the same scope.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pydantic

from agent_memory.errors import EmbedderError, InvalidInputError, NotFoundError
from agent_memory.integrations import _memory_tools
from agent_memory.integrations._optional import require
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.sync_store import SyncMemoryStore

_failure = require("crewai.tools.tool_failure", extra="crewai")
_base_tool = require("crewai.tools.base_tool", extra="crewai")

Handler = Callable[[Mapping[str, Any]], dict[str, Any]]


class BlockingToolCalls:
    """The three tools' bodies on a blocking store, for one bound scope: the twin of
    :class:`~agent_memory.integrations._memory_tools.MemoryToolCalls` (same checks, same
    outputs, same errors)."""

    def __init__(self, store: SyncMemoryStore, scope: Scope, specs: Mapping[str, Any]) -> None:
        self.store = store
        self.scope = scope
        self.specs = specs

    def recall(self, arguments: object) -> dict[str, Any]:
        """Recall in the bound scope; returns ``_memory_tools.recall_output``.

        Raises:
            InvalidInputError: bad arguments. AgentMemoryError: a failure of the server
                or the embedder.
        """
        args = _memory_tools.recall_arguments(
            self.specs[_memory_tools.RECALL], self.scope, arguments
        )
        return _memory_tools.recall_output(self.store.recall(args.pop("query"), **args))

    def save(self, arguments: object) -> dict[str, Any]:
        """Save in the bound scope; returns ``{"id": ..., "stored": True}``.

        Raises:
            InvalidInputError: bad arguments. AgentMemoryError: a failure of the server
                or the embedder.
        """
        args = _memory_tools.save_arguments(self.specs[_memory_tools.SAVE], self.scope, arguments)
        return {"id": self.store.remember(**args), "stored": True}

    def forget(self, arguments: object) -> dict[str, Any]:
        """Forget a memory of the bound scope; returns ``{"id": ..., "forgotten": ...}``.

        Raises:
            InvalidInputError: bad arguments. NotFoundError: an id that is unknown or
                outside the scope. AgentMemoryError: a failure of the server.
        """
        memory_id = _memory_tools.forget_argument(self.specs[_memory_tools.FORGET], arguments)
        item = self.store.get(memory_id)
        if item is None or not _memory_tools.owns(self.scope, item):
            raise NotFoundError(f"no memory {memory_id!r}")  # a foreign id looks unknown
        return {"id": memory_id, "forgotten": self.store.forget(memory_id)}


def arguments_model(spec: Any) -> type[pydantic.BaseModel]:
    """The ``args_schema`` CrewAI shows the model: the tool's strict JSON schema, as it
    is; every argument is let through to the tool, which checks it itself."""
    schema = _memory_tools.strict_schema(spec)

    def shown(json_schema: dict[str, Any]) -> None:
        json_schema.clear()
        json_schema.update(copy.deepcopy(schema))

    model: type[pydantic.BaseModel] = pydantic.create_model(
        f"{spec.name}_arguments",
        __config__=pydantic.ConfigDict(extra="allow", json_schema_extra=shown),
    )
    return model


def _body(handler: Handler) -> Callable[..., Any]:
    def run(**arguments: Any) -> Any:
        try:
            return json.dumps(handler(arguments), ensure_ascii=False)
        except InvalidInputError as exc:
            if isinstance(exc, EmbedderError):
                raise
            return _failure.ToolFailure(
                message=str(exc),
                reason=_failure.ToolFailureReason.INVALID_INPUT,
                code="invalid_argument",
            )
        except NotFoundError as exc:
            return _failure.ToolFailure(
                message=str(exc), reason=_failure.ToolFailureReason.TOOL_REPORTED, code="not_found"
            )

    return run


def memory_tools(
    store: SyncMemoryStore,
    *,
    scope: Scope,
    include: Sequence[str] = _memory_tools.KINDS,
    names: Mapping[str, str] | None = None,
) -> list[Any]:
    """CrewAI tools that let an agent recall, save and forget memories in ``scope``.

    Args:
        store: the blocking memory store (``ensure_index()`` done by the application).
        scope: where every save lands and what every recall and forget may see: its
            ``namespace`` (tenant), ``agent_id`` and ``thread_id`` (when set) and
            ``session_id`` (when set, recalls also see that session's memories and a
            save may be ``durability="session"``).
        include: which tools, among ``"recall"``, ``"save"`` and ``"forget"``.
        names: function names the model sees, by kind (default ``recall_memory``,
            ``save_memory``, ``forget_memory``).

    Returns:
        ``crewai.tools.base_tool.Tool`` objects, in ``include`` order.

    Raises:
        InvalidInputError: not a ``SyncMemoryStore`` (an asyncio ``MemoryStore``
            included), a ``scope`` that is not a ``Scope``, an unknown tool kind or a
            bad tool name.
    """
    if isinstance(store, MemoryStore) or not isinstance(store, SyncMemoryStore):
        raise InvalidInputError(
            "memory_tools needs a SyncMemoryStore: CrewAI runs tools synchronously",
            field="store",
        )
    if not isinstance(scope, Scope):
        raise InvalidInputError("scope must be an agent_memory.Scope", field="scope")
    specs = _memory_tools.bound_specs(scope, include, names, strict=True)
    calls = BlockingToolCalls(store, scope, specs)
    handlers: dict[str, Handler] = {
        _memory_tools.RECALL: calls.recall,
        _memory_tools.SAVE: calls.save,
        _memory_tools.FORGET: calls.forget,
    }
    return [
        _base_tool.Tool(
            name=spec.name,
            description=spec.description,
            func=_body(handlers[kind]),
            args_schema=arguments_model(spec),
        )
        for kind, spec in specs.items()
    ]


__all__ = ["BlockingToolCalls", "arguments_model", "memory_tools"]
