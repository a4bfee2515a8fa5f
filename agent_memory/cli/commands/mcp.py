"""``agent-memory mcp``: serve the store as Model Context Protocol tools over stdio."""

from __future__ import annotations

import argparse

from agent_memory.cli.context import Invocation, make_embedder
from agent_memory.cli.options import AddParser


def register(add_parser: AddParser) -> None:
    parser = add_parser(
        "mcp",
        help="serve memory tools to an MCP client over stdio (needs the 'mcp' extra)",
    )
    parser.add_argument(
        "--namespace", required=True, help="the only namespace the tools can read or write"
    )
    parser.add_argument("--session", help="bind a session id too (session memories and recalls)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    from agent_memory.integrations.mcp import run_stdio

    embed, _label = make_embedder(args.embedder, args.dim)
    run_stdio(
        inv.url, name=args.name, embed=embed, namespace=args.namespace, session_id=args.session
    )
    return 0
