"""``osmosis-compat serve``: error handling, what it plans to serve, and a real mixed server process."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from osmosis_compat.cli import serve
from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.main import main

AGENTS = Path(__file__).with_name("cli_agents.py")
CALCULATOR = str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop"
ROOT = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-m", "no_such_module:agent"], "Cannot import module 'no_such_module'"),
        (["-m", f"{AGENTS}:missing"], "has no attribute 'missing'. Available attributes:"),
        (["-m", f"{AGENTS}:not_an_agent"], "is neither a RolloutAgentLoop nor a workflow"),
        (["-m", f"{AGENTS}:sync_run_loop"], "Agent loop validation failed"),
        (["-m", CALCULATOR, "-m", f"{AGENTS}:sync_run_loop"], "failed validation"),
        (["-m", CALCULATOR, "--local", "--api-key", "k"], "--api-key cannot be used together with --local"),
        (["-m", CALCULATOR, "--reload"], "--reload needs the app as an import string"),
        (["-m", CALCULATOR, "-m", CALCULATOR], "two agents are named 'calculator'"),
        (["-m", f"a={CALCULATOR}", "-m", f"b={AGENTS}:raising_loop", "--default", "c"], "default agent 'c'"),
    ],
)
def test_errors_print_error_and_exit_1(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", *argv]) == 1
    err = capsys.readouterr().err
    assert "Error: " in err and message in err


def test_a_lone_legacy_loop_is_served_exactly_like_the_legacy_serve() -> None:
    plan = serve.plan_server(parse("-m", CALCULATOR))
    assert plan.app is None and plan.legacy_loop.name == "calculator"
    # Naming it, or exposing it on the workflow protocol, needs the mixed server.
    assert serve.plan_server(parse("-m", f"calc={CALCULATOR}", "--local")).app is not None


def test_mixed_plan_generates_a_key_and_lists_the_endpoints(capsys: pytest.CaptureFixture[str]) -> None:
    plan = serve.plan_server(parse("-m", f"calc={CALCULATOR}", "-m", f"{AGENTS}:raising_loop", "--default", "calc"))
    assert plan.key_generated and plan.api_key.startswith("osm_rollout_")
    assert set(plan.app.agents) == {"calc", "raising"} and plan.app.default == "calc"
    assert plan.api_key in plan.banner
    assert "http://127.0.0.1:9000/agents/raising/v1/rollout/init" in plan.banner
    assert "registration is not part of osmosis-compat" in plan.banner
    local = serve.plan_server(parse("-m", f"calc={CALCULATOR}", "-m", f"{AGENTS}:raising_loop", "--local"))
    assert local.api_key is None and "(disabled - local debug)" in local.banner
    assert "registration" not in local.banner


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_process_hosts_several_agents_and_stops_on_sigint(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "osmosis_compat.cli.main", "serve", "-m", f"calc={CALCULATOR}",
         "-m", f"{AGENTS}:raising_loop", "-H", "127.0.0.1", "-p", str(port), "--local", "--log-level", "warning",
         "--log", str(tmp_path)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"server did not start: {proc.stdout.read() if proc.stdout else ''}")
                time.sleep(0.05)
        assert set(health["agents"]) == {"calc", "raising"} and health["default_agent"] is None
        assert health["agents"]["calc"]["health"]["agent_loop"] == "calculator"
    finally:
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=20)
    assert proc.returncode in (0, 130), output
    assert "calc" in output and "/agents/raising/v1/rollout/init" in output
    assert sorted(p.name for p in next(tmp_path.glob("[0-9]*")).iterdir()) == ["calc", "raising"]


WORKFLOW = str(Path(__file__).resolve().parents[1] / "server" / "calc_workflow.py")


def test_a_lone_workflow_is_served_by_create_rollout_server_and_mixes_with_loops() -> None:
    plan = serve.plan_server(parse("-m", WORKFLOW, "--no-validate"))
    assert plan.legacy_loop is None and "calc-workflow" in plan.banner
    assert {route.path for route in plan.app.routes} >= {"/rollout", "/health"}
    keyed = serve.plan_server(parse("-m", WORKFLOW, "--no-validate", "--api-key", "k"))
    assert "required on every route" in keyed.banner  # 0.3.8's create_rollout_server(api_key=...)
    mixed = serve.plan_server(parse("-m", WORKFLOW, "-m", CALCULATOR, "--expose", "both", "--local"))
    assert mixed.app.endpoints("calc-workflow") == {
        "workflow": "/agents/calc-workflow/rollout", "legacy": "/agents/calc-workflow/v1/rollout/init",
        "polling": "/agents/calc-workflow/rollout",
    }
    assert "(adapted)" in mixed.banner
