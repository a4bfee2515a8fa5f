"""Entry point of the ``agent-memory`` console script."""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings

from agent_memory.errors import AgentMemoryError


def _server_url(args: argparse.Namespace) -> tuple[str, object]:
    if args.url:
        return args.url, None
    from agent_memory.embedded.server import open_embedded

    server = open_embedded(args.path)
    return server.url, server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agent-memory", description="Semantic memory for AI agents on Valkey."
    )
    parser.add_argument("--url", help="server URL (default: the embedded server in --path)")
    parser.add_argument("--path", default="./agent-memory-data", help="embedded data folder")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="remember a short history and recall from it")
    sub.add_parser("serve", help="run the embedded server in the foreground")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # The library logs every warning it raises; on a terminal once is enough.
    warnings.simplefilter("ignore", RuntimeWarning)
    try:
        url, server = _server_url(args)
        try:
            if args.command == "demo":
                from agent_memory.cli.demo import run_demo

                run_demo(url, as_json=args.json)
            elif args.command == "serve":
                print(f"serving {args.path} at {url} (Ctrl-C to stop)", flush=True)
                while True:
                    time.sleep(3600)
        finally:
            stop = getattr(server, "stop", None)
            if stop is not None:
                stop()
    except KeyboardInterrupt:
        return 130
    except AgentMemoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
