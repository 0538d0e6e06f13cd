"""Serving like 0.3.8 (issue 19, item 5): idle connections kept 2,160 s, the port from ``_OSMOSIS_ROLLOUT_PORT``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from osmosis_compat.cli.demo import EXAMPLES_DIR
from osmosis_compat.cli.main import main

CALCULATOR = str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop"
STRANDS = str(EXAMPLES_DIR / "modern" / "v03" / "strands_calculator.py")
BIN = Path(sys.executable).parent


@pytest.fixture
def captured(monkeypatch):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: calls.append(kwargs))
    return calls


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("extra", [[], ["--workers", "2", "--store", "memory"]])
def test_every_uvicorn_run_keeps_connections_2160_s(captured, monkeypatch, extra):
    monkeypatch.delenv("_OSMOSIS_ROLLOUT_PORT", raising=False)
    if extra:
        pytest.importorskip("redis")
        monkeypatch.setattr("osmosis_compat.cli.serve.check_store", lambda args: None)
    code = main(["serve", "-m", CALCULATOR, "--local", "-H", "127.0.0.1", "--no-validate", *extra])
    assert code == 0 and captured[-1]["timeout_keep_alive"] == 2160 and captured[-1]["port"] == 9000
    # The metrics directory of --workers is gone once serve returns; so is the variable naming it, which every
    # process started later would otherwise inherit (and fail writing counters to a missing directory).
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ


def test_workflow_serve_flag_and_port_variable(captured, monkeypatch):
    port = _free_port()
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_PORT", str(port))
    assert main(["serve", "-m", STRANDS, "-H", "127.0.0.1", "--timeout-keep-alive", "75"]) == 0
    assert captured[-1]["timeout_keep_alive"] == 75 and captured[-1]["port"] == port
    assert main(["serve", "-m", STRANDS, "-H", "127.0.0.1", "-p", str(_free_port())]) == 0
    assert captured[-1]["port"] != port  # -p wins over the variable
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_PORT", "eighty")
    assert main(["serve", "-m", STRANDS, "-H", "127.0.0.1"]) == 1


def test_serve_agent_loop_keeps_connections_2160_s(captured):
    from osmosis_compat.cli.loading import _import_file
    from osmosis_compat.legacy.serve import serve_agent_loop

    loop = _import_file(CALCULATOR.split(":")[0]).agent_loop
    serve_agent_loop(loop, host="127.0.0.1", port=_free_port(), local_debug=True, validate=False)
    assert captured[-1]["timeout_keep_alive"] == 2160


def _read_response(conn: socket.socket) -> bytes:
    """One whole HTTP response: the body may arrive in a later segment than the headers."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = conn.recv(65536)
        if not chunk:
            return answer
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _start_own_server() -> tuple[subprocess.Popen, socket.socket]:
    """``osmosis-compat serve`` on a free port taken from ``_OSMOSIS_ROLLOUT_PORT``, and a connection proven to
    reach *this* server (its /health names our instance id): on a shared machine another process may take the port
    between choosing and binding it, and then this server exits instead (tried again on another port)."""
    import uuid

    for _attempt in range(3):
        port, instance = _free_port(), uuid.uuid4().hex
        env = {**os.environ, "_OSMOSIS_ROLLOUT_PORT": str(port), "_OSMOSIS_ROLLOUT_INSTANCE_ID": instance}
        proc = subprocess.Popen([str(BIN / "osmosis-compat"), "serve", "-m", CALCULATOR, "--local", "-H", "127.0.0.1",
                                 "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
            except OSError:
                time.sleep(0.2)
                continue
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = _read_response(conn)
            if answer.startswith(b"HTTP/1.1 200") and instance.encode() in answer:
                return proc, conn
            conn.close()
            break
        proc.terminate()
        proc.wait(timeout=20)
    raise AssertionError("could not start a server of our own")


def test_a_real_server_keeps_an_idle_connection_past_uvicorns_5_s():
    """On the wire: after 6 s idle (uvicorn's default closes at 5 s) the same connection still answers; the port
    came from _OSMOSIS_ROLLOUT_PORT."""
    proc, conn = _start_own_server()
    try:
        time.sleep(6)
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.recv(65536).startswith(b"HTTP/1.1 200")  # still open (closed by the old 5 s default: b"")
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
