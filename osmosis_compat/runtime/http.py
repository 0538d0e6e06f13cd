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
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

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
        if request.url.path.endswith("/chat/completions"):  # a model call: timed and traced (observability)
            return await _observed_model_call(request, self._send)
        return await self._send(request)

    async def _send(self, request: httpx.Request) -> httpx.Response:
        if _in_process:  # empty unless a bridge runs in this process: one truth test on the common path
            origin = _in_process.get((request.url.host, request.url.port))
            if origin is not None and origin.loop is asyncio.get_running_loop():
                return await origin.handler(request)
        return await self._network.handle_async_request(request)

    async def aclose(self) -> None:
        await self._network.aclose()


async def _observed_model_call(
    request: httpx.Request, send: Callable[[httpx.Request], Awaitable[httpx.Response]]
) -> httpx.Response:
    """A model call through the pool: its duration until the reply is read (a stream: until it is closed) goes
    to ``osmosis_model_call_duration_seconds``, and — with tracing on and no framework span of its own — it gets a
    ``chat`` span (:mod:`osmosis_compat.observability.tracing`). Both labelled with the rollout the call is for."""
    from osmosis_compat.observability import context, metrics, tracing

    found = metrics.peek()
    traced = tracing.chat_span_wanted()
    if found is None and not traced:
        return await send(request)
    scope = context.current()
    labels = (scope.protocol, scope.agent) if scope is not None else ("", "")
    started = time.perf_counter()
    span = tracing.start_span(
        "chat", {"http.request.method": request.method, "url.full": str(request.url.copy_with(query=None))}
    ) if traced else None
    try:
        response = await send(request)
    except BaseException as exc:
        if found is not None:
            found.child(found.model_calls, *labels, "error").observe(time.perf_counter() - started)
        if span is not None:
            span.record_exception(exc)
            span.end()
        raise
    if span is not None:
        span.set_attribute("http.response.status_code", response.status_code)
    outcome = "ok" if response.status_code < 400 else "error"

    def done() -> None:
        if found is not None:
            found.child(found.model_calls, *labels, outcome).observe(time.perf_counter() - started)
        if span is not None:
            span.end()

    response.stream = _ClosingStream(response.stream, done)
    return response


class _ClosingStream(httpx.AsyncByteStream):
    """A response stream that calls ``done`` once, when it is closed (read to the end or abandoned)."""

    def __init__(self, stream: Any, done: Callable[[], None]) -> None:
        self._stream = stream
        self._done: Callable[[], None] | None = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done()


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
