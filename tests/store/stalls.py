"""Faults at an exact Redis command, for the "nothing half-admitted" tests: a TCP proxy between the store and a real
``redis-server`` that watches the commands going through.

- :meth:`StallingProxy.stop_redis_at` — when a command containing ``marker`` passes (e.g. the SHA of the store's
  finish script, sent with ``EVALSHA``), the real ``redis-server`` is stopped with ``SIGSTOP`` *before* the command
  reaches it: the command waits in the server's socket buffer and runs when the test sends ``SIGCONT`` — a hung
  Redis at exactly that moment;
- :meth:`StallingProxy.lose_replies_at` — the command reaches Redis and runs, but its reply (and every later one on
  that connection) is held back until :meth:`release`: a reply lost on the network.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from typing import Any

__all__ = ["StallingProxy", "script_sha", "wait_until_redis_answers"]


def script_sha(text: str) -> bytes:
    """The SHA-1 ``EVALSHA`` sends for a script (what the proxy watches for)."""
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest().encode()


def wait_until_redis_answers(port: int, timeout: float = 10.0) -> None:
    """PING until the server answers (after ``SIGCONT``), then give it a moment to run what was queued."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    time.sleep(0.2)
                    return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError("redis-server does not answer")


class StallingProxy:
    """``async with StallingProxy(redis) as proxy:`` — ``proxy.url`` is a redis URL through the proxy."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis
        self.url = ""
        self._server: asyncio.base_events.Server | None = None
        self._stop_marker: bytes | None = None
        self._lose_marker: bytes | None = None
        self._holding = asyncio.Event()
        self._holding.set()  # set = replies flow
        self.stopped = asyncio.Event()
        self.lost = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> StallingProxy:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"redis://127.0.0.1:{port}/0"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.cont()
        self.release()
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def stop_redis_at(self, marker: bytes) -> None:
        """SIGSTOP the server when the next command containing ``marker`` passes (sets :attr:`stopped`)."""
        self.stopped.clear()
        self._stop_marker = marker

    def lose_replies_at(self, marker: bytes) -> None:
        """Hold back the replies of the connection that sends ``marker``, from that command on (sets :attr:`lost`)."""
        self.lost.clear()
        self._lose_marker = marker

    def cont(self) -> None:
        """SIGCONT the server (no-op when it runs)."""
        if self.redis.proc is not None:
            os.kill(self.redis.proc.pid, signal.SIGCONT)

    def release(self) -> None:
        """Let held replies flow again."""
        self._holding.set()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.redis.port)
        held = asyncio.Event()
        held.set()  # set = this connection's replies flow

        async def requests() -> None:
            while data := await reader.read(65536):
                if self._stop_marker is not None and self._stop_marker in data:
                    self._stop_marker = None
                    os.kill(self.redis.proc.pid, signal.SIGSTOP)
                    self.stopped.set()
                if self._lose_marker is not None and self._lose_marker in data:
                    self._lose_marker = None
                    self._holding.clear()
                    held.clear()
                    self.lost.set()
                upstream_writer.write(data)
                await upstream_writer.drain()
            upstream_writer.close()

        async def replies() -> None:
            while data := await upstream_reader.read(65536):
                if not held.is_set():
                    await self._holding.wait()
                    held.set()
                writer.write(data)
                await writer.drain()
            writer.close()

        tasks = [asyncio.create_task(requests()), asyncio.create_task(replies())]
        self._tasks.update(tasks)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._tasks.difference_update(tasks)
            for w in (writer, upstream_writer):
                w.close()
