"""Output helpers of the command line: tables, ISO dates, JSON, safe terminal text.

Everything a command prints goes through here, so stored text can never smuggle
terminal escape sequences onto the user's screen and ``--json`` output has one shape.
"""

from __future__ import annotations

import codecs
import dataclasses
import io
import json
import os
import shutil
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

# Kept importable from here (the CLI's output helpers); the rules live in the core.
from agent_memory.core.url_secrets import mask_url, redact  # noqa: F401

ELLIPSIS = "…"
MIN_FLEX_WIDTH = 20
PIPE_WIDTH = 160


def out(text: str = "") -> None:
    """Write a line to the current ``sys.stdout`` (looked up per call, for tests)."""
    sys.stdout.write(text + "\n")


def emit_json(document: Any) -> None:
    """Write one JSON document (``--json``) to stdout: UTF-8 text as it is, for a
    console of another encoding every non-ASCII character as a ``\\u`` escape (the
    console's ``backslashreplace`` would write ``\\U0001f600``, which is not JSON)."""
    ascii_only = not is_utf8(sys.stdout)
    out(json.dumps(jsonable(document), indent=2, ensure_ascii=ascii_only, sort_keys=False))


def is_utf8(stream: TextIO) -> bool:
    """Whether ``stream`` encodes UTF-8 (one that does not say is taken as UTF-8)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def tolerate_unencodable_output() -> None:
    """Let stdout and stderr write what their encoding cannot (an emoji on a cp1252
    or ASCII console, a lone surrogate anywhere) as a backslash escape instead of
    raising UnicodeEncodeError halfway through a table."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def jsonable(value: Any) -> Any:
    """Plain JSON data from library results: dataclasses, mappings, tuples, scalars."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def iso(epoch_ms: int | None) -> str:
    """``2024-05-01T12:00:00Z`` (UTC, seconds) from epoch milliseconds; ``-`` for none.

    A stored time no date can show (damaged: past the year 9999 or before year 1) is
    printed as its raw number, so a listing still shows the record, and what it holds.
    """
    if epoch_ms is None:
        return "-"
    try:
        moment = datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):  # out of the platform's or datetime's range
        return str(epoch_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def safe(text: object) -> str:
    """One terminal-safe line: whitespace runs become one space, other control
    characters (ESC included) are shown escaped, so stored text cannot drive the
    terminal."""
    parts: list[str] = []
    for ch in str(text):
        if ch in "\t\n\r\v\f":
            parts.append(" ")
        elif unicodedata.category(ch) == "Cc":
            parts.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            parts.append(ch)
    return " ".join("".join(parts).split())


def truncate(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending with an ellipsis when cut."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def terminal_width(stream: TextIO | None = None) -> int:
    """Columns to fit: the terminal's; for a pipe ``$COLUMNS`` or :data:`PIPE_WIDTH`."""
    stream = stream or sys.stdout
    try:
        is_tty = stream.isatty()
    except (AttributeError, ValueError):
        is_tty = False
    if is_tty:
        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    align: str = "",
    flex: int | None = None,
    width: int | None = None,
    max_widths: Mapping[int, int] | None = None,
) -> str:
    """A plain-text table: a header line, a rule, one line per row.

    Args:
        align: one letter per column, ``l`` or ``r`` (default ``l``).
        flex: index of the column that shrinks (with an ellipsis) to fit ``width``.
        width: total width to fit (default: the terminal's).
        max_widths: per-column caps applied before fitting.
    """
    caps = dict(max_widths or {})
    cells = [[truncate(safe(c), caps.get(i, 10**6)) for i, c in enumerate(r)] for r in rows]
    titles = [safe(h) for h in headers]
    widths = [max([len(t)] + [len(r[i]) for r in cells]) for i, t in enumerate(titles)]
    if flex is not None:
        total = width if width is not None else terminal_width()
        others = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (len(widths) - 1)
        widths[flex] = max(MIN_FLEX_WIDTH, min(widths[flex], total - others))
        cells = [[truncate(c, widths[i]) for i, c in enumerate(r)] for r in cells]

    def line(values: Sequence[str]) -> str:
        padded = [
            v.rjust(widths[i]) if align[i : i + 1] == "r" else v.ljust(widths[i])
            for i, v in enumerate(values)
        ]
        return "  ".join(padded).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(titles), rule, *(line(r) for r in cells)])


def render_pairs(pairs: Sequence[tuple[str, object]], indent: str = "") -> str:
    """``key  value`` lines with the keys aligned."""
    keys = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{indent}{k.ljust(keys)}  {safe(v)}" for k, v in pairs)


def scope_text(scope: Any) -> str:
    """``agent=a thread=t session=s`` (the set parts of a Scope; ``-`` for none)."""
    parts = [
        f"{label}={value}"
        for label, value in (
            ("agent", scope.agent_id),
            ("thread", scope.thread_id),
            ("session", scope.session_id),
        )
        if value is not None
    ]
    return " ".join(parts) or "-"
