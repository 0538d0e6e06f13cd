"""The process-wide HTTP client pool.

Upstream built a new ``httpx.AsyncClient`` for every rollout — most of its per-rollout server CPU. Here every
outbound call (model calls, callbacks, the bridge) borrows a pooled client keyed by its settings. httpx clients
are bound to the event loop they first ran on, so the pool is kept per loop and dropped with the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

__all__ = ["ClientSettings", "get_client", "aclose_clients", "hold_clients"]


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
