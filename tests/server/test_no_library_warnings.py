"""Serving a legacy agent emits no library warnings into users' programs (issue 12).

FastAPI builds each request-body model's pydantic TypeAdapter when the route is created, with pydantic's
"'alias' … has no effect" warning suppressed. The legacy models are deferred (``defer_build``, for cheap agent
imports), so their adapters were built at the first request instead — outside that suppression — and every
``uvicorn server:app``, ``python server.py`` and user pytest run got the warning. Each check runs in a fresh
interpreter: once a model is built in a process the warning cannot show again.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_with_warnings_as_errors(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "error", "-W", "ignore::DeprecationWarning", "-c",
                           textwrap.dedent(code)], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_legacy_create_app_first_requests_warn_nothing():
    result = _run_with_warnings_as_errors(
        """
        import sys
        sys.path.insert(0, "examples/legacy")
        from fastapi.testclient import TestClient
        from calculator_agent import agent_loop
        from osmosis_ai.rollout import create_app

        client = TestClient(create_app(agent_loop))
        bad = client.post("/v1/rollout/init", json={"rollout_id": "r"})
        assert bad.status_code == 422, bad.text
        print("ok")
        """
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_mock_trainer_first_requests_warn_nothing():
    result = _run_with_warnings_as_errors(
        """
        from fastapi.testclient import TestClient
        from osmosis_ai.rollout.testing import create_mock_trainer_app

        client = TestClient(create_mock_trainer_app())
        chat = client.post("/v1/chat/completions", json={"rollout_id": "r", "model": "m",
                                                          "messages": [{"role": "user", "content": "hi"}]})
        assert chat.status_code == 200, chat.text
        done = client.post("/v1/rollout/completed", json={"rollout_id": "r", "status": "COMPLETED"})
        assert done.status_code == 200, done.text
        print("ok")
        """
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]
