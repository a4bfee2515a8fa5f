"""Memory tools for a pydantic-ai agent (the ``pydantic-ai`` extra).

>>> agent = Agent(model, toolsets=[memory_toolset(store, scope=Scope(namespace="acme",
...               agent_id="assistant"))])

:func:`memory_toolset` turns a :class:`~agent_memory.MemoryStore` into a pydantic-ai
``FunctionToolset`` (``recall_memory``, ``save_memory``, ``forget_memory``) bound to the
scope the application gives; the model never chooses a namespace, agent, thread or
session (see :mod:`agent_memory.integrations._memory_tools` for the rules and the
schemas). Arguments the model got wrong fail in the tool's ``args_validator`` with
pydantic-ai's ``ModelRetry`` (the model is asked to correct them, within the toolset's
retry budget); an id that is unknown or outside the scope is reported with ``ToolFailed``
("not found": the model sees it and adapts, no retry consumed). Failures of the server
or the embedder raise :mod:`agent_memory.errors` exceptions and end the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic_ai import ModelRetry, RunContext, Tool, ToolFailed
from pydantic_ai.toolsets import FunctionToolset
from pydantic_core import SchemaValidator, core_schema

from agent_memory.errors import EmbedderError, InvalidInputError, NotFoundError
from agent_memory.integrations import _memory_tools
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

#: What a model's arguments must be before our checks see them: a JSON object.
#: ``Tool.from_schema`` validates with "any", so arguments such as ``[]`` reached the
#: ``**args`` call of the validator and failed the run with a ``TypeError``; this one
#: answers them with a validation error the model is asked to correct.
_OBJECT_ARGUMENTS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema()))


def _tool(calls: _memory_tools.MemoryToolCalls, kind: str, return_errors: bool) -> Tool[Any]:
    spec = calls.specs[kind]
    handler: Handler = {
        _memory_tools.RECALL: calls.recall,
        _memory_tools.SAVE: calls.save,
        _memory_tools.FORGET: calls.forget,
    }[kind]

    def validate(ctx: RunContext[Any], **args: Any) -> None:
        try:
            calls.check(kind, args)
        except InvalidInputError as exc:
            if not return_errors:
                raise
            raise ModelRetry(str(exc)) from None

    async def call(**args: Any) -> dict[str, Any]:
        try:
            return await handler(args)
        except InvalidInputError as exc:  # e.g. a value the store itself refuses
            if not return_errors or isinstance(exc, EmbedderError):
                raise  # an embedder outage is not the model's to retry
            raise ModelRetry(str(exc)) from None

    tool: Tool[Any] = Tool.from_schema(
        call, spec.name, spec.description, spec.input_schema(), args_validator=validate
    )
    tool.function_schema = dataclasses.replace(tool.function_schema, validator=_OBJECT_ARGUMENTS)
    return tool


def memory_toolset(
    store: MemoryStore,
    *,
    scope: Scope,
    include: Sequence[str] = _memory_tools.KINDS,
    names: Mapping[str, str] | None = None,
    return_errors: bool = True,
    max_retries: int | None = None,
    id: str | None = None,
) -> FunctionToolset[Any]:
    """A pydantic-ai toolset that lets an agent recall, save and forget memories in ``scope``.

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
        return_errors: a call the model got wrong (bad or authority-bearing arguments)
            raises ``ModelRetry`` and an id outside the scope ``ToolFailed``, so the model
            sees the error; ``False`` raises :class:`InvalidInputError` /
            :class:`NotFoundError` instead (failing the run). Failures of the server or
            the embedder always raise.
        max_retries: the toolset's retry budget for ``ModelRetry`` (``None``: the agent's).
        id: the toolset's id (pydantic-ai needs one for durable execution).

    Returns:
        A ``FunctionToolset`` of the chosen tools, in ``include`` order.

    Raises:
        InvalidInputError: not an async ``MemoryStore``, a ``scope`` that is not a
            ``Scope``, an unknown tool kind or a bad tool name.
    """
    _memory_tools.check_store_and_scope(
        store,
        scope,
        owner="memory_toolset",
        loop_note="pydantic-ai calls async tools on its event loop",
    )
    specs = _memory_tools.bound_specs(scope, include, names, strict=False)
    # An id unknown or outside the scope is told to the model (ToolFailed: no retry).
    not_found = ToolFailed if return_errors else NotFoundError
    calls = _memory_tools.MemoryToolCalls(store, scope, specs, not_found)
    return FunctionToolset(
        [_tool(calls, kind, return_errors) for kind in specs], max_retries=max_retries, id=id
    )


__all__ = ["memory_toolset"]
