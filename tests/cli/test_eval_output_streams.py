"""Issue 20's rough edges of ``osmosis-compat eval`` output: a closed pipe, an agent's own prints, a slow row."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from osmosis_compat.cli.demo import EXAMPLES_DIR

AGENTS = Path(__file__).resolve().parent / "cli_agents.py"
DATASET = EXAMPLES_DIR / "legacy" / "data" / "calculator.jsonl"
BIN = Path(sys.executable).parent


def test_a_reader_that_stops_early_gets_no_traceback():
    # `| head -n 0`: the reader is gone before the summary is written, so the write meets a closed pipe (with
    # `head -1` it depends on timing whether head has exited yet).
    proc = subprocess.run(f"'{BIN / 'osmosis-compat'}' eval -q | head -n 0; echo \"rc=${{PIPESTATUS[0]}}\"",
                          shell=True, capture_output=True, text=True, timeout=120, executable="/bin/bash")
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.stdout.strip() == "rc=141"  # a shell's code for a writer stopped by SIGPIPE


def test_the_agents_prints_stay_out_of_the_summary():
    proc = subprocess.run([str(BIN / "osmosis-compat"), "eval", "-m", f"{AGENTS}:printing_loop", "-d", str(DATASET),
                           "--limit", "2", "-q"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "AGENT SAYS" not in proc.stdout and proc.stdout.startswith("Evaluation of printing")
    assert proc.stderr.count("AGENT SAYS: done") == 2  # not lost: on stderr, beside the progress


def test_a_slow_row_is_not_silent_in_non_terminal_output():
    env = {**os.environ, "OSMOSIS_COMPAT_EVAL_HEARTBEAT_S": "0.2"}
    proc = subprocess.run([str(BIN / "osmosis-compat"), "eval", "-m", f"{AGENTS}:slow_loop", "-d", str(DATASET),
                           "--limit", "1"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    beat = next(i for i, line in enumerate(lines) if line.startswith("... 0/1 rows finished, 1 still running"))
    done = next(i for i, line in enumerate(lines) if line.startswith("[1/1] row 0: completed"))
    assert beat < done
