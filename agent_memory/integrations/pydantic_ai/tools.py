"""Memory tools for a pydantic-ai agent (the ``pydantic-ai`` extra).

>>> agent = Agent(model, toolsets=[memory_toolset(store, scope=Scope(namespace="acme",
...               agent_id="assistant"))])

:func:`memory_toolset` turns a :class:`~agent_memory.MemoryStore` into a pydantic-ai
``FunctionToolset`` (``recall_memory``, ``save_memory``, ``forget_memory``) bound to the
scope the application gives; the model never chooses a namespace, agent, thread or
session (see :mod:`.tool_specs` for the rules and the schemas). Arguments the model got
wrong fail in the tool's ``args_validator`` with pydantic-ai's ``ModelRetry`` (the model
is asked to correct them, within the toolset's retry budget); an id that is unknown or
outside the scope is reported with ``ToolFailed`` ("not found": the model sees it and
adapts, no retry consumed). Failures of the server or the embedder raise
:mod:`agent_memory.errors` exceptions and end the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic_ai import ModelRetry, RunContext, Tool, ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from agent_memory.core.tool_schema import ToolSpec
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.integrations.pydantic_ai import tool_specs
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.sync_store import SyncMemoryStore

Check = Callable[[dict[str, Any]], object]
Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class _Tools:
    """The checks and handlers of one store and one bound scope."""

    def __init__(
        self,
        store: MemoryStore,
        scope: Scope,
        specs: Mapping[str, ToolSpec],
        return_errors: bool,
    ) -> None:
        self.store = store
        self.scope = scope
        self.specs = specs
        self.return_errors = return_errors

    def check(self, kind: str, args: dict[str, Any]) -> object:
        spec = self.specs[kind]
        if kind == tool_specs.RECALL:
            return tool_specs.recall_arguments(spec, self.scope, args)
        if kind == tool_specs.SAVE:
            return tool_specs.save_arguments(spec, self.scope, args)
        return tool_specs.forget_argument(spec, args)

    async def recall(self, args: dict[str, Any]) -> dict[str, Any]:
        checked = tool_specs.recall_arguments(self.specs[tool_specs.RECALL], self.scope, args)
        result = await self.store.recall(checked.pop("query"), **checked)
        return tool_specs.recall_output(result)

    async def save(self, args: dict[str, Any]) -> dict[str, Any]:
        checked = tool_specs.save_arguments(self.specs[tool_specs.SAVE], self.scope, args)
        return {"id": await self.store.remember(**checked), "stored": True}

    async def forget(self, args: dict[str, Any]) -> dict[str, Any]:
        memory_id = tool_specs.forget_argument(self.specs[tool_specs.FORGET], args)
        item = await self.store.get(memory_id)
        if item is None or not tool_specs.owns(self.scope, item):
            message = f"no memory {memory_id!r}"  # a foreign id looks unknown
            if self.return_errors:
                raise ToolFailed(message)
            raise NotFoundError(message)
        return {"id": memory_id, "forgotten": await self.store.forget(memory_id)}

    def tool(self, kind: str, handler: Handler) -> Tool[Any]:
        spec = self.specs[kind]

        def validate(ctx: RunContext[Any], **args: Any) -> None:
            try:
                self.check(kind, args)
            except InvalidInputError as exc:
                if not self.return_errors:
                    raise
                raise ModelRetry(str(exc)) from None

        async def call(**args: Any) -> dict[str, Any]:
            try:
                return await handler(args)
            except InvalidInputError as exc:  # e.g. a value the store itself refuses
                if not self.return_errors:
                    raise
                raise ModelRetry(str(exc)) from None

        tool: Tool[Any] = Tool.from_schema(
            call, spec.name, spec.description, spec.input_schema(), args_validator=validate
        )
        return tool


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise InvalidInputError(
            f"tool name must be 1-64 letters, digits, '_' or '-', got {name!r}", field="names"
        )
    if len(name) > 64 or not name.isascii():
        raise InvalidInputError(f"tool name {name!r} is not a valid function name", field="names")
    return name


def memory_toolset(
    store: MemoryStore,
    *,
    scope: Scope,
    include: Sequence[str] = tool_specs.KINDS,
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
    if isinstance(store, SyncMemoryStore):
        raise InvalidInputError(
            "memory_toolset needs the async MemoryStore: pydantic-ai calls async tools on its "
            "event loop",
            field="store",
        )
    if not isinstance(store, MemoryStore):
        raise InvalidInputError("memory_toolset needs a MemoryStore", field="store")
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
    tools = _Tools(store, scope, specs, return_errors)
    handlers: dict[str, Handler] = {
        tool_specs.RECALL: tools.recall,
        tool_specs.SAVE: tools.save,
        tool_specs.FORGET: tools.forget,
    }
    return FunctionToolset(
        [tools.tool(kind, handlers[kind]) for kind in specs], max_retries=max_retries, id=id
    )


__all__ = ["memory_toolset"]
