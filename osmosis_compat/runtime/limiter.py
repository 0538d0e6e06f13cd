"""Concurrency slots with queued/running counters (workflow spec §2.14 ``ConcurrencyLimiter``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["ConcurrencyLimiter"]


class ConcurrencyLimiter:
    """At most ``max_concurrent`` holders at once (``None`` = unlimited).

    ``queued`` counts callers waiting for a slot, ``running`` those holding one; both stay right on success,
    exceptions and cancellation.
    """

    def __init__(self, *, max_concurrent: int | None) -> None:
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError("max_concurrent must be >= 1 or None")
        self.max_concurrent = max_concurrent
        self.queued = 0
        self.running = 0
        self._semaphore = asyncio.Semaphore(max_concurrent) if max_concurrent else None

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[None]:
        """Hold one slot for the duration of the ``async with`` block."""
        if self._semaphore is None:
            self.running += 1
            try:
                yield
            finally:
                self.running -= 1
            return
        self.queued += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.queued -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._semaphore.release()

    def snapshot(self) -> dict[str, int | None]:
        """``{"max_concurrent", "queued", "running"}``."""
        return {"max_concurrent": self.max_concurrent, "queued": self.queued, "running": self.running}
