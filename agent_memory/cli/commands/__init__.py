"""The subcommands of ``agent-memory``, one module each.

Each module defines ``register(add_parser)``: it creates its parser with
``add_parser(name, help=...)`` (which already carries the global options) and sets
``run`` with ``parser.set_defaults(run=run)``, where ``run(args, invocation) -> int``
returns the exit code. To add a subcommand, write a module and list it here.
"""

from __future__ import annotations

from types import ModuleType

from agent_memory.cli.commands import (
    adopt,
    demo,
    export,
    import_,
    list_,
    mcp,
    prune,
    recall,
    serve,
    stats,
)

COMMANDS: tuple[ModuleType, ...] = (
    demo, stats, list_, recall, export, import_, prune, adopt, serve, mcp,
)  # fmt: skip

__all__ = [
    "COMMANDS",
    "adopt",
    "demo",
    "export",
    "import_",
    "list_",
    "mcp",
    "prune",
    "recall",
    "serve",
    "stats",
]
