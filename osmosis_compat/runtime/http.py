"""The process-wide HTTP client pool.

Upstream built a new ``httpx.AsyncClient`` for every rollout — most of its per-rollout server CPU. Here every
outbound call (model calls, callbacks, the bridge) borrows a pooled client keyed by its settings. httpx clients
are bound to the event loop they first ran on, so the pool is kept per loop and dropped with the loop.

A server running in this process (the runtime's streaming bridge) may also register its origin with
:func:`serve_in_process`: the pooled clients then hand requests for that origin to it directly, without a socket
or HTTP framing (the bridge is otherwise one extra local HTTP hop per model call). Any other client still reaches
the same server over TCP.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx

__all__ = ["ClientSettings", "InProcessHandler", "get_client", "aclose_clients", "hold_clients", "serve_in_process"]

#: Answers a request for a registered origin inside this process (see :func:`serve_in_process`).
InProcessHandler = Callable[[httpx.Request], Awaitable[httpx.Response]]


@dataclass(frozen=True)
class ClientSettings:
    """What distinguishes one pooled client from another."""

    timeout_seconds: float = 300.0
    connect_timeout_seconds: float = 10.0
    max_connections: int = 100
    max_keepalive_connections: int = 20

    def build(self) -> httpx.AsyncClient:
        limits = httpx.Limits(
            max_connections=self.max_connections,
            max_keepalive_connections=self.max_keepalive_connections,
        )
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout_seconds, connect=self.connect_timeout_seconds),
            limits=limits,
            transport=_InProcessFirst(httpx.AsyncHTTPTransport(limits=limits)),
        )


@dataclass(frozen=True)
class _InProcessOrigin:
    loop: asyncio.AbstractEventLoop
    handler: InProcessHandler


#: ``(host, port)`` → the in-process server answering it. Ports are unique while bound, so one table serves all loops.
_in_process: dict[tuple[str, int], _InProcessOrigin] = {}


def serve_in_process(host: str, port: int, handler: InProcessHandler) -> Callable[[], None]:
    """Let the pooled clients of the running loop answer ``http://host:port/…`` (URLs that spell the port out) by
    awaiting ``handler(request)``.

    The server behind the origin must keep listening on TCP: only the pooled clients of the loop that registered
    take the shortcut (a server's loop-bound state must not be used from another loop; clients elsewhere, or built
    by user code, connect as usual). The handler gets the request with its body readable (``await
    request.aread()``) and returns a complete response; the request's httpx timeouts do not apply to it (the
    handler bounds its own work). Returns a function that removes the registration (idempotent).
    """
    key = (host, port)
    origin = _InProcessOrigin(asyncio.get_running_loop(), handler)
    _in_process[key] = origin

    def unregister() -> None:
        if _in_process.get(key) is origin:
            del _in_process[key]

    return unregister


class _InProcessFirst(httpx.AsyncBaseTransport):
    """The pool's transport: registered in-process origins of the running loop first, the network otherwise."""

    def __init__(self, network: httpx.AsyncBaseTransport) -> None:
        self._network = network

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if _in_process:  # empty unless a bridge runs in this process: one truth test on the common path
            origin = _in_process.get((request.url.host, request.url.port))
            if origin is not None and origin.loop is asyncio.get_running_loop():
                return await origin.handler(request)
        return await self._network.handle_async_request(request)

    async def aclose(self) -> None:
        await self._network.aclose()


_pools: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[ClientSettings, httpx.AsyncClient]]" = (
    weakref.WeakKeyDictionary()
)


def get_client(settings: ClientSettings | None = None) -> httpx.AsyncClient:
    """The pooled client for ``settings`` on the running event loop (created on first use)."""
    settings = settings or ClientSettings()
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = {}
    client = pool.get(settings)
    if client is None or client.is_closed:
        client = pool[settings] = settings.build()
    return client


_holds: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int]" = weakref.WeakKeyDictionary()


async def aclose_clients() -> None:
    """Close every pooled client of the running loop (called when a server shuts down).

    Inside a :func:`hold_clients` block this does nothing: the block closes them when it ends.
    """
    loop = asyncio.get_running_loop()
    if _holds.get(loop):
        return
    pool = _pools.pop(loop, {})
    for client in pool.values():
        await client.aclose()


@contextlib.asynccontextmanager
async def hold_clients() -> AsyncIterator[None]:
    """Keep the running loop's pooled clients open for the block, then close them.

    For an app that hosts several servers (``server.mixed_app``): each one closes the pool when *it* has drained,
    which would cut the in-flight calls of the others; under a hold their ``aclose_clients()`` is deferred to
    the end of the block.
    """
    loop = asyncio.get_running_loop()
    _holds[loop] = _holds.get(loop, 0) + 1
    try:
        yield
    finally:
        _holds[loop] -= 1
        if not _holds[loop]:
            del _holds[loop]
            await aclose_clients()
