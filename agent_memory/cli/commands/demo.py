"""``agent-memory demo``: remember a short history, recall from it, consolidate it."""

from __future__ import annotations

import argparse

from agent_memory.cli.context import Invocation
from agent_memory.cli.options import AddParser
from agent_memory.cli.output import out


def register(add_parser: AddParser) -> None:
    parser = add_parser("demo", help="remember a short history and recall from it")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    from agent_memory.cli.demo import DEMO_NAME, run_demo

    run_demo(inv.url, as_json=args.json, out=out)
    if not args.json:
        out(f"\nlook around: agent-memory --name {DEMO_NAME} list --namespace demo")
    return 0
