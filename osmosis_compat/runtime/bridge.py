"""The streaming bridge: a local OpenAI-compatible chat endpoint in front of any upstream policy.

Framework integrations (Strands through LiteLLM, OpenAI Agents through its model classes) make their own HTTP
calls to an OpenAI-compatible base URL, streaming or not, with tools in the body. When such code runs for a
controller that speaks another dialect (the legacy TrainGate: non-streaming, ``rollout_id`` in the body, tools
declared once at init), the runtime hands the framework a **route** of this bridge instead of the controller's
URL. The bridge receives the framework's request, gives its JSON body to the route's handler (which makes the
upstream call in the right dialect and returns a ``chat.completion`` dict), and answers in the shape the
framework asked for: JSON, or a ``text/event-stream`` synthesised from the completion (:mod:`.sse`) when the
request had ``"stream": true``.

Design (why it looks like this):

- **One server per event loop**, started lazily on ``127.0.0.1`` with an ephemeral port in the running loop
  (uvicorn's HTTP protocol on an asyncio server, no lifespan, no signal handlers, no thread). httpx clients and
  upstream pools are loop-bound, so a loop-bound bridge needs no locking or cross-thread hops.
- **Per-rollout routes** ``/r/<token>/chat/completions`` (also ``/r/<token>/v1/chat/completions``), with an
  unguessable ``secrets.token_urlsafe`` token; a closed route answers 404. Nothing else is served.
- **In process when it can be**: the runtime's pooled HTTP clients (which the Osmosis Strands and OpenAI Agents
  integrations use) hand requests for the bridge's origin straight to it on the same loop
  (``runtime.http.serve_in_process``): no socket, no HTTP framing, same replies. Any other client — a workflow's
  own ``AsyncOpenAI``, plain ``litellm`` — goes over TCP to the same routes.
- **Errors never trigger client retries**: upstream calls already went through the one retry loop, so every
  error reply carries ``x-should-retry: false`` (honoured by the ``openai`` client that LiteLLM and the Agents
  SDK use) and an OpenAI-style ``{"error": {...}}`` body.
- The bridge knows no API package: the handler (built by the adapters) decides how the upstream body looks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import socket
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from .http import serve_in_process
from .sse import completion_to_chunks, encode_sse

__all__ = [
    "BridgeError",
    "BridgeRoute",
    "ChatBridge",
    "ChatHandler",
    "aclose_bridge",
    "get_bridge",
]

logger = logging.getLogger("osmosis_compat.runtime.bridge")

#: A route's handler: the framework's request body (JSON object) → a ``chat.completion`` dict.
ChatHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

_MAX_BODY_BYTES = 64 * 1024 * 1024


class BridgeError(Exception):
    """Raised by a handler to answer the framework with ``status_code`` and ``message`` (no client retry)."""

    def __init__(self, message: str, status_code: int = 502, *, error_type: str = "upstream_error") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type


@dataclass
class BridgeRoute:
    """One open route: hand ``base_url`` (and ``api_key``) to the framework as its OpenAI base URL.

    Clients append ``/chat/completions`` to ``base_url``. ``calls`` counts the requests the route answered.
    """

    token: str
    base_url: str
    handler: ChatHandler
    calls: int = 0

    @property
    def api_key(self) -> str:
        """A key to give the framework's client (the bridge authorises by the route token in the path)."""
        return "bridge-" + self.token[:8]


@dataclass
class ChatBridge:
    """The bridge of one event loop (see the module docstring). Use :func:`get_bridge` to obtain it."""

    host: str = "127.0.0.1"
    port: int = 0
    _routes: dict[str, BridgeRoute] = field(default_factory=dict)
    _server: Any = None
    _state: Any = None
    _lock: asyncio.Lock | None = None
    _unregister: Callable[[], None] | None = None
    #: Requests answered in process since start (the runtime's pooled clients on this loop).
    in_process_requests: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def tcp_requests(self) -> int:
        """Requests answered over TCP since start (those from the runtime's pooled clients come in process)."""
        return self._state.total_requests if self._state is not None else 0

    async def start(self) -> None:
        """Bind ``127.0.0.1:0`` and start serving in the running loop (idempotent, safe to race)."""
        if self._server is not None:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._server is None:
                await self._start()

    async def _start(self) -> None:
        import uvicorn
        from uvicorn.server import ServerState

        config = uvicorn.Config(self._asgi, host=self.host, port=0, lifespan="off", log_level="warning",
                                access_log=False, timeout_keep_alive=30, interface="asgi3",
                                proxy_headers=False)
        config.load()
        self._state = ServerState()
        state = self._state
        # proto=IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets whose proto says TCP (Nagle +
        # delayed ACK would add ~40 ms to every keep-alive request).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        sock.listen(1024)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]

        def protocol() -> asyncio.Protocol:
            return config.http_protocol_class(config=config, server_state=state, app_state={})  # type: ignore[call-arg]

        self._server = await asyncio.get_running_loop().create_server(protocol, sock=sock, backlog=1024)
        self._unregister = serve_in_process(self.host, self.port, self._in_process)
        logger.debug("chat bridge listening on %s", self.url)

    async def aclose(self) -> None:
        """Stop accepting, close idle keep-alive connections and the listening socket; drop all routes."""
        server, self._server = self._server, None
        self._routes.clear()
        if self._unregister is not None:
            self._unregister()
            self._unregister = None
        if server is None:
            return
        server.close()
        for connection in list(self._state.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(server.wait_closed(), timeout=2.0)
        except asyncio.TimeoutError:  # a stuck client connection must not block shutdown
            logger.warning("chat bridge: connections still open after 2 s at shutdown")

    @asynccontextmanager
    async def route(self, handler: ChatHandler) -> AsyncIterator[BridgeRoute]:
        """Open a route answered by ``handler`` for the duration of the ``async with`` block."""
        await self.start()
        token = secrets.token_urlsafe(24)
        route = BridgeRoute(token=token, base_url=f"{self.url}/r/{token}", handler=handler)
        self._routes[token] = route
        try:
            yield route
        finally:
            self._routes.pop(token, None)

    # -- answering requests ---------------------------------------------------------------------------------

    async def _respond(self, method: str, path: str, body: bytes | None) -> _Reply:
        """The reply to one request (``body`` ``None``: larger than the limit). Never raises."""
        parts = path.strip("/").split("/")
        # r/<token>/chat/completions  or  r/<token>/v1/chat/completions
        route = None
        if len(parts) in (4, 5) and parts[0] == "r" and parts[-2:] == ["chat", "completions"]:
            if len(parts) == 4 or parts[2] == "v1":
                route = self._routes.get(parts[1])
        if route is None:
            return _error(404, "no such bridge route (the rollout may have ended)", "not_found")
        if method != "POST":
            return _error(405, "method not allowed: POST chat completions only", "invalid_request_error")
        if body is None:
            return _error(413, "request body too large", "invalid_request_error")
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"request body is not JSON: {exc}", "invalid_request_error")
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            return _error(400, "request body must be an object with a 'messages' list", "invalid_request_error")
        route.calls += 1
        try:
            completion = await route.handler(request)
        except BridgeError as exc:
            return _error(exc.status_code, str(exc), exc.error_type)
        except Exception as exc:  # the framework must see an error reply, never a dropped connection
            logger.exception("chat bridge handler failed")
            return _error(500, f"{type(exc).__name__}: {exc}", "bridge_error")
        if request.get("stream"):
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            try:
                payload = encode_sse(completion_to_chunks(completion, include_usage=include_usage))
            except ValueError as exc:
                return _error(502, f"upstream reply cannot be streamed: {exc}", "upstream_error")
            return _Reply(200, payload, b"text/event-stream", ((b"cache-control", b"no-cache"),))
        payload = json.dumps(completion, separators=(",", ":"), ensure_ascii=False).encode()
        return _Reply(200, payload, b"application/json")

    async def _asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Requests over TCP (clients outside the runtime's pool, e.g. a workflow's own ``AsyncOpenAI``)."""
        if scope["type"] != "http":
            return
        reply = await self._respond(scope.get("method", ""), scope.get("path", ""), await _read_body(receive))
        await send({"type": "http.response.start", "status": reply.status, "headers": reply.header_list()})
        await send({"type": "http.response.body", "body": reply.payload})

    async def _in_process(self, request: httpx.Request) -> httpx.Response:
        """Requests from the runtime's pooled clients on this loop (see ``runtime.http.serve_in_process``)."""
        self.in_process_requests += 1
        body = await request.aread()
        reply = await self._respond(request.method, request.url.path, body if len(body) <= _MAX_BODY_BYTES else None)
        return httpx.Response(reply.status, headers=reply.header_list(), content=reply.payload, request=request)


@dataclass(frozen=True)
class _Reply:
    status: int
    payload: bytes
    content_type: bytes
    headers: tuple[tuple[bytes, bytes], ...] = ()

    def header_list(self) -> list[tuple[bytes, bytes]]:
        return [(b"content-type", self.content_type), (b"content-length", str(len(self.payload)).encode()),
                *self.headers]


def _error(status: int, message: str, error_type: str) -> _Reply:
    payload = json.dumps({"error": {"message": message, "type": error_type, "code": status}}).encode()
    return _Reply(status, payload, b"application/json", ((b"x-should-retry", b"false"),))


async def _read_body(receive: Any) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


_bridges: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ChatBridge]" = weakref.WeakKeyDictionary()


async def get_bridge() -> ChatBridge:
    """The running loop's bridge, started on first use."""
    loop = asyncio.get_running_loop()
    bridge = _bridges.get(loop)
    if bridge is None:
        bridge = _bridges[loop] = ChatBridge()
    await bridge.start()
    return bridge


async def aclose_bridge() -> None:
    """Close the running loop's bridge, if one was started (servers call this at shutdown)."""
    bridge = _bridges.pop(asyncio.get_running_loop(), None)
    if bridge is not None:
        await bridge.aclose()
