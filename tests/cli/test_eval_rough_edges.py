"""Issue 12's rough edges of ``osmosis-compat eval``: graderless workflows, errors under the summary, ``-o``
checked before the run, the ``--base-url`` hints, and the progress line on a real terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from fastapi import FastAPI

from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.main import main
from osmosis_compat.testing import serve_app

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "cli_agents.py"
CALCULATOR = str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop"
DATASET = EXAMPLES_DIR / "legacy" / "data" / "calculator.jsonl"


@pytest.fixture()
def graderless(tmp_path: Path) -> str:
    """A workflow entrypoint without a grader (the seeds' simplest form): two_workflows.py minus its grader."""
    source = (HERE / "two_workflows.py").read_text()
    source = source.split("class Grading", 1)[0].replace(
        "Path(__file__).resolve().parents[1]", f"Path({str(HERE.parent)!r})")
    (tmp_path / "graderless.py").write_text(source)
    return f"{tmp_path / 'graderless.py'}:AWorkflow"


@pytest.mark.parametrize("via", ["native", "legacy"])
def test_a_workflow_without_grader_is_run_and_recorded_not_scored(
    graderless: str, via: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.jsonl"
    assert main(["eval", "-m", graderless, "-d", str(DATASET), "--via", via, "-o", str(output)]) == 0
    out, err = capsys.readouterr()
    assert err.count("has no grader") == 1  # said once, not once per row
    assert "pass rate (reward >= 1)  - (no grader)" in out and "failures" not in out
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(rows) == 5 and all(r["status"] == "completed" and r["reward"] is None for r in rows)
    # Before: every row failed with grader_error and an empty transcript.
    assert all(r["messages"] and r["final_message"] for r in rows)
    assert rows[0]["final_message"] == "The answer is 42."


def test_errors_are_listed_under_the_summary_when_rows_were_not_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "d.jsonl"
    row = {"system_prompt": "s", "user_prompt": "What is 1 + 1?", "ground_truth": "2"}
    dataset.write_text("\n".join([json.dumps(row)] * 3 + ["{broken"]))
    assert main(["eval", "-m", f"{AGENTS}:raising_loop", "-d", str(dataset), "-q"]) == 0
    out = capsys.readouterr().out
    summary, errors = out.split("Errors:\n")
    assert "failures: agent_error" in summary
    assert errors.splitlines() == [
        "  row 0 (and 2 more rows) [agent_error] the agent broke",
        "  row 3 [invalid_row] line 4: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
    ]


def test_output_that_is_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-o", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err


def test_output_in_a_missing_directory_fails_before_any_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-o", str(tmp_path / "missing" / "out.jsonl")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("Error: -o ") and "does not exist (create it first)" in err


def test_base_url_hints(capsys: pytest.CaptureFixture[str]) -> None:
    with serve_app(FastAPI()) as server:  # no routes: /chat/completions answers 404, as a server without /v1
        assert main(["eval", "--base-url", server.url, "--model", "m"]) == 1
    err = capsys.readouterr().err
    assert "HTTP 404" in err and f"did you mean {server.url}/v1?" in err
    assert main(["eval", "--base-url", "http://127.0.0.1:1/v1/chat/completions", "--model", "m"]) == 1
    assert "did you mean http://127.0.0.1:1/v1?" in capsys.readouterr().err


def _run_in_terminal(argv: list[str], columns: int, timeout: float = 120.0) -> str:
    """Run ``argv`` on a pseudo-terminal ``columns`` wide; everything it wrote to the terminal."""
    master, slave = pty.openpty()
    fcntl_winsize = struct.pack("HHHH", 24, columns, 0, 0)
    import fcntl

    fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl_winsize)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=10)
    os.close(master)
    return b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")


def test_progress_line_fits_a_40_column_terminal(tmp_path: Path) -> None:
    dataset = tmp_path / "d.jsonl"
    row = json.loads(DATASET.read_text().splitlines()[0])
    dataset.write_text("\n".join(json.dumps(row) for _ in range(120)))
    output = _run_in_terminal([str(Path(sys.executable).parent / "osmosis-compat"), "eval", "-m", CALCULATOR,
                               "-d", str(dataset), "--concurrency", "8"], columns=40)
    head, _, summary = output.partition("Evaluation of calculator")
    assert "120/120" in head and "pass rate (reward >= 1)  100.0% (120/120)" in summary
    redraws = [segment for segment in head.split("\r") if "rows" in segment]
    assert len(redraws) >= 100
    assert all(len(segment.replace("\x1b[K", "").rstrip("\n")) <= 39 for segment in redraws)
