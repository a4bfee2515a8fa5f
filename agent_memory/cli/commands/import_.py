"""``agent-memory import``: restore JSON lines written by ``export``."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Iterable
from typing import Any

from agent_memory.cli.context import CliError, Invocation
from agent_memory.cli.options import AddParser, add_progress_option, positive_int
from agent_memory.cli.output import emit_json, out
from agent_memory.cli.progress import Progress, progress_enabled
from agent_memory.errors import AgentMemoryError, InvalidInputError

DEFAULT_BATCH = 500


def register(add_parser: AddParser) -> None:
    parser = add_parser(
        "import",
        help="restore memories from JSON lines written by 'export' (same ids)",
        epilog="Every line is parsed before anything is written; records are then "
        "imported in batches (each validated before it is written). Importing is "
        "idempotent: re-running the same input rewrites the same ids.",
    )
    parser.add_argument("-i", "--input", metavar="FILE", help="read FILE instead of stdin")
    parser.add_argument(
        "--reembed",
        action="store_true",
        help="recompute the vectors with --embedder (moving to another model)",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=DEFAULT_BATCH,
        help=f"records per write (default {DEFAULT_BATCH})",
    )
    add_progress_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    records = _read(args.input)
    store = inv.store()
    progress = Progress(
        "importing", enabled=progress_enabled(args.progress), total=len(records), every=1
    )
    written: list[str] = []  # one id per record written, as import_records returns them
    try:
        for start in range(0, len(records), args.batch_size):
            batch = records[start : start + args.batch_size]
            try:
                written += store.import_records(batch, reembed=args.reembed)
            except AgentMemoryError as exc:
                if start == 0:
                    raise
                # A refused record stops its batch before any write; a server that
                # fails during the writes may have taken some of them.
                fate, fix = (
                    ("none of which was written", "fix the input and run the import again")
                    if isinstance(exc, InvalidInputError)
                    else (
                        "some of which may have been written",
                        "run the import again: it rewrites the same ids",
                    )
                )
                raise CliError(
                    f"{exc} (in records {start + 1}-{start + len(batch)}, {fate}; the "
                    f"{start} records before: {_outcome(start, written)}; {fix})"
                ) from exc
            progress.advance(len(batch))
    finally:
        progress.finish()
    imported = len(set(written))
    expired, repeated = len(records) - len(written), len(written) - imported
    if args.json:
        emit_json({"read": len(records), "imported": imported, "skipped_expired": expired,
                   "repeated_ids": repeated})  # fmt: skip
    else:
        note = f" ({_outcome(len(records), written, counted=False)})" if expired or repeated else ""
        out(f"imported {imported} of {len(records)} memories into '{args.name}'{note}")
    return 0


def _outcome(read: int, written: list[str], *, counted: bool = True) -> str:
    """What ``read`` records became (``counted``: say how many were imported). A memory
    per distinct id: a record repeating an earlier one's id rewrote that memory; a
    record missing from ``written`` expired."""
    imported = len(set(written))
    parts = [f"{imported} imported"] if counted else []
    if read > len(written):
        parts.append(f"{read - len(written)} expired, skipped")
    if len(written) > imported:
        parts.append(f"{len(written) - imported} repeated an earlier record's id")
    return ", ".join(parts)


def _read(path: str | None) -> list[dict[str, Any]]:
    if path in (None, "-"):
        return _read_stdin()
    try:
        with open(path, encoding="utf-8") as handle:
            return _parse(handle, path)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CliError(f"cannot read {path}: not UTF-8 text ({exc.reason})") from None


def _read_stdin() -> list[dict[str, Any]]:
    """The records of stdin, its bytes read as UTF-8 whatever the locale says: under a
    C locale Python decodes them with ``surrogateescape`` (bytes that are not UTF-8
    would pass as lone surrogates), under a strict one it raises on the first."""
    buffer = getattr(sys.stdin, "buffer", None)
    # No buffer: a text stream put in place of stdin (tests, a host application).
    wrapper = io.TextIOWrapper(buffer, encoding="utf-8", newline=None) if buffer else None
    try:
        return _parse(wrapper or sys.stdin, "stdin")
    except UnicodeDecodeError as exc:
        raise CliError(f"cannot read stdin: not UTF-8 text ({exc.reason})") from None
    finally:
        if wrapper is not None:
            wrapper.detach()  # leaves stdin's buffer open


def _parse(lines: Iterable[str], source: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise CliError(f"{source} line {number}: not JSON ({exc})") from None
        except RecursionError:
            raise CliError(f"{source} line {number}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise CliError(f"{source} line {number}: expected a JSON object")
        records.append(record)
    return records
