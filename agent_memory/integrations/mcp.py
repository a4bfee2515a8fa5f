"""A Model Context Protocol server exposing a memory store as tools, over stdio.

Run it as ``agent-memory mcp --url redis://localhost:6379 --name my_agent --namespace
team-a [--session S] [--embedder auto|minilm|hashing]`` (or ``python -m
agent_memory.integrations.mcp`` with the same options) and register that command with an MCP client
(Claude Desktop, an IDE, the ``mcp`` Python client). Needs the ``mcp`` extra
(``pip install 'agent-memory[mcp]'``, the official SDK, version 2).

Tools: ``remember``, ``recall``, ``forget``, ``list``, ``complete`` and ``feedback``.
The server is bound to ONE namespace (and optionally one session) chosen by whoever
starts it; the model never chooses them: no tool schema has a namespace, session or
scope field, and a call carrying any argument the schema does not declare is rejected
(with a specific message for ``namespace`` / ``session`` / ``scope`` attempts). Ids
given to ``forget`` and ``feedback`` are checked to belong to the bound namespace (and
session): a foreign id is reported as not found, exactly like an unknown one. ``complete``
applies only a selection whose recall ran in the bound scope (the store checks the
scope its receipt recorded, so this holds across restarts of the server and for
selections of another server bound to the same scope); any other is not applied,
exactly like an expired one.

The tool logic (:class:`MemoryTools`) does not need the ``mcp`` package; only
:func:`build_server`, :func:`serve_stdio`, :func:`serve_url` and :func:`run_stdio`
import it (raising ``CapabilityError`` naming the extra when it is missing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from agent_memory.errors import AgentMemoryError, InvalidInputError, NotFoundError
from agent_memory.integrations._optional import require
from agent_memory.integrations.mcp_tools import (
    AUTHORITY_ARGUMENTS,
    ToolSpec,
    check_arguments,
    tool_specs,
)
from agent_memory.schema.types import MemoryItem, Scope
from agent_memory.store.memory_store import MemoryStore

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

log = logging.getLogger(__name__)

SERVER_NAME = "agent-memory"


def _iso(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).isoformat()


def _item_dict(item: MemoryItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "content": item.content,
        "importance": item.importance,
        "tags": list(item.tags),
        "durability": item.durability,
        "created_at": _iso(item.created_at),
        "expires_at": _iso(item.expires_at),
    }


@dataclass
class MemoryTools:
    """The MCP tools over one :class:`MemoryStore`, bound to a namespace and session.

    Independent of the ``mcp`` package: :meth:`definitions` gives the tool list and
    :meth:`call` runs one call, so any transport can serve them.

    Args:
        store: the (async) memory store.
        namespace: the namespace every call is confined to (``None``: the default one).
        session_id: when set, recalls also see this session's memories and
            ``remember(durability="session")`` writes into it.
    """

    store: MemoryStore
    namespace: str | None
    session_id: str | None = None
    _specs: dict[str, ToolSpec] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        Scope(namespace=self.namespace, session_id=self.session_id)  # validates both
        limit = self.store.max_content_bytes
        specs = tool_specs(self.session_id is not None, max_text=limit)
        self._specs = {s.name: s for s in specs}

    @property
    def scope(self) -> Scope:
        """The bound scope (namespace and session)."""
        return Scope(namespace=self.namespace, session_id=self.session_id)

    def definitions(self) -> list[dict[str, Any]]:
        """``[{"name", "description", "inputSchema"}, ...]`` for every tool."""
        return [
            {"name": s.name, "description": s.description, "inputSchema": s.input_schema()}
            for s in self._specs.values()
        ]

    async def call(self, name: str, arguments: object) -> dict[str, Any]:
        """Validate and run one tool call; returns a JSON-serialisable result.

        Raises:
            InvalidInputError: unknown tool, or bad or unauthorised arguments.
            NotFoundError: ``forget`` / ``feedback`` of an id outside the bound scope or
                unknown.
            AgentMemoryError: any other failure of the store.
        """
        spec = self._specs.get(name)
        if spec is None:
            raise InvalidInputError(f"unknown tool {name[:64]!r}", field="name")
        args = check_arguments(spec, arguments, owner="memory server")
        handler: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] = getattr(
            self, f"_tool_{name}"
        )
        return await handler(args)

    async def _tool_remember(self, args: dict[str, Any]) -> dict[str, Any]:
        durability = args.get("durability", "shared")
        memory_id = await self.store.remember(
            args["content"],
            importance=float(args.get("importance", 0.5)),
            tags=args.get("tags", ()),
            ttl=args.get("ttl_seconds"),
            scope=self.scope if durability == "session" else Scope(namespace=self.namespace),
            durability=durability,
            source="mcp",
        )
        return {"id": memory_id}

    async def _tool_recall(self, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.store.recall(
            args["query"], scope=self.scope, k=int(args.get("k", 5)), tags=args.get("tags")
        )
        memories = [
            {**_item_dict(hit.item), "score": hit.score, "similarity": hit.similarity}
            for hit in result
        ]
        return {"selection_id": result.selection_id, "memories": memories}

    async def _tool_list(self, args: dict[str, Any]) -> dict[str, Any]:
        session = self.session_id if args.get("durability") == "session" else None
        page = await self.store.list(
            Scope(namespace=self.namespace, session_id=session),
            tags=args.get("tags"),
            limit=int(args.get("limit", 20)),
            offset=int(args.get("offset", 0)),
        )
        return {"total": page.total, "memories": [_item_dict(i) for i in page.items]}

    async def _owned(self, memory_id: str) -> MemoryItem:
        """The memory if it belongs to the bound namespace (and session), else NotFound."""
        item = await self.store.get(memory_id)
        if item is None or item.scope.namespace != self.namespace:
            raise NotFoundError(f"no memory {memory_id!r}")
        if item.durability == "session" and item.scope.session_id != self.session_id:
            raise NotFoundError(f"no memory {memory_id!r}")
        return item

    async def _tool_forget(self, args: dict[str, Any]) -> dict[str, Any]:
        item = await self._owned(args["id"])
        return {"forgotten": await self.store.forget(item.id)}

    async def _tool_complete(self, args: dict[str, Any]) -> dict[str, Any]:
        # Another scope's selection answers False, exactly like an unknown one.
        applied = await self.store.complete(
            args["selection_id"], score=float(args["score"]), scope=self.scope
        )
        return {"applied": applied}

    async def _tool_feedback(self, args: dict[str, Any]) -> dict[str, Any]:
        item = await self._owned(args["id"])
        value = args["value"]
        await self.store.feedback(item.id, value=None if value is None else float(value))
        return {"recorded": True}


def build_server(tools: MemoryTools) -> Server[Any]:
    """A low-level MCP ``Server`` serving ``tools`` (needs the ``mcp`` extra).

    Tool errors (bad arguments, unknown ids, store failures) are returned as tool
    results with ``isError`` set, so the model can read and correct them. An
    exception from outside the library's hierarchy (a defect) is logged with its
    traceback and answered the same way, as ``InternalError``.

    Raises:
        CapabilityError: the ``mcp`` package is not installed.
    """
    require("mcp", extra="mcp")
    import mcp.types as mt
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(
            tools=[
                mt.Tool(name=d["name"], description=d["description"], input_schema=d["inputSchema"])
                for d in tools.definitions()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        # The name is the model's text: logged quoted and cut, so a newline or an escape
        # sequence in it cannot forge or garble the operator's log lines.
        shown = repr(params.name[:64])
        try:
            result = await tools.call(params.name, params.arguments)
        except AgentMemoryError as exc:
            log.info("tool %s failed: %s", shown, type(exc).__name__)
            return _tool_error(type(exc).__name__, str(exc))
        except Exception as exc:
            # A defect, not a bad call: logged with its traceback for the operator, and
            # still answered as a tool error so the client's session goes on.
            log.exception("tool %s raised an unexpected %s", shown, type(exc).__name__)
            return _tool_error("InternalError", f"the memory server failed: {exc!r}")
        return mt.CallToolResult(
            content=[mt.TextContent(text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
        )

    def _tool_error(kind: str, message: str) -> mt.CallToolResult:
        return mt.CallToolResult(
            content=[mt.TextContent(text=f"{kind}: {message}")],
            structured_content={"error": kind, "message": message},
            is_error=True,
        )

    where = f"namespace {tools.namespace!r}" if tools.namespace else "the default namespace"
    return Server(
        SERVER_NAME,
        instructions=f"Long-term semantic memory ({where}). Recall before answering "
        "questions that may depend on earlier conversations; remember durable facts.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(tools: MemoryTools) -> None:
    """Serve ``tools`` over this process's stdin/stdout until the client disconnects.

    Raises:
        CapabilityError: the ``mcp`` package is not installed.
    """
    server = build_server(tools)
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def make_embedder(kind: str, dim: int | None = None) -> Callable[[str], Any]:
    """The embedder ``--embedder`` names (:func:`agent_memory.embedders.choose_embedder`,
    the rule of every ``agent-memory`` command).

    Raises:
        CapabilityError: ``minilm`` without the ``local`` extra.
    """
    from agent_memory.embedders import choose_embedder

    return choose_embedder(kind, dim)[0]


async def serve_url(
    url: str,
    *,
    name: str,
    embed: Callable[[str], Any],
    namespace: str | None,
    session_id: str | None = None,
) -> None:
    """Open the store of ``url``/``name``, check its index, serve it over stdio until
    the client disconnects, then close it.

    Raises:
        CapabilityError: the ``mcp`` package is not installed.
        IndexMismatchError: the store was written with an embedder of another width.
        ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
    """
    require("mcp", extra="mcp")
    store = MemoryStore.from_url(url, name=name, embed=embed)
    async with store:
        tools = MemoryTools(store, namespace=namespace, session_id=session_id)
        status = await store.ensure_index()
        log.info("serving %s (backend %s) over stdio", name, status.backend)
        await serve_stdio(tools)


def run_stdio(
    url: str,
    *,
    name: str,
    embed: Callable[[str], Any],
    namespace: str | None,
    session_id: str | None = None,
) -> None:
    """Blocking :func:`serve_url` (its own event loop), for command-line entry points.

    Raises:
        the errors of :func:`serve_url`.
    """
    asyncio.run(serve_url(url, name=name, embed=embed, namespace=namespace, session_id=session_id))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent_memory.integrations.mcp",
        description="Serve a memory store as Model Context Protocol tools over stdio, "
        "bound to one namespace (and optionally one session).",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("AGENT_MEMORY_URL"),
        help="server URL, e.g. redis://localhost:6379 (default: $AGENT_MEMORY_URL)",
    )
    parser.add_argument("--name", default="agent_memory", help="store name (key prefix)")
    parser.add_argument("--namespace", required=True, help="the only namespace tools can touch")
    parser.add_argument("--session", default=None, help="bind a session id as well")
    parser.add_argument(
        "--embedder",
        choices=("auto", "minilm", "hashing"),
        default="auto",
        help="must be the embedder that wrote the store (default: auto = minilm when the "
        "'local' extra is installed, else hashing)",
    )
    parser.add_argument("--dim", type=int, default=None, help="width of --embedder hashing")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m agent_memory.integrations.mcp``): parse the
    arguments and serve until stdin closes.

    Returns the process exit code (0 on a clean shutdown, 1 on a library error, 2 on
    bad arguments, 130 interrupted).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.url:
        parser.error("--url is required (or set AGENT_MEMORY_URL)")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    warnings.simplefilter("ignore", RuntimeWarning)  # logged by the library already
    try:
        run_stdio(
            args.url,
            name=args.name,
            embed=make_embedder(args.embedder, args.dim),
            namespace=args.namespace,
            session_id=args.session,
        )
    except KeyboardInterrupt:
        return 130
    except AgentMemoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


__all__ = [
    "AUTHORITY_ARGUMENTS",
    "MemoryTools",
    "ToolSpec",
    "build_server",
    "check_arguments",
    "main",
    "make_embedder",
    "run_stdio",
    "serve_stdio",
    "serve_url",
]

if __name__ == "__main__":
    sys.exit(main())
