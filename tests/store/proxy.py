"""A round-robin HTTP reverse proxy for the scale-out tests: every request goes to the next backend in turn, as
a load balancer in front of several rollout-server processes would send it (request by request, not connection
by connection). Long-polls are forwarded with a long read timeout; a backend that is down answers 502."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

__all__ = ["RoundRobinProxy"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}


class RoundRobinProxy:
    """ASGI app forwarding to ``backends`` in turn; ``hits`` counts the requests each backend got."""

    def __init__(self, backends: list[str]) -> None:
        self.backends = backends
        self._next = itertools.cycle(range(len(backends)))
        self.hits = [0] * len(backends)
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if self._client is not None:
                        await self._client.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(120.0, connect=2.0), limits=httpx.Limits(max_connections=None))
        index = next(self._next)
        self.hits[index] += 1
        url = self.backends[index] + scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"] else "")
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.decode().lower() not in _HOP_BY_HOP]
        try:
            response = await self._client.request(scope["method"], url, headers=headers, content=body)
            status, payload = response.status_code, response.content
            out_headers = [(k.encode(), v.encode()) for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP]
        except httpx.HTTPError as exc:
            status, payload = 502, f'{{"detail": "backend unavailable: {type(exc).__name__}"}}'.encode()
            out_headers = [(b"content-type", b"application/json")]
        out_headers.append((b"content-length", str(len(payload)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": out_headers})
        await send({"type": "http.response.body", "body": payload})
