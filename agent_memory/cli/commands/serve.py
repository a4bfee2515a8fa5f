"""``agent-memory serve``: run the embedded server of ``--path`` in the foreground."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from types import FrameType

from agent_memory.cli.context import CliError, Invocation, UsageError
from agent_memory.cli.options import AddParser
from agent_memory.cli.output import out


def register(add_parser: AddParser) -> None:
    parser = add_parser(
        "serve", help="run the embedded server of --path in the foreground (Ctrl-C stops it)"
    )
    parser.add_argument(
        "--port",
        type=_port,
        help="loopback port to serve on, e.g. 6379 (default: a free one); then "
        "redis://127.0.0.1:PORT reaches it",
    )
    parser.set_defaults(run=run)


def _port(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {raw!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1..65535, got {value}")
    return value


class _Terminated(Exception):
    """SIGTERM: a normal stop (exit 0); Ctrl-C exits 130."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Terminated  # unwinds through Invocation.close(), which stops the server


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.url:
        raise UsageError("serve runs the embedded server of --path; it takes no --url")
    # Installed first: a SIGTERM while the server starts or while the line below is
    # written (a supervisor that stops it as soon as it reads the line) stops it too.
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        server = inv.open_embedded(port=args.port)
        url = server.url
        if not server.owned:
            raise CliError(f"{args.path} is already served at {url} by another process")
        if args.json:  # one line, so that a script can read it while the server runs
            out(json.dumps({"path": args.path, "url": url}, separators=(",", ":")))
        else:
            out(f"serving {args.path} at {url} (Ctrl-C to stop)")
        sys.stdout.flush()
        while True:
            time.sleep(3600)
    except _Terminated:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
