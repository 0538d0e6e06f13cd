"""The redrawn progress line fits the terminal: it never wraps, so redraws stay on one line."""

from __future__ import annotations

import io

import pytest

from osmosis_compat.evaluation.progress import Progress
from osmosis_compat.evaluation.report import COMPLETED, FAILED, RowResult


def screen_lines(output: str, width: int) -> int:
    """How many terminal lines ``output`` occupies on a ``width``-column terminal (auto-wrap at the margin)."""
    lines, column = 1, 0
    i = 0
    while i < len(output):
        char = output[i]
        if char == "\x1b":  # CSI sequence: skip to its final byte
            i += 2
            while i < len(output) and not output[i].isalpha():
                i += 1
        elif char == "\r":
            column = 0
        elif char == "\n":
            lines, column = lines + 1, 0
        else:
            if column == width:  # the cursor sat past the margin: this character wraps
                lines, column = lines + 1, 0
            column += 1
        i += 1
    return lines


def rows(n: int) -> list[RowResult]:
    return [RowResult(row_index=i, status=COMPLETED if i % 7 else FAILED, reward=1.0, passed=bool(i % 7),
                      category=None if i % 7 else "agent_error", error=None if i % 7 else "boom")
            for i in range(n)]


@pytest.mark.parametrize("width", [80, 60, 40, 24, 12])
def test_1500_rows_redraw_on_one_line(width: int) -> None:
    stream = io.StringIO()
    progress = Progress(1500, stream=stream, tty=True, width=lambda: width)
    for result in rows(1500):
        progress.update(result)
    progress.close()
    # Before: 1,401 lines for 1,500 rows at 80 columns (every redraw past the margin wrapped).
    assert screen_lines(stream.getvalue(), width) == 2  # the progress line, then the fresh line after close()
    last = stream.getvalue().rsplit("\r", 1)[-1].replace("\x1b[K", "").rstrip("\n")
    assert len(last) <= width - 1 and "1500/1500" in last


def test_a_narrowed_terminal_gets_a_shorter_line_and_no_leftovers() -> None:
    widths = iter([120, 120, 50, 50])
    stream = io.StringIO()
    progress = Progress(4, stream=stream, tty=True, width=lambda: next(widths))
    for result in rows(4):
        progress.update(result)
    redraws = [d for d in stream.getvalue().split("\r") if d]
    assert "rows/s" in redraws[0] and "[" in redraws[0]
    assert all(d.endswith("\x1b[K") for d in redraws)  # each redraw erases what a longer one left
    assert len(redraws[-1].replace("\x1b[K", "")) <= 49


def test_pipes_get_one_plain_line_per_row() -> None:
    stream = io.StringIO()
    progress = Progress(2, stream=stream, tty=False)
    for result in rows(2):
        progress.update(result)
    progress.close()
    assert stream.getvalue().splitlines() == ["[1/2] row 0: failed [agent_error] boom",
                                              "[2/2] row 1: completed reward=1 (pass)"]
