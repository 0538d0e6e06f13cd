"""Rollout servers in child processes on 127.0.0.1: osmosis-compat's (:class:`ServerProcess`) and the REAL
osmosis-ai's, run from its side venv (:class:`UpstreamServer`, :mod:`.venvs`).

``UpstreamServer(path, "0.3.8")`` imports ``path`` (a Python file, e.g. an entrypoint written for 0.3) in the side
interpreter and serves its ``app`` with uvicorn. The upstream server writes trajectories under ``$HOME/.osmosis``:
``HOME`` and ``_OSMOSIS_ROLLOUT_ARTIFACT_ROOT`` point into a temporary directory, so nothing lands in the real home.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .venvs import require_upstream, upstream_env

__all__ = ["ServerProcess", "UpstreamServer", "free_port"]

_SERVE = r"""
import importlib.util, sys, uvicorn
path, attr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, path.rsplit("/", 1)[0])
spec = importlib.util.spec_from_file_location("entrypoint", path)
module = importlib.util.module_from_spec(spec)
sys.modules["entrypoint"] = module
spec.loader.exec_module(module)
uvicorn.run(getattr(module, attr), host="127.0.0.1", port=port, log_level="warning")
"""


def free_port() -> int:
    """A port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """``with ServerProcess(path) as server:`` — ``server.url`` serves ``path``'s ``app`` (or ``attr``) with
    osmosis-compat, in a child process of this interpreter (``kill()`` ends it with SIGKILL). ``env`` adds
    environment variables; ``port`` reuses a port (a restart)."""

    def __init__(
        self, path: Path, *, attr: str = "app", env: dict[str, str] | None = None, port: int | None = None
    ) -> None:
        self.path, self.attr, self.port = Path(path), attr, port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_env = dict(env or {})
        self.log_text = ""

    def interpreter(self, home: str) -> tuple[str, dict[str, str]]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(HOME=home, _OSMOSIS_ROLLOUT_ARTIFACT_ROOT=os.path.join(home, "artifacts"), **self.extra_env)
        return sys.executable, env

    def kill(self) -> None:
        """SIGKILL: the process dies with whatever it was doing."""
        self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> ServerProcess:
        import httpx

        self._home = tempfile.TemporaryDirectory(prefix="server-home-")
        python, env = self.interpreter(self._home.name)
        self._log = open(os.path.join(self._home.name, "server.log"), "w+")
        self.proc = subprocess.Popen(
            [python, "-c", _SERVE, str(self.path), self.attr, str(self.port)],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.log()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code in (200, 401):
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise AssertionError(f"server did not start in 120 s: {self.log()[-3000:]}")

    def log(self) -> str:
        """What the server printed so far."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read()

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log_text = self.log()
        self._log.close()
        self._home.cleanup()


class UpstreamServer(ServerProcess):
    """``with UpstreamServer(path, release) as server:`` — ``path``'s ``app`` served by the real osmosis-ai
    ``release`` from its side venv."""

    def __init__(self, path: Path, release: str, *, attr: str = "app", env: dict[str, str] | None = None) -> None:
        super().__init__(path, attr=attr, env=env)
        self.release = release

    def interpreter(self, home: str) -> tuple[str, dict[str, str]]:
        python = require_upstream(self.release)
        env = upstream_env(
            self.release, {"HOME": home, "_OSMOSIS_ROLLOUT_ARTIFACT_ROOT": os.path.join(home, "artifacts"), **self.extra_env}
        )
        return str(python), env
