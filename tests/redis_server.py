"""A real Redis server for the tests: the distribution's ``redis-server``, started on a free loopback port.

Skipped (with the reason) where no ``redis-server`` is installed — except under ``CI=true``, where the store tests
must run: ``.ci/run`` installs it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

__all__ = ["RedisServer", "require_redis_server", "two_processes"]


def require_redis_server() -> str:
    """The ``redis-server`` binary, or skip (fail under CI)."""
    import pytest

    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail("redis-server is not installed; .ci/run must install it (apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    return binary


class RedisServer:
    """``with RedisServer() as redis:`` — ``redis.url``; ``restart()`` stops and starts it on the same port, with
    its data kept (an RDB snapshot is written on shutdown and loaded again)."""

    def __init__(self) -> None:
        self.binary = require_redis_server()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.dir = tempfile.TemporaryDirectory(prefix="test-redis-")
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        args = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir.name,
            "--save", "", "--appendonly", "no", "--protected-mode", "yes",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self, *, save: bool = True) -> None:
        if self.proc is None:
            return
        if save:  # SHUTDOWN SAVE writes the dataset, so a restart keeps it
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"SHUTDOWN SAVE\r\n")
            except OSError:
                pass
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def flush(self) -> None:
        """Drop every key (FLUSHALL)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
            conn.sendall(b"FLUSHALL\r\n")
            assert conn.recv(16).startswith(b"+OK")

    def restart(self, downtime: float = 0.0) -> None:
        self.stop()
        time.sleep(downtime)
        self.start()

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(save=False)
        self.dir.cleanup()


def has_rdb(server: RedisServer) -> bool:
    return Path(server.dir.name, "dump.rdb").exists()


@asynccontextmanager
async def two_processes(url: str) -> AsyncIterator[tuple[Any, Any]]:
    """Two started Redis stores on ``url`` in one fresh namespace, each with its own connections and id — what two
    server processes have."""
    from osmosis_compat.runtime.store import open_store

    namespace = f"t{time.monotonic_ns()}:"
    first = open_store(url).namespaced(namespace)
    second = open_store(url).namespaced(namespace)
    await first.start()
    await second.start()
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()
