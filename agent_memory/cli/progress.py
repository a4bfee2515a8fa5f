"""A dependency-free progress line on stderr for long imports and exports."""

from __future__ import annotations

import sys
import time
from typing import TextIO

DEFAULT_EVERY = 200


def progress_enabled(flag: bool | None, stream: TextIO | None = None) -> bool:
    """``--progress``/``--no-progress`` when given, else whether ``stream`` is a TTY."""
    if flag is not None:
        return flag
    stream = stream or sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``\\r``-rewritten status line: ``label: done/total (pct) rate/s``.

    Redraws after every ``every`` records (and on :meth:`finish`); does nothing at all
    when disabled, so callers need not check.
    """

    def __init__(
        self,
        label: str,
        *,
        enabled: bool,
        total: int | None = None,
        every: int = DEFAULT_EVERY,
        stream: TextIO | None = None,
    ) -> None:
        self.label = label
        self.enabled = enabled
        self.total = total
        self.every = max(1, every)
        self.done = 0
        self._shown = 0
        self._stream = stream
        self._started = time.monotonic()
        self._drawn = False
        self._width = 0

    def advance(self, count: int = 1) -> None:
        """Count ``count`` more records; redraw when ``every`` have passed since the last."""
        self.done += count
        if self.enabled and self.done - self._shown >= self.every:
            self._draw()

    def finish(self) -> None:
        """Draw the final state and end the line (only if something was drawn or due)."""
        if self.enabled and (self._drawn or self.done):
            if not self._drawn or self._shown != self.done:
                self._draw()
            self._write("\n")

    def _draw(self) -> None:
        self._shown = self.done
        elapsed = max(time.monotonic() - self._started, 1e-9)
        count = f"{self.done}"
        if self.total:
            count += f"/{self.total} ({100 * self.done // self.total}%)"
        line = f"{self.label}: {count} records, {self.done / elapsed:.0f}/s"
        self._write("\r" + line.ljust(self._width))
        self._width = max(self._width, len(line))
        self._drawn = True

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(text)
        stream.flush()
