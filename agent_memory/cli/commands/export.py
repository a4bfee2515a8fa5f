"""``agent-memory export``: the memories of a scope as JSON lines."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from agent_memory.cli.context import CliError, Invocation
from agent_memory.cli.options import AddParser, add_progress_option, add_scope_options
from agent_memory.cli.output import emit_json, out
from agent_memory.cli.progress import Progress, progress_enabled


def register(add_parser: AddParser) -> None:
    parser = add_parser(
        "export",
        help="write the memories of a scope as JSON lines (oldest first)",
        epilog="Without scope options the default namespace is exported, every session "
        "included. The output is lossless: 'import' restores the same ids.",
    )
    add_scope_options(parser, tags=False)
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout"
    )
    parser.add_argument(
        "--no-vectors",
        dest="vectors",
        action="store_false",
        help="leave the vectors out ('import --reembed' recomputes them)",
    )
    add_progress_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    to_file = args.output not in (None, "-")
    target = Path(args.output or "")
    # Checked before anything is read: "." and "/" have no name to write the partial
    # file beside, and os.replace onto a directory would fail only after the export.
    if to_file and (not target.name or target.is_dir()):
        raise CliError(f"cannot write {args.output!r}: it is a directory; name a file")
    partial = target.with_name(f".{target.name}.partial") if to_file else target
    if to_file and partial.is_dir():
        raise CliError(
            f"cannot write {args.output}: {str(partial)!r}, where it is written first, is "
            "a directory; remove it"
        )
    store = inv.store()
    progress = Progress("exporting", enabled=progress_enabled(args.progress))
    records = store.export(inv.scope(), include_vectors=args.vectors)
    if not to_file:
        _write(records, sys.stdout, progress)
        progress.finish()
        return 0
    created = False  # only a partial file this run created is removed
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            created = True
            _write(records, handle, progress)
        os.replace(partial, target)
        created = False
    except OSError as exc:
        raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    finally:
        progress.finish()
        if created:
            _remove(partial)
    if args.json:
        emit_json({"exported": progress.done, "output": str(target)})
    else:
        out(f"exported {progress.done} memories of '{args.name}' to {target}")
    return 0


def _remove(partial: Path) -> None:
    """Remove the partial file of a failed export; one that cannot be removed is
    reported (the export's own error follows), never a traceback."""
    try:
        partial.unlink(missing_ok=True)
    except OSError as exc:
        print(f"warning: cannot remove {partial}: {exc.strerror or exc}", file=sys.stderr)


def _write(records: Any, stream: TextIO, progress: Progress) -> None:
    for record in records:
        stream.write(json.dumps(record, separators=(",", ":")) + "\n")
        progress.advance()
    stream.flush()
