"""The ``osmosis`` command (legacy verbs for users' scripts), ``python -m osmosis_compat``, and subcommand usage."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from osmosis_compat.cli.demo import EXAMPLES_DIR

BIN = Path(sys.executable).parent
CALCULATOR = str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop"
DATASET = str(EXAMPLES_DIR / "legacy" / "data" / "calculator.jsonl")
AGENTS = str(Path(__file__).with_name("cli_agents.py"))


def osmosis(*args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 120
            ) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "osmosis"), *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def test_version_help_and_platform_verbs() -> None:
    version = osmosis("-V")
    assert version.returncode == 0 and version.stdout.startswith("osmosis-ai 0.2.31+compat.")
    bare = osmosis()
    assert bare.returncode == 1 and "serve" in bare.stdout and "test" in bare.stdout  # as upstream: help, exit 1
    login = osmosis("login", "--token", "x")
    assert login.returncode == 1 and login.stderr.startswith("Error: `osmosis login`: Osmosis Platform login")
    evaluate = osmosis("eval", "-m", "x:y", "-d", "d.jsonl", "--eval-fn", "m:f")
    assert evaluate.returncode == 1 and "--model is required" in evaluate.stderr


def test_validate_as_upstream() -> None:
    valid = osmosis("validate", "-m", CALCULATOR)
    assert valid.returncode == 0 and "Agent loop 'calculator' validated successfully." in valid.stdout
    invalid = osmosis("validate", "-m", f"{AGENTS}:sync_run_loop")
    assert invalid.returncode == 1 and "[RUN_NOT_ASYNC]" in invalid.stderr


def test_test_runs_rows_sequentially_and_writes_upstreams_json(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    result = osmosis("test", "-m", CALCULATOR, "-d", DATASET, "--model", "builtin", "--limit", "3", "-o", str(output))
    assert result.returncode == 0, result.stderr
    assert "[3/3] row 2: PASS reward=1" in result.stdout and "3 passed, 0 failed" in result.stdout
    report = json.loads(output.read_text())
    assert report["summary"]["total"] == 3 and report["summary"]["passed"] == 3
    assert report["summary"]["total_tokens"] > 0
    first = report["results"][0]
    assert set(first) == {"row_index", "success", "error", "duration_ms", "token_usage", "reward", "finish_reason"}
    assert first["success"] and first["reward"] == 1.0 and first["token_usage"]["total_tokens"] > 0
    failing = osmosis("test", "-m", f"{AGENTS}:raising_loop", "-d", DATASET, "--model", "builtin", "--limit", "2")
    assert failing.returncode == 1 and "FAIL: the agent broke" in failing.stdout


def test_test_model_choices_are_explained() -> None:
    env_free = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    no_key = subprocess.run([str(BIN / "osmosis"), "test", "-m", CALCULATOR, "-d", DATASET], capture_output=True,
                            text=True, timeout=60, env=env_free)
    assert no_key.returncode == 1 and "set OPENAI_API_KEY or pass --api-key" in no_key.stderr
    assert "--model builtin" in no_key.stderr
    mcp = osmosis("test", "--mcp", "no-such-dir", "-d", DATASET, "--model", "builtin")
    assert mcp.returncode == 1 and "MCP directory not found" in mcp.stderr
    row = osmosis("test", "-m", CALCULATOR, "-d", DATASET, "--model", "builtin", "--row", "1")
    assert row.returncode == 1 and "--row requires --interactive" in row.stderr


def test_interactive_steps_through_a_rollout_turn_by_turn() -> None:
    # Row 1 ("Compute (2 + 3) * 4", three model calls): show messages, show tools, next, next, then end of input
    # (= continue without stopping).
    result = osmosis("test", "-m", CALCULATOR, "-d", DATASET, "--model", "builtin", "-i", "--row", "1",
                     stdin="m\nt\nn\nn\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    first = out.index("--- row 1, model call 1: 2 message(s), 4 tool(s); last: user: Compute (2 + 3) * 4")
    assert out.index("system: You are a calculator.", first) < out.index("   add: Add two numbers", first)
    assert out.index("   add: Add two numbers", first) < out.index('reply: assistant: -> add({"a": 2, "b": 3})', first)
    second = out.index("--- row 1, model call 2: 4 message(s), 4 tool(s); last: tool: 5")
    assert 'reply: assistant: -> multiply({"a": 5, "b": 4})' in out[second:]
    assert "model call 3" in out and "The answer is 20" not in out  # after end of input: no more stops
    assert "[1/1] row 1: PASS reward=1" in out and "1 passed, 0 failed" in out


def test_interactive_continue_and_quit() -> None:
    cont = osmosis("test", "-m", CALCULATOR, "-d", DATASET, "--model", "builtin", "-i", "--limit", "2",
                   stdin="c\nc\n")
    assert cont.returncode == 0 and cont.stdout.count("model call 1:") == 2 and "model call 2:" not in cont.stdout
    quit_ = osmosis("test", "-m", CALCULATOR, "-d", DATASET, "--model", "builtin", "-i", stdin="q\n")
    assert quit_.returncode == 1
    assert "row 0: FAIL: quit by the user" in quit_.stdout and "Quit: 0 passed, 1 failed (1 of 5 rows" in quit_.stdout
    # Quitting ends the rollout at once: no failed model call for the agent's client to retry (with its 1/2/4 s
    # backoff) and then die on with an OsmosisServerError traceback.
    assert "Traceback" not in quit_.stderr and "OsmosisServerError" not in quit_.stderr


def test_help_is_plain_text() -> None:
    for args in (("test", "--help"), ("serve", "--help")):
        shown = osmosis(*args)
        assert shown.returncode == 0 and "``" not in shown.stdout and ":class:" not in shown.stdout
        assert "**" not in shown.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_as_upstream_and_port_in_use() -> None:
    port = _free_port()
    proc = subprocess.Popen([str(BIN / "osmosis"), "serve", "-m", CALCULATOR, "--local", "-H", "127.0.0.1",
                             "-p", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()["agent_loop"] == "calculator"
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        busy = osmosis("serve", "-m", CALCULATOR, "--local", "-H", "127.0.0.1", "-p", str(port))
        assert busy.returncode == 1
        assert busy.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}:") and "-p/--port" in busy.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)


def test_python_dash_m_osmosis_compat() -> None:
    result = subprocess.run([sys.executable, "-m", "osmosis_compat", "validate", "-m", CALCULATOR],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "validated successfully" in result.stdout


@pytest.mark.parametrize(("command", "usage"), [
    (["osmosis-compat", "eval", "--bogus"], "usage: osmosis-compat eval"),
    (["osmosis-compat", "serve", "-m", "x:y", "--bogus"], "usage: osmosis-compat serve"),
    (["osmosis", "test", "-d", "d.jsonl", "--bogus"], "usage: osmosis test"),
])
def test_a_bad_flag_shows_the_subcommands_usage(command: list[str], usage: str) -> None:
    result = subprocess.run([str(BIN / command[0]), *command[1:]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith(usage) and "unrecognized arguments: --bogus" in result.stderr
