"""The memory tools every agent framework adapter offers, written once (no framework).

The rules are :func:`agent_memory.memory_tool`'s: the application binds the scope
(namespace, agent, thread, session) when it makes the tools; no schema has a field that
could choose one, any argument a schema does not declare is rejected (with a specific
message for ``namespace`` / ``agent_id`` / ``session_id`` / ``scope`` ...), and
``durability="session"`` is offered only when a session is bound.

Schemas come in two forms. *Strict* ones are what OpenAI function calling wants: every
property is listed in ``required`` (:func:`strict_schema`) and optional ones accept
``null``, meaning "the default". The others (pydantic-ai, which makes a schema strict
itself where a provider wants it) leave optional arguments optional; they accept
``null`` too.

The adapters add only what their framework needs: how a tool is declared, and how a
call the model got wrong is reported back to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from agent_memory.core.tool_schema import IMPORTANCE, ToolSpec, check_arguments, durability_schema
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.schema.types import MemoryItem, RecallResult, Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.sync_store import SyncMemoryStore

MAX_RECALL_K = 20
DEFAULT_RECALL_K = 5

RECALL, SAVE, FORGET = "recall", "save", "forget"
KINDS = (RECALL, SAVE, FORGET)
DEFAULT_NAMES = {RECALL: "recall_memory", SAVE: "save_memory", FORGET: "forget_memory"}

#: The longest function name model providers accept.
MAX_NAME_CHARS = 64


def _string(description: str, *, strict: bool) -> dict[str, Any]:
    # Strict mode's schema subset has no ``minLength``; the blank check of the
    # arguments (:func:`_text`) refuses an empty text either way.
    bound = {} if strict else {"minLength": 1}
    return {"type": "string", **bound, "description": description}


def spec(kind: str, name: str, scope: Scope, *, strict: bool) -> ToolSpec:
    """The definition of tool ``kind`` (``recall``, ``save`` or ``forget``).

    ``required`` lists only what a call must carry; with ``strict`` the model is shown
    :func:`strict_schema` instead, so the descriptions say what ``null`` means.

    Raises:
        InvalidInputError: an unknown kind.
    """
    default = "null: " if strict else "default "
    if kind == RECALL:
        return ToolSpec(
            name,
            "Search long-term memory for facts, preferences or decisions relevant to a "
            "query. Returns the best matches first, each with its id.",
            {
                "query": _string("What to look for.", strict=strict),
                "k": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": MAX_RECALL_K,
                    "description": f"How many memories at most ({default}{DEFAULT_RECALL_K}).",
                },
            },
            ("query",),
        )
    if kind == SAVE:
        properties: dict[str, Mapping[str, Any]] = {
            "text": _string(
                "What to remember: one short, self-contained statement.", strict=strict
            ),
            "importance": {
                **IMPORTANCE,
                "type": ["number", "null"],
                "description": f"0 (trivial) to 1 (critical); {default}0.5.",
            },
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
            {"id": _string("The memory's id.", strict=strict)},
            ("id",),
        )
    raise InvalidInputError(f"unknown memory tool {kind!r} (one of {KINDS})", field="include")


def strict_schema(tool: ToolSpec) -> dict[str, Any]:
    """The schema shown to the model in strict mode: every property required, no other
    allowed."""
    schema = tool.input_schema()
    schema["required"] = list(tool.properties)
    return schema


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise InvalidInputError(
            f"tool name must be 1-64 letters, digits, '_' or '-', got {name!r}", field="names"
        )
    if len(name) > MAX_NAME_CHARS or not name.isascii():
        raise InvalidInputError(f"tool name {name!r} is not a valid function name", field="names")
    return name


def check_store_and_scope(store: object, scope: object, *, owner: str, loop_note: str) -> None:
    """Check what the application binds the tools to.

    Args:
        store: must be the async ``MemoryStore``.
        scope: must be a ``Scope``.
        owner: the adapter's function name, for messages.
        loop_note: why the framework needs the async store (it calls tools on its loop).

    Raises:
        InvalidInputError: a ``SyncMemoryStore`` or anything but a ``MemoryStore``, or a
            ``scope`` that is not a ``Scope``.
    """
    if isinstance(store, SyncMemoryStore):
        raise InvalidInputError(f"{owner} needs the async MemoryStore: {loop_note}", field="store")
    if not isinstance(store, MemoryStore):
        raise InvalidInputError(f"{owner} needs a MemoryStore", field="store")
    if not isinstance(scope, Scope):
        raise InvalidInputError("scope must be an agent_memory.Scope", field="scope")


def bound_specs(
    scope: Scope, include: Sequence[str], names: Mapping[str, str] | None, *, strict: bool
) -> dict[str, ToolSpec]:
    """The definitions of the chosen tools, by kind, in ``include`` order.

    Args:
        scope: the bound scope (a session offers ``durability="session"``).
        include: which kinds (a single ``str`` is one kind).
        names: function names by kind, over :data:`DEFAULT_NAMES`.
        strict: the strict form of the schemas (see the module doc).

    Raises:
        InvalidInputError: an unknown kind in ``include`` or ``names``, a name that is
            not a valid function name, or two tools with one name.
    """
    if isinstance(include, str):
        include = (include,)
    if not isinstance(include, Sequence):
        raise InvalidInputError(
            f"include must be a tool kind or a sequence of them, got {type(include).__name__}",
            field="include",
        )
    if names is not None and not isinstance(names, Mapping):
        raise InvalidInputError(
            f"names must be a mapping of tool kind to name, got {type(names).__name__}",
            field="names",
        )
    chosen = {**DEFAULT_NAMES, **(names or {})}
    for field, kinds in (("include", list(include)), ("names", list(chosen))):
        unknown = sorted({str(k) for k in kinds} - set(KINDS))
        if unknown:
            raise InvalidInputError(
                f"{field} has unknown tool kinds {unknown} (known: {KINDS})", field=field
            )
    specs = {kind: spec(kind, _check_name(chosen[kind]), scope, strict=strict) for kind in include}
    if len({s.name for s in specs.values()}) != len(specs):
        raise InvalidInputError("two memory tools would share one name", field="names")
    return specs


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


def iso_time(epoch_ms: int | None) -> str | None:
    """An epoch in milliseconds as ISO 8601 UTC text (``None`` stays ``None``)."""
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
            "created_at": iso_time(hit.item.created_at),
        }
        for hit in result
    ]
    return {"selection_id": result.selection_id, "memories": memories}


class MemoryToolCalls:
    """The three tools' bodies for one async store and one bound scope.

    Args:
        store: the async memory store.
        scope: the bound scope.
        specs: the tools' definitions by kind (from :func:`bound_specs`).
        not_found: builds what :meth:`forget` raises for an id that is unknown or outside
            the scope (a framework may want its own "tell the model" exception).
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Scope,
        specs: Mapping[str, ToolSpec],
        not_found: Callable[[str], Exception] = NotFoundError,
    ) -> None:
        self.store = store
        self.scope = scope
        self.specs = specs
        self.not_found = not_found

    def check(self, kind: str, arguments: object) -> object:
        """Validate a model's arguments for tool ``kind`` without calling the store.

        Raises:
            InvalidInputError: as :func:`recall_arguments`, :func:`save_arguments` and
                :func:`forget_argument`.
        """
        spec = self.specs[kind]
        if kind == RECALL:
            return recall_arguments(spec, self.scope, arguments)
        if kind == SAVE:
            return save_arguments(spec, self.scope, arguments)
        return forget_argument(spec, arguments)

    async def recall(self, arguments: object) -> dict[str, Any]:
        """Recall in the bound scope; returns :func:`recall_output`.

        Raises:
            InvalidInputError: bad arguments. AgentMemoryError: a failure of the server
                or the embedder.
        """
        args = recall_arguments(self.specs[RECALL], self.scope, arguments)
        result = await self.store.recall(args.pop("query"), **args)
        return recall_output(result)

    async def save(self, arguments: object) -> dict[str, Any]:
        """Save in the bound scope; returns ``{"id": ..., "stored": True}``.

        Raises:
            InvalidInputError: bad arguments. AgentMemoryError: a failure of the server
                or the embedder.
        """
        args = save_arguments(self.specs[SAVE], self.scope, arguments)
        return {"id": await self.store.remember(**args), "stored": True}

    async def forget(self, arguments: object) -> dict[str, Any]:
        """Forget a memory of the bound scope; returns ``{"id": ..., "forgotten": ...}``.

        Raises:
            InvalidInputError: bad arguments. ``not_found(message)``: an id that is
                unknown or outside the scope. AgentMemoryError: a failure of the server.
        """
        memory_id = forget_argument(self.specs[FORGET], arguments)
        item = await self.store.get(memory_id)
        if item is None or not owns(self.scope, item):
            raise self.not_found(f"no memory {memory_id!r}")  # a foreign id looks unknown
        return {"id": memory_id, "forgotten": await self.store.forget(memory_id)}


__all__ = [
    "DEFAULT_NAMES",
    "DEFAULT_RECALL_K",
    "FORGET",
    "KINDS",
    "MAX_RECALL_K",
    "RECALL",
    "SAVE",
    "MemoryToolCalls",
    "bound_specs",
    "check_store_and_scope",
    "forget_argument",
    "iso_time",
    "owns",
    "recall_arguments",
    "recall_output",
    "save_arguments",
    "spec",
    "strict_schema",
]
