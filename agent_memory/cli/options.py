"""Shared command-line options and argument types.

A subcommand module registers itself with ``register(add_parser)``: ``add_parser`` is
``subparsers.add_parser`` wrapped so that every subcommand also accepts the global
options after its name (``agent-memory list --json`` as well as
``agent-memory --json list``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from agent_memory.cli.context import EMBEDDERS, URL_ENV

AddParser = Callable[..., argparse.ArgumentParser]

DEFAULT_PATH = "./agent-memory-data"
DEFAULT_NAME = "agent_memory"


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an int >= 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def distance(text: str) -> float:
    """argparse type: a cosine distance in [0, 2]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be a cosine distance in [0, 2], got {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def add_global_options(parser: argparse.ArgumentParser, *, in_subcommand: bool) -> None:
    """``--url --path --name --embedder --dim --json``.

    On a subcommand the defaults are suppressed, so a value given before the
    subcommand name is not overwritten by the subcommand's default.
    """

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if in_subcommand else value

    group = parser.add_argument_group("global options")
    group.add_argument(
        "--url",
        default=default(None),
        help=f"server URL, e.g. redis://host:6379 (default: ${URL_ENV}, else the "
        "embedded server of --path, started and stopped around the command)",
    )
    group.add_argument(
        "--path",
        default=default(DEFAULT_PATH),
        help=f"data folder of the embedded server (default: {DEFAULT_PATH})",
    )
    group.add_argument(
        "--name", default=default(DEFAULT_NAME), help=f"store name (default: {DEFAULT_NAME})"
    )
    group.add_argument(
        "--embedder",
        choices=EMBEDDERS,
        default=default("auto"),
        help="embedder; must be the one that wrote the store (default: auto = minilm "
        "when the 'local' extra is installed, else hashing)",
    )
    group.add_argument(
        "--dim",
        type=positive_int,
        default=default(None),
        help="vector width of --embedder hashing (default 384)",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="machine-readable output (one JSON document)",
    )


def add_scope_options(parser: argparse.ArgumentParser, *, tags: bool = True) -> None:
    """``--namespace --agent --thread --session`` (and ``--tag``, repeatable)."""
    group = parser.add_argument_group("scope")
    group.add_argument("--namespace", help="namespace (default: the default namespace)")
    group.add_argument("--agent", help="agent id")
    group.add_argument("--thread", help="thread id")
    group.add_argument("--session", help="session id (session-scoped memories)")
    if tags:
        group.add_argument(
            "--tag",
            dest="tags",
            action="append",
            metavar="TAG",
            help="require this tag (repeatable: all must match)",
        )


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress`` (default: a progress line when stderr is a TTY)."""
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress line on stderr (default: only when stderr is a terminal)",
    )


def subcommand_adder(subparsers: Any) -> AddParser:
    """``subparsers.add_parser`` that also adds the global options to each subcommand."""

    def add_parser(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("description", kwargs.get("help"))
        parser: argparse.ArgumentParser = subparsers.add_parser(name, **kwargs)
        add_global_options(parser, in_subcommand=True)
        return parser

    return add_parser
