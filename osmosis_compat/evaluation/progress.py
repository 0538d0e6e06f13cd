"""Progress output of an evaluation run: one redrawn line on a terminal, one plain line per row otherwise."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from .report import COMPLETED, RowResult

__all__ = ["Progress", "heartbeat_interval", "terminal_width"]

#: Seconds without a finished row after which non-terminal output says the run is still going (a slow row
#: otherwise showed nothing for as long as it ran). ``$OSMOSIS_COMPAT_EVAL_HEARTBEAT_S`` overrides it.
HEARTBEAT_S = 10.0


def heartbeat_interval() -> float:
    """:data:`HEARTBEAT_S`, or ``$OSMOSIS_COMPAT_EVAL_HEARTBEAT_S`` when that is a positive number."""
    try:
        value = float(os.environ.get("OSMOSIS_COMPAT_EVAL_HEARTBEAT_S", ""))
    except ValueError:
        return HEARTBEAT_S
    return value if value > 0 else HEARTBEAT_S

#: ANSI "erase to end of line": a shorter redraw (or a narrowed terminal) leaves no tail of the previous line.
_ERASE_TO_EOL = "\x1b[K"


def terminal_width(stream: TextIO, default: int = 80) -> int:
    """Columns of the terminal behind ``stream`` (``$COLUMNS`` wins, as in ``shutil``); ``default`` if unknown."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns or default
    except (AttributeError, OSError, ValueError):
        return default


class Progress:
    """Reports each finished row to ``stream`` (stderr by default).

    On a tty the line is redrawn in place and always fits the terminal: it is built for the width read at each
    redraw (the bar shrinks, then the least useful fields go) and kept one column short of it, because a line
    that reaches the last column makes the terminal wrap and every later ``\\r`` redraw a new line (1,401 lines
    for 1,500 rows at 80 columns before). Otherwise (pipes, CI logs) each row is one plain line.
    ``quiet=True`` prints nothing. ``width`` overrides the terminal width (tests).
    """

    BAR_WIDTH = 30
    MIN_BAR_WIDTH = 10

    def __init__(self, total: int, *, stream: TextIO | None = None, quiet: bool = False, pass_threshold: float = 1.0,
                 tty: bool | None = None, width: Callable[[], int] | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.pass_threshold = pass_threshold
        self.tty = self.stream.isatty() if tty is None else tty
        self.done = 0
        self.failed = 0
        self.passed = 0
        self._width = width or (lambda: terminal_width(self.stream))
        self._started = time.perf_counter()
        self._last_output = self._started
        self._drawn = False

    @property
    def shows_rows(self) -> bool:
        """Whether each row's outcome (and error) is printed as its own line."""
        return not self.quiet and not self.tty

    def update(self, result: RowResult) -> None:
        """Count ``result`` and redraw (tty) or print its line."""
        self.done += 1
        self.failed += result.status != COMPLETED
        self.passed += result.passed
        if self.quiet:
            return
        if self.tty:
            self.stream.write("\r" + self.status_line(self._width()) + _ERASE_TO_EOL)
            self._drawn = True
        else:
            self.stream.write(self._line(result) + "\n")
        self.stream.flush()
        self._last_output = time.perf_counter()

    def heartbeat(self, interval: float) -> None:
        """Non-terminal output: when nothing was printed for ``interval`` seconds, say the run is still going.

        (A terminal's redrawn line shows the elapsed rate anyway; ``-q`` stays silent.)
        """
        if self.quiet or self.tty or self.done >= self.total:
            return
        now = time.perf_counter()
        if now - self._last_output < interval:
            return
        waiting = self.total - self.done
        self.stream.write(f"... {self.done}/{self.total} rows finished, {waiting} still running "
                          f"({now - self._started:.0f} s elapsed)\n")
        self.stream.flush()
        self._last_output = now

    def close(self) -> None:
        """End the redrawn line (the summary starts on a fresh one)."""
        if not self.quiet and self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()

    def status_line(self, width: int) -> str:
        """The redrawn line for a terminal ``width`` columns wide: at most ``width - 1`` characters."""
        limit = max(1, width - 1)
        elapsed = time.perf_counter() - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        count = f"{self.done}/{self.total} rows"
        fields = [f"passed {self.passed}", f"failed {self.failed}", f"{rate:.1f} rows/s"]
        full = "  ".join([count, *fields])
        room = limit - len(full) - 3  # "[" + bar + "] "
        if room >= self.MIN_BAR_WIDTH:
            bar_width = min(self.BAR_WIDTH, room)
            filled = int(bar_width * self.done / self.total) if self.total else bar_width
            return f"[{'#' * filled}{'.' * (bar_width - filled)}] {full}"
        for keep in range(len(fields), -1, -1):  # no room for a bar: drop rows/s, then failed, then passed
            text = "  ".join([count, *fields[:keep]])
            if len(text) <= limit:
                return text
        return f"{self.done}/{self.total} p{self.passed} f{self.failed}"[:limit]

    def _line(self, result: RowResult) -> str:
        head = f"[{self.done}/{self.total}] row {result.row_index}: {result.status}"
        if result.status == COMPLETED:
            if result.reward is None:
                tail = " (not scored: no grader)"
            else:
                verdict = "pass" if result.passed else "fail"
                tail = f" reward={result.reward:g} ({verdict})"
        else:
            tail = f" [{result.category}] {result.error}"
        if result.latency_ms is not None:
            tail += f" {result.latency_ms:.0f} ms"
        return head + tail
