"""Issue 12 item 2: one final callback, always — also when SIGTERM arrives while a slow controller is still
answering the final callback. Before: the legacy server then also sent ERROR "server shut down" (50 of 50), and a
workflow server a second completion or grader callback. The callback that started wins.

Real uvicorn servers on 127.0.0.1: in a thread (graceful exit, what uvicorn's SIGTERM handler triggers) and as a
separate process stopped with a real SIGTERM.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request

from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import serve_app
from tests.legacy.wire.conftest import fast_settings, prompt
from tests.server.shutdown_server import InstantLoop

SCRIPT = Path(__file__).with_name("shutdown_server.py")
ROOT = Path(__file__).resolve().parents[2]


class SlowController:
    """A controller that receives callbacks at once but answers them only after ``delays[kind]`` seconds."""

    def __init__(self, **delays: float) -> None:
        self.delays = delays
        self.received: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self.app = FastAPI()

        async def receive(kind: str, request: Request) -> dict[str, str]:
            body = await request.json()
            with self._lock:
                self.received.append((kind, body))
            await asyncio.sleep(self.delays.get(kind, 0.0))
            return {"status": "ok"}

        @self.app.post("/v1/rollout/completed")
        async def legacy(request: Request) -> dict[str, str]:
            return await receive("legacy", request)

        @self.app.post("/callback/{kind}/{rollout_id}")
        async def workflow(kind: str, rollout_id: str, request: Request) -> dict[str, str]:
            return await receive(kind, request)

    def bodies(self, kind: str, rollout_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for k, body in self.received if k == kind and body.get("rollout_id") == rollout_id]

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for k, _ in self.received if k == kind)

    def wait_for(self, kind: str, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while self.count(kind) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.count(kind)} of {count} {kind!r} callbacks arrived")
            time.sleep(0.01)


@pytest.fixture
def controller() -> Iterator[Any]:
    slow = SlowController(legacy=1.5, completion=0.0, grader=0.0)
    with serve_app(slow.app) as served:
        slow.url = served.url  # type: ignore[attr-defined]
        yield slow


def legacy_init(controller_url: str, rollout_id: str) -> dict[str, Any]:
    return {"rollout_id": rollout_id, "server_url": controller_url, "messages": prompt(), "completion_params": {}}


def workflow_init(controller_url: str, rollout_id: str) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "initial_messages": prompt(),
        "chat_completions_url": controller_url + "/v1",
        "completion_callback_url": f"{controller_url}/callback/completion/{rollout_id}",
        "grader_callback_url": f"{controller_url}/callback/grader/{rollout_id}",
        "label": "4",
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerProcess:
    """``shutdown_server.py KIND PORT`` as a child process; :meth:`sigterm` stops it as a supervisor would."""

    def __init__(self, kind: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, str(SCRIPT), kind, str(self.port)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"server did not start: {self.process.communicate()[0]}")
            time.sleep(0.05)

    def sigterm(self, timeout: float = 20.0) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        output, _ = self.process.communicate(timeout=timeout)
        return self.process.returncode, output

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def post_all(url: str, bodies: list[dict[str, Any]], expected: int) -> None:
    with httpx.Client(timeout=10) as client:
        for body in bodies:
            response = client.post(url, json=body)
            assert response.status_code == expected, response.text


# -- legacy ------------------------------------------------------------------------------------------------------


def test_shutdown_while_completed_callbacks_are_answered_sends_no_error(controller):
    ids = [f"graceful-{n}" for n in range(20)]
    server = serve_app(create_app(InstantLoop(), settings=fast_settings(), drain_timeout_seconds=0.2))
    try:
        post_all(server.url + "/v1/rollout/init", [legacy_init(controller.url, rid) for rid in ids], 202)
        controller.wait_for("legacy", len(ids))  # every COMPLETED is in flight; the controller answers in 1.5 s
    finally:
        server.close()  # uvicorn's graceful exit, as on SIGTERM: drain 0.2 s, then cancel and abort
    time.sleep(0.3)  # an ERROR sent by the abort would have arrived by now
    for rid in ids:
        assert [body["status"] for body in controller.bodies("legacy", rid)] == ["COMPLETED"], rid


def test_sigterm_while_completed_callbacks_are_answered_sends_no_error(controller):
    ids = [f"sigterm-{n}" for n in range(10)]
    server = ServerProcess("legacy")
    try:
        post_all(server.url + "/v1/rollout/init", [legacy_init(controller.url, rid) for rid in ids], 202)
        controller.wait_for("legacy", len(ids))
        code, output = server.sigterm()
    finally:
        server.kill()
    assert code in (0, -signal.SIGTERM), output  # uvicorn re-raises the signal once it has shut down
    time.sleep(0.3)
    for rid in ids:
        assert [body["status"] for body in controller.bodies("legacy", rid)] == ["COMPLETED"], (rid, output)


def test_sigterm_while_the_agent_runs_still_sends_one_error(controller):
    # The other side of the rule: a rollout whose final callback had not started gets exactly one ERROR.
    from tests.legacy.wire.loops import SlowLoop

    server = serve_app(create_app(SlowLoop(), settings=fast_settings(), drain_timeout_seconds=0.1))
    try:
        post_all(server.url + "/v1/rollout/init", [legacy_init(controller.url, "still-running")], 202)
    finally:
        server.close()
    controller.wait_for("legacy", 1)
    time.sleep(0.3)
    bodies = controller.bodies("legacy", "still-running")
    assert [body["status"] for body in bodies] == ["ERROR"] and "shut down" in bodies[0]["error_message"]


# -- workflow (0.2.31 callbacks) ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("slow", "grader_status"), [
    ("grader", "success"),  # graded; its grader callback is the one in flight at SIGTERM, and it stands
    ("completion", "failure"),  # the completion stands; grading never ran, so the one grader callback says so
])
def test_sigterm_while_a_workflow_callback_is_answered_sends_no_second_one(controller, slow, grader_status):
    controller.delays.update(legacy=0.0, **{slow: 1.5})
    ids = [f"{slow}-inflight-{n}" for n in range(10)]
    server = ServerProcess("workflow")
    try:
        post_all(server.url + "/rollout", [workflow_init(controller.url, rid) for rid in ids], 200)
        controller.wait_for(slow, len(ids))
        code, output = server.sigterm()
    finally:
        server.kill()
    assert code in (0, -signal.SIGTERM), output  # uvicorn re-raises the signal once it has shut down
    time.sleep(0.3)
    for rid in ids:
        assert [b["status"] for b in controller.bodies("completion", rid)] == ["success"], (rid, output)
        assert [b["status"] for b in controller.bodies("grader", rid)] == [grader_status], (rid, output)
