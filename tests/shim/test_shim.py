"""The osmosis_ai import shim, in fresh interpreters as users run their files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
LEGACY_EXAMPLE = ROOT / "examples" / "legacy" / "calculator_agent.py"
BIN = Path(sys.executable).parent


def run_python(code: str, *, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=60)


def test_import_rollout_is_light_and_offline():
    result = run_python(
        """
        import json, sys, time
        t = time.perf_counter()
        import osmosis_ai.rollout
        from osmosis_ai.rollout import RolloutAgentLoop, RolloutContext, RolloutResult, RolloutRequest
        from osmosis_ai.rollout.tools import execute_tool_calls
        heavy = sorted(m for m in ("litellm", "strands", "agents", "openai", "fastapi", "uvicorn") if m in sys.modules)
        print(json.dumps({"heavy": heavy, "seconds": time.perf_counter() - t}))
        """
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["heavy"] == []


def test_legacy_names_resolve_to_osmosis_compat():
    result = run_python(
        """
        import osmosis_ai, osmosis_ai.rollout as r
        from osmosis_ai import osmosis_reward, RolloutAgentLoop as A
        from osmosis_ai.rollout.core.schemas import OpenAIFunctionToolSchema
        from osmosis_ai.rollout.core.base import RolloutAgentLoop
        from osmosis_ai.rollout.client import OsmosisLLMClient, CompletionsResult
        from osmosis_ai.rollout.config import RolloutSettings, configure, get_settings, reset_settings
        from osmosis_ai.rollout.server import create_app, serve_agent_loop, validate_and_report, create_rollout_server
        from osmosis_ai.rollout.testing import create_mock_trainer_app, RolloutCompletionTracker
        from osmosis_ai.rollout.utils import normalize_stop
        from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend
        from osmosis_ai.rollout.context import RolloutContext as WorkflowContext
        import osmosis_compat.legacy.base as base
        assert A is RolloutAgentLoop is r.RolloutAgentLoop is base.RolloutAgentLoop
        assert r.RolloutContext is base.RolloutContext and WorkflowContext is not base.RolloutContext
        assert osmosis_ai.__version__.startswith("0.2.31+compat")
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        ("osmosis_ai.rollout.server.registration", "registration"),
        ("osmosis_ai.rollout.eval.test_mode", "osmosis-compat eval"),
        ("osmosis_ai.rollout.backend.harbor", "Harbor"),
    ],
)
def test_out_of_scope_modules_say_why(module, reason):
    result = run_python(f"import {module}")
    assert result.returncode != 0
    assert "ImportError" in result.stderr and reason in result.stderr


def test_mcp_module_is_served_without_importing_fastmcp():
    result = run_python(
        "import sys; from osmosis_ai.rollout.mcp import MCPAgentLoop, MCPLoadError, load_mcp_server; "
        "print('fastmcp' in sys.modules)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_real_osmosis_ai_wins_in_auto_mode_and_force_overrides(tmp_path):
    fake = tmp_path / "site" / "osmosis_ai"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    auto = run_python("import osmosis_ai; print(getattr(osmosis_ai, 'REAL', False))", env=env)
    assert auto.stdout.strip() == "True", auto.stderr
    forced = run_python("import osmosis_ai; print(getattr(osmosis_ai, 'REAL', False))",
                        env={**env, "OSMOSIS_COMPAT_SHIM": "force"})
    assert forced.stdout.strip() == "False", forced.stderr
    off = run_python("import osmosis_ai", env={"OSMOSIS_COMPAT_SHIM": "off"}, cwd=tmp_path)
    assert off.returncode != 0 and "No module named 'osmosis_ai'" in off.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            return httpx.get(url + "/health", timeout=1).json()
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("server did not come up")


def _serve_and_drive(cmd: list[str], port: int, cwd: Path) -> dict:
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        health = _wait_healthy(url, proc)
        assert health["agent_loop"] == "calculator"
        import asyncio

        from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy

        async def drive():
            with FakeTrainGate(ScriptedPolicy()).serve() as gate:
                return await gate.run_rollout(url, rollout_id="shim", metadata={"ground_truth": "42"},
                                              messages=[{"role": "user", "content": "What is 12 + 30?"}])

        record = asyncio.run(drive())
        return record.callback
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _user_project(tmp_path: Path, port: int) -> Path:
    source = LEGACY_EXAMPLE.read_text().replace("port=9000", f"port={port}")
    (tmp_path / "server.py").write_text(source)
    return tmp_path


def test_python_server_py(tmp_path):
    port = _free_port()
    callback = _serve_and_drive([sys.executable, "server.py"], port, _user_project(tmp_path, port))
    assert callback["status"] == "COMPLETED" and callback["reward"] == 1.0


def test_uvicorn_server_app(tmp_path):
    port = _free_port()
    cmd = [sys.executable, "-m", "uvicorn", "server:app", "--host", "127.0.0.1", "--port", str(port)]
    callback = _serve_and_drive(cmd, port, _user_project(tmp_path, port))
    assert callback["status"] == "COMPLETED" and callback["reward"] == 1.0


def test_osmosis_compat_serve(tmp_path):
    port = _free_port()
    cmd = [str(BIN / "osmosis-compat"), "serve", "-m", "server:agent_loop", "--local", "-H", "127.0.0.1",
           "-p", str(port)]
    callback = _serve_and_drive(cmd, port, _user_project(tmp_path, port))
    assert callback["status"] == "COMPLETED" and callback["reward"] == 1.0
