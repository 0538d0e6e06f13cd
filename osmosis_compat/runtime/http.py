"""The process-wide HTTP client pool.

Upstream built a new ``httpx.AsyncClient`` for every rollout — most of its per-rollout server CPU. Here every
outbound call (model calls, callbacks, the bridge) borrows a pooled client keyed by its settings. httpx clients
are bound to the event loop they first ran on, so the pool is kept per loop and dropped with the loop.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

import httpx

__all__ = ["ClientSettings", "get_client", "aclose_clients"]


@dataclass(frozen=True)
class ClientSettings:
    """What distinguishes one pooled client from another."""

    timeout_seconds: float = 300.0
    connect_timeout_seconds: float = 10.0
    max_connections: int = 100
    max_keepalive_connections: int = 20

    def build(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout_seconds, connect=self.connect_timeout_seconds),
            limits=httpx.Limits(
                max_connections=self.max_connections,
                max_keepalive_connections=self.max_keepalive_connections,
            ),
        )


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


async def aclose_clients() -> None:
    """Close every pooled client of the running loop (called when a server shuts down)."""
    loop = asyncio.get_running_loop()
    pool = _pools.pop(loop, {})
    for client in pool.values():
        await client.aclose()
