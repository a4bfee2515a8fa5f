"""Memory tools for an OpenAI Agents SDK agent (the ``openai-agents`` extra).

>>> agent = Agent(name="assistant", tools=memory_tools(store, scope=Scope(namespace="acme",
...               agent_id="assistant", session_id=conversation_id)))

:func:`memory_tools` turns a :class:`~agent_memory.MemoryStore` into ``agents.FunctionTool``
objects (``recall_memory``, ``save_memory``, ``forget_memory``) bound to the scope the
application gives; the model never chooses a namespace, agent, thread or session (see
:mod:`.tool_specs` for the rules and the strict schemas). Each tool returns JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext

from agent_memory.core.tool_schema import ToolSpec
from agent_memory.errors import (
    EmbedderError,
    InvalidInputError,
    NotFoundError,
)
from agent_memory.integrations.openai_agents import tool_specs
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.sync_store import SyncMemoryStore

Handler = Callable[[str], Awaitable[dict[str, Any]]]


class _Tools:
    """The handlers of one store and one bound scope."""

    def __init__(self, store: MemoryStore, scope: Scope, specs: Mapping[str, ToolSpec]) -> None:
        self.store = store
        self.scope = scope
        self.specs = specs

    async def recall(self, arguments: str) -> dict[str, Any]:
        args = tool_specs.recall_arguments(self.specs[tool_specs.RECALL], self.scope, arguments)
        result = await self.store.recall(args.pop("query"), **args)
        return tool_specs.recall_output(result)

    async def save(self, arguments: str) -> dict[str, Any]:
        args = tool_specs.save_arguments(self.specs[tool_specs.SAVE], self.scope, arguments)
        return {"id": await self.store.remember(**args), "stored": True}

    async def forget(self, arguments: str) -> dict[str, Any]:
        memory_id = tool_specs.forget_argument(self.specs[tool_specs.FORGET], arguments)
        item = await self.store.get(memory_id)
        if item is None or not tool_specs.owns(self.scope, item):
            raise NotFoundError(f"no memory {memory_id!r}")  # a foreign id looks unknown
        return {"id": memory_id, "forgotten": await self.store.forget(memory_id)}


def _invoker(
    handler: Handler, return_errors: bool
) -> Callable[[ToolContext[Any], str], Awaitable[str]]:
    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
        try:
            result = await handler(arguments)
        except (InvalidInputError, NotFoundError) as exc:
            if not return_errors or isinstance(exc, EmbedderError):
                raise
            return json.dumps({"error": str(exc)}, ensure_ascii=False)
        return json.dumps(result, ensure_ascii=False)

    return on_invoke_tool


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise InvalidInputError(
            f"tool name must be 1-64 letters, digits, '_' or '-', got {name!r}", field="names"
        )
    if len(name) > 64 or not name.isascii():
        raise InvalidInputError(f"tool name {name!r} is not a valid function name", field="names")
    return name


def memory_tools(
    store: MemoryStore,
    *,
    scope: Scope,
    include: Sequence[str] = tool_specs.KINDS,
    names: Mapping[str, str] | None = None,
    return_errors: bool = True,
) -> list[FunctionTool]:
    """Function tools that let an agent recall, save and forget memories in ``scope``.

    Args:
        store: the (async) memory store (``ensure_index()`` done by the application).
        scope: where every save lands and what every recall and forget may see: its
            ``namespace`` (tenant), ``agent_id`` and ``thread_id`` (when set) and
            ``session_id`` (when set, recalls also see that session's memories and a
            save may be ``durability="session"``). Use ``Scope()`` for the default
            namespace with no agent, thread or session.
        include: which tools, among ``"recall"``, ``"save"`` and ``"forget"``.
        names: function names the model sees, by kind (default ``recall_memory``,
            ``save_memory``, ``forget_memory``).
        return_errors: a call the model got wrong (bad or authority-bearing arguments,
            an id outside the scope) returns ``{"error": ...}`` to the model, so it can
            correct itself; ``False`` raises :class:`InvalidInputError` /
            :class:`NotFoundError` instead (failing the run). Failures of the server or
            the embedder always raise.

    Returns:
        ``agents.FunctionTool`` objects with strict JSON schemas, in ``include`` order.

    Raises:
        InvalidInputError: not an async ``MemoryStore``, a ``scope`` that is not a
            ``Scope``, an unknown tool kind or a bad tool name.
    """
    if isinstance(store, SyncMemoryStore):
        raise InvalidInputError(
            "memory_tools needs the async MemoryStore: the Agents SDK calls tools on its "
            "event loop",
            field="store",
        )
    if not isinstance(store, MemoryStore):
        raise InvalidInputError("memory_tools needs a MemoryStore", field="store")
    if not isinstance(scope, Scope):
        raise InvalidInputError("scope must be an agent_memory.Scope", field="scope")
    if isinstance(include, str):
        include = (include,)
    chosen = {**tool_specs.DEFAULT_NAMES, **(names or {})}
    for field, kinds in (("include", list(include)), ("names", list(chosen))):
        unknown = sorted({str(k) for k in kinds} - set(tool_specs.KINDS))
        if unknown:
            raise InvalidInputError(
                f"{field} has unknown tool kinds {unknown} (known: {tool_specs.KINDS})",
                field=field,
            )
    specs = {kind: tool_specs.spec(kind, _check_name(chosen[kind]), scope) for kind in include}
    if len({s.name for s in specs.values()}) != len(specs):
        raise InvalidInputError("two memory tools would share one name", field="names")
    tools = _Tools(store, scope, specs)
    handlers: dict[str, Handler] = {
        tool_specs.RECALL: tools.recall,
        tool_specs.SAVE: tools.save,
        tool_specs.FORGET: tools.forget,
    }
    return [
        FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=tool_specs.strict_schema(spec),
            on_invoke_tool=_invoker(handlers[kind], return_errors),
            strict_json_schema=True,
        )
        for kind, spec in specs.items()
    ]


__all__ = ["memory_tools"]
