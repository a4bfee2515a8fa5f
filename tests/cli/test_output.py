"""The table formatter, terminal-safe text, ISO dates and the progress line."""

from __future__ import annotations

import io

import pytest

from agent_memory.cli.output import iso, render_table, safe, truncate
from agent_memory.cli.progress import Progress, progress_enabled


def test_table_aligns_and_shrinks_the_flex_column() -> None:
    rows = [("1", "0.500", "short"), ("10", "0.25", "a much longer piece of content " * 3)]
    text = render_table(("#", "SCORE", "CONTENT"), rows, align="rrl", flex=2, width=40)
    lines = text.splitlines()
    assert lines[0] == " #  SCORE  CONTENT"
    assert lines[1] == "--  -----  " + "-" * 29
    assert lines[2] == " 1  0.500  short"
    assert lines[3].startswith("10   0.25  a much longer") and lines[3].endswith("…")
    assert all(len(line) <= 40 for line in lines)


def test_flex_column_keeps_a_minimum_and_caps_apply() -> None:
    text = render_table(("A", "B"), [("x" * 50, "y" * 50)], flex=1, width=10, max_widths={0: 8})
    row = text.splitlines()[2]
    assert row == "xxxxxxx…  " + "y" * 19 + "…"


def test_safe_text_and_truncate() -> None:
    assert safe("a\tb\n\nc\r\x1b[2J\x07 d") == "a b c \\x1b[2J\\x07 d"
    assert safe("héllo 👋") == "héllo 👋"
    assert truncate("abcdef", 4) == "abc…" and truncate("abc", 4) == "abc"
    assert truncate("abc", 0) == ""


def test_iso_dates() -> None:
    assert iso(0) == "1970-01-01T00:00:00Z"
    assert iso(1_700_000_000_123) == "2023-11-14T22:13:20Z"
    assert iso(None) == "-"


@pytest.mark.parametrize("damaged", [10**17, -(10**17), 10**400])
def test_iso_shows_a_time_no_date_can_hold_as_its_number(damaged: int) -> None:
    """A damaged created_at raised ValueError/OverflowError (a traceback from ``list``
    and ``recall``); it is printed as its raw number."""
    assert iso(damaged) == str(damaged)


def test_progress_line() -> None:
    stream = io.StringIO()
    progress = Progress("exporting", enabled=True, total=5, every=2, stream=stream)
    for _ in range(5):
        progress.advance()
    progress.finish()
    frames = stream.getvalue().split("\r")[1:]
    assert [f.split(" records")[0] for f in frames] == [
        "exporting: 2/5 (40%)",
        "exporting: 4/5 (80%)",
        "exporting: 5/5 (100%)",
    ]
    assert stream.getvalue().endswith("\n")


def test_progress_disabled_and_auto() -> None:
    stream = io.StringIO()
    progress = Progress("x", enabled=False, stream=stream, every=1)
    progress.advance(10)
    progress.finish()
    assert stream.getvalue() == "" and progress.done == 10
    assert progress_enabled(None, stream) is False  # not a TTY
    assert progress_enabled(True, stream) is True
    assert progress_enabled(False) is False
