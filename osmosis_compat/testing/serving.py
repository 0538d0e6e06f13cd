"""Run an ASGI app on a real uvicorn server on 127.0.0.1 — in a background thread or in the current loop.

Tests talk to real sockets (brief: "real uvicorn servers on 127.0.0.1"), so the fakes, the rollout
servers under test and the benchmarks all start their servers through these two helpers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["serve_app", "serve_app_async", "ServerHandle", "AsyncServerHandle", "ServerStartError", "ServedFake"]

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost"}
_START_TIMEOUT_S = 15.0


class ServerStartError(RuntimeError):
    """The server did not start (lifespan startup failed, or it did not come up in time)."""


def _bind_loopback(host: str) -> socket.socket:
    """Bind a listening socket on a free port of ``host`` (loopback only: tests never leave the machine)."""
    if host not in _LOOPBACK_HOSTS:
        raise ValueError(f"refusing to bind {host!r}: the test servers only bind 127.0.0.1")
    # proto=IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets whose proto says TCP; with proto 0,
    # Nagle + delayed ACK add ~40 ms to every keep-alive request.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _make_server(app: Any, sock: socket.socket, **config: Any) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        # Leave the host process's signal handlers alone: this server lives inside a test or a benchmark.
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        async def main_loop(self) -> None:
            # uvicorn polls should_exit every 0.1 s; tests start and stop hundreds of servers, so
            # notice it within 10 ms and keep uvicorn's once-per-0.1 s housekeeping tick.
            counter = 0
            should_exit = await self.on_tick(counter)
            while not should_exit:
                for _ in range(10):
                    await asyncio.sleep(0.01)
                    if self.should_exit:
                        break
                counter = (counter + 1) % 864000
                should_exit = await self.on_tick(counter)

        async def _serve(self, sockets: Any = None) -> None:
            try:
                await super()._serve(sockets)
            except SystemExit as exc:  # uvicorn exits the *process* on a failed lifespan startup
                raise ServerStartError(f"server startup failed (exit code {exc.code})") from None

    options: dict[str, Any] = {"log_level": "warning", "lifespan": "on", "timeout_graceful_shutdown": 5}
    options.update(config)
    port = sock.getsockname()[1]
    return _Server(uvicorn.Config(app, host="127.0.0.1", port=port, **options))


class ServerHandle:
    """A uvicorn server running in a daemon thread. ``url`` is ``http://127.0.0.1:<port>``.

    ``close()`` asks the server to exit, which finishes open requests (up to 5 s), runs the app's
    lifespan shutdown, and joins the thread. Usable as a context manager.
    """

    def __init__(self, server: Any, thread: threading.Thread, port: int) -> None:
        self.server = server
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._thread = thread
        self.error: BaseException | None = None

    def close(self, timeout: float = 10.0) -> None:
        """Stop the server gracefully and join its thread (idempotent)."""
        self.server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.server.force_exit = True
            self._thread.join(timeout)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServerHandle(url={self.url!r})"


def serve_app(app: Any, *, host: str = "127.0.0.1", **uvicorn_options: Any) -> ServerHandle:
    """Start ``app`` on a free port of ``host`` in a background thread and return once it accepts requests.

    ``uvicorn_options`` are passed to ``uvicorn.Config`` (defaults: ``log_level="warning"``,
    ``lifespan="on"``, ``timeout_graceful_shutdown=5``). Raises :class:`ServerStartError` if the app's
    startup fails or the server is not up within 15 s, and ``ValueError`` for a non-loopback host.
    """
    sock = _bind_loopback(host)
    port = sock.getsockname()[1]
    server = _make_server(app, sock, **uvicorn_options)
    handle_box: list[ServerHandle] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # surfaced by serve_app / visible on the handle
            if handle_box:
                handle_box[0].error = exc
            else:
                errors.append(exc)
        finally:
            sock.close()

    errors: list[BaseException] = []
    thread = threading.Thread(target=run, name=f"uvicorn-127.0.0.1:{port}", daemon=True)
    handle = ServerHandle(server, thread, port)
    thread.start()
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive():
            cause = errors[0] if errors else None
            raise ServerStartError(f"server on port {port} stopped during startup: {cause!r}") from cause
        if time.monotonic() > deadline:
            handle.close(timeout=1.0)
            raise ServerStartError(f"server on port {port} did not start within {_START_TIMEOUT_S} s")
        time.sleep(0.005)
    handle_box.append(handle)
    return handle


class AsyncServerHandle:
    """A uvicorn server running as a task of the current event loop (no thread). ``await close()`` stops it."""

    def __init__(self, server: Any, task: asyncio.Task[None], port: int) -> None:
        self.server = server
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._task = task

    async def close(self) -> None:
        """Stop the server gracefully (lifespan shutdown included) and await its task (idempotent)."""
        self.server.should_exit = True
        await asyncio.shield(self._task)

    async def __aenter__(self) -> AsyncServerHandle:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncServerHandle(url={self.url!r})"


async def serve_app_async(app: Any, *, host: str = "127.0.0.1", **uvicorn_options: Any) -> AsyncServerHandle:
    """Start ``app`` as a task in the running event loop on a free port; return once it accepts requests.

    Same options and errors as :func:`serve_app`. Handy for benchmarks: server and client share one
    process and one loop, so no thread hop is measured.
    """
    sock = _bind_loopback(host)
    port = sock.getsockname()[1]
    server = _make_server(app, sock, **uvicorn_options)

    async def run() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            sock.close()

    task = asyncio.get_running_loop().create_task(run(), name=f"uvicorn-127.0.0.1:{port}")
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not server.started:
        if task.done():
            exc = task.exception()
            raise ServerStartError(f"server on port {port} stopped during startup: {exc!r}") from exc
        if time.monotonic() > deadline:
            server.should_exit = True
            raise ServerStartError(f"server on port {port} did not start within {_START_TIMEOUT_S} s")
        await asyncio.sleep(0.005)
    return AsyncServerHandle(server, task, port)


class ServedFake:
    """Mixin for the fake controllers: ``serve()`` / ``serve_async()`` run ``self.app`` and set ``self.url``."""

    app: Any
    url: str | None = None

    @contextlib.contextmanager
    def serve(self, **uvicorn_options: Any) -> Iterator[Any]:
        """Serve ``self.app`` in a background thread for the ``with`` block; yields ``self`` (``url`` set)."""
        if self.url is not None:
            raise RuntimeError(f"{type(self).__name__} is already being served at {self.url}")
        with serve_app(self.app, **uvicorn_options) as handle:
            self.url = handle.url
            try:
                yield self
            finally:
                self.url = None

    @contextlib.asynccontextmanager
    async def serve_async(self, **uvicorn_options: Any) -> Any:
        """Serve ``self.app`` as a task of the running loop for the ``async with`` block; yields ``self``."""
        if self.url is not None:
            raise RuntimeError(f"{type(self).__name__} is already being served at {self.url}")
        handle = await serve_app_async(self.app, **uvicorn_options)
        self.url = handle.url
        try:
            yield self
        finally:
            self.url = None
            await handle.close()

    def require_url(self) -> str:
        """The served URL; ``RuntimeError`` with a hint when the fake is not being served."""
        if self.url is None:
            raise RuntimeError(f"{type(self).__name__} is not served: use `with fake.serve():` first")
        return self.url
