"""Progress output of an evaluation run: a redrawn bar on a terminal, one plain line per row otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .report import COMPLETED, RowResult

__all__ = ["Progress"]


class Progress:
    """Reports each finished row to ``stream`` (stderr by default).

    On a tty the bar is redrawn in place; otherwise (pipes, CI logs) each row is one line, so logs stay
    readable. ``quiet=True`` prints nothing.
    """

    BAR_WIDTH = 30

    def __init__(self, total: int, *, stream: TextIO | None = None, quiet: bool = False, pass_threshold: float = 1.0,
                 tty: bool | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.pass_threshold = pass_threshold
        self.tty = self.stream.isatty() if tty is None else tty
        self.done = 0
        self.failed = 0
        self.passed = 0
        self._started = time.perf_counter()

    def update(self, result: RowResult) -> None:
        self.done += 1
        self.failed += result.status != COMPLETED
        self.passed += result.passed
        if self.quiet:
            return
        if self.tty:
            self._draw()
        else:
            self.stream.write(self._line(result) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if not self.quiet and self.tty and self.total:
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self) -> None:
        filled = int(self.BAR_WIDTH * self.done / self.total) if self.total else self.BAR_WIDTH
        elapsed = time.perf_counter() - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        bar = "#" * filled + "." * (self.BAR_WIDTH - filled)
        self.stream.write(
            f"\r[{bar}] {self.done}/{self.total} rows  passed {self.passed}  failed {self.failed}  {rate:.1f} rows/s"
        )
        self.stream.flush()

    def _line(self, result: RowResult) -> str:
        head = f"[{self.done}/{self.total}] row {result.row_index}: {result.status}"
        if result.status == COMPLETED:
            verdict = "pass" if result.passed else "fail"
            tail = f" reward={result.reward:g} ({verdict})"
        else:
            tail = f" [{result.category}] {result.error}"
        if result.latency_ms is not None:
            tail += f" {result.latency_ms:.0f} ms"
        return head + tail
