"""Memory tools for an OpenAI Agents SDK agent (the ``openai-agents`` extra).

>>> agent = Agent(name="assistant", tools=memory_tools(store, scope=Scope(namespace="acme",
...               agent_id="assistant", session_id=conversation_id)))

:func:`memory_tools` turns a :class:`~agent_memory.MemoryStore` into ``agents.FunctionTool``
objects (``recall_memory``, ``save_memory``, ``forget_memory``) bound to the scope the
application gives; the model never chooses a namespace, agent, thread or session (see
:mod:`agent_memory.integrations._memory_tools` for the rules and the strict schemas).
Each tool returns JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext

from agent_memory.errors import EmbedderError, InvalidInputError, NotFoundError
from agent_memory.integrations import _memory_tools
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore

Handler = Callable[[str], Awaitable[dict[str, Any]]]


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


def memory_tools(
    store: MemoryStore,
    *,
    scope: Scope,
    include: Sequence[str] = _memory_tools.KINDS,
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
    _memory_tools.check_store_and_scope(
        store, scope, owner="memory_tools", loop_note="the Agents SDK calls tools on its event loop"
    )
    specs = _memory_tools.bound_specs(scope, include, names, strict=True)
    calls = _memory_tools.MemoryToolCalls(store, scope, specs)
    handlers: dict[str, Handler] = {
        _memory_tools.RECALL: calls.recall,
        _memory_tools.SAVE: calls.save,
        _memory_tools.FORGET: calls.forget,
    }
    return [
        FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=_memory_tools.strict_schema(spec),
            on_invoke_tool=_invoker(handlers[kind], return_errors),
            strict_json_schema=True,
        )
        for kind, spec in specs.items()
    ]


__all__ = ["memory_tools"]
