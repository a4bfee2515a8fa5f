"""Entry point of the ``agent-memory`` console script.

Exit codes: 0 success, 1 an error of the library or of the input (``error: ...`` on
stderr, never a traceback), 2 a usage error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Sequence

from agent_memory.cli.commands import COMMANDS
from agent_memory.cli.context import CliError, Invocation, UsageError
from agent_memory.cli.options import add_global_options, subcommand_adder
from agent_memory.cli.output import tolerate_unencodable_output
from agent_memory.core.url_secrets import redact
from agent_memory.errors import AgentMemoryError, IndexMismatchError

EPILOG = (
    "The embedder must be the one that wrote the store (same model and width): "
    "a store of another width fails with IndexMismatchError."
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand in :data:`agent_memory.cli.commands.COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="agent-memory",
        description="Semantic memory for AI agents on Valkey.",
        epilog=EPILOG,
    )
    add_global_options(parser, in_subcommand=False)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_parser = subcommand_adder(subparsers)
    for module in COMMANDS:
        module.register(add_parser)
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.dim is not None and args.embedder != "hashing":
        parser.error("--dim applies to --embedder hashing only")


def _error(message: str, url: str | None) -> None:
    print(f"error: {redact(message, url)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    tolerate_unencodable_output()
    parser = build_parser()
    args = parser.parse_args(argv)
    _check(parser, args)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    with warnings.catch_warnings():
        # The library logs every warning it raises; on a terminal once is enough.
        warnings.simplefilter("ignore", RuntimeWarning)
        return _run(parser, args)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    invocation = Invocation(args)
    secret_url = invocation.explicit_url
    try:
        with invocation:
            code: int = args.run(args, invocation)
            return code
    except KeyboardInterrupt:
        return 130
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        _error(str(exc), secret_url)
        return 2
    except IndexMismatchError as exc:
        _error(str(exc), secret_url)
        print(
            f"hint: open the store with the embedder that wrote it (this run used "
            f"{invocation.embedder_label or args.embedder}); see --embedder and --dim",
            file=sys.stderr,
        )
        return 1
    except (AgentMemoryError, CliError) as exc:
        _error(str(exc), secret_url)
        return 1
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, without a second error at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
