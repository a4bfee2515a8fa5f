"""``agent-memory demo``: remember a short history, recall from it, consolidate it."""

from __future__ import annotations

import argparse

from agent_memory.cli.context import Invocation
from agent_memory.cli.options import DEFAULT_NAME, AddParser
from agent_memory.cli.output import out


def register(add_parser: AddParser) -> None:
    parser = add_parser("demo", help="remember a short history and recall from it")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    from agent_memory.cli.demo import run_demo

    run_demo(
        inv.url, name=args.name, as_json=args.json, out=out, embedder=args.embedder, dim=args.dim
    )
    if not args.json:
        where = f" --name {args.name}" if args.name != DEFAULT_NAME else ""
        out(f"\nlook around: agent-memory{where} list --namespace demo")
    return 0
