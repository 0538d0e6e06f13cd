"""``MemoryStore``: the default rollout store, a dict in this process (nothing to install; one process only)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .base import CancelListener, LeaseCheck, RolloutRecord, RolloutStore, Snapshot, Watch

__all__ = ["MemoryStore"]

#: Fields whose change wakes waiters (``wait_for_change``).
_VERSIONED = frozenset({"status", "answer"})


class MemoryStore(RolloutStore):
    """Records in a dict, dropped lazily and by :meth:`prune` when their retention ends.

    Waiters are futures per key, woken on every version change; a cancel request calls the owner's listener
    directly.
    """

    shared = False

    def __init__(self) -> None:
        self._records: dict[str, RolloutRecord] = {}
        self._expires: dict[str, float] = {}
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._listeners: dict[str, CancelListener] = {}
        self._cancel_tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._records)

    def _live(self, key: str, now: float | None = None) -> RolloutRecord | None:
        record = self._records.get(key)
        if record is None:
            return None
        expires = self._expires.get(key)
        if expires is not None and (now if now is not None else time.time()) >= expires:
            self._drop(key)
            return None
        return record

    def _drop(self, key: str) -> None:
        self._records.pop(key, None)
        self._expires.pop(key, None)
        self._wake(key)

    def _wake(self, key: str) -> None:
        for waiter in self._waiters.pop(key, ()):
            if not waiter.done():
                waiter.set_result(None)

    async def create(self, record: RolloutRecord) -> RolloutRecord | None:
        existing = self._live(record.key)
        if existing is not None:
            return existing
        if not record.created_at:
            record.created_at = time.time()
        self._records[record.key] = record
        return None

    async def get(self, key: str) -> RolloutRecord | None:
        return self._live(key)

    def peek(self, key: str) -> RolloutRecord | None:
        """:meth:`get` without awaiting (this store never blocks)."""
        return self._live(key)

    async def update(self, key: str, **changes: Any) -> bool:
        record = self._live(key)
        if record is None or record.finished:
            return False
        bump = any(name in _VERSIONED and getattr(record, name) != value for name, value in changes.items())
        for name, value in changes.items():
            setattr(record, name, value)
        if bump:
            record.version += 1
            self._wake(key)
        return True

    async def finish(
        self,
        key: str,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        retention: float | None = None,
        expired: tuple[str, dict[str, Any]] | None = None,
    ) -> bool:
        record = self._live(key)
        if record is None or record.finished:
            return False
        now = time.time()
        if expired is not None and record.lease_deadline is not None and now >= record.lease_deadline:
            status, result = expired
        record.status = status
        record.result = result
        record.finished_at = now
        record.version += 1
        self._wake(key)
        if retention is not None:
            if retention <= 0:
                self._drop(key)
            else:
                self._expires[key] = record.finished_at + retention
        return True

    async def delete(self, key: str) -> None:
        self._drop(key)

    @asynccontextmanager
    async def watch(self, key: str) -> AsyncIterator[Watch]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, set()).add(future)
        try:
            yield _MemoryWatch(self, key, future)
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(future)
                if not waiters:
                    del self._waiters[key]

    async def renew_lease(self, key: str, digest: str, deadline: float, now: float) -> LeaseCheck:
        record = self._live(key)
        if record is None or record.lease_digest is None:
            return LeaseCheck("unknown")
        if not secrets.compare_digest(record.lease_digest, digest):
            return LeaseCheck("forbidden")
        if record.finished:
            return LeaseCheck("finished", record.snapshot())
        if record.lease_deadline is not None and now >= record.lease_deadline:
            return LeaseCheck("expired", record.snapshot())
        record.lease_deadline = deadline
        return LeaseCheck("renewed", record.snapshot())

    async def keys(self, *, prefix: str | None = None) -> list[str]:
        now = time.time()
        return [k for k in list(self._records) if (prefix is None or k.startswith(prefix)) and self._live(k, now)]

    async def request_cancel(self, key: str) -> None:
        record = self._live(key)
        if record is None:
            return
        record.cancel_requested = True  # set on finished records too: the task may still be stopping
        listener = self._listeners.get(record.owner)
        if listener is not None:
            await listener(key)

    def on_cancel(self, owner: str, listener: CancelListener) -> None:
        self._listeners[owner] = listener

    def prune(self, now: float | None = None) -> int:
        """Drop records whose retention ended; return how many."""
        now = time.time() if now is None else now
        stale = [key for key, expires in self._expires.items() if now >= expires]
        for key in stale:
            self._drop(key)
        return len(stale)


class _MemoryWatch(Watch):
    def __init__(self, store: MemoryStore, key: str, future: asyncio.Future[None]) -> None:
        self.store, self.key, self.future = store, key, future

    async def wait(self, seen: Snapshot, timeout: float) -> Snapshot | None:
        record = self.store._live(self.key)
        if record is not None and record.version == seen.version and not self.future.done():
            try:
                await asyncio.wait_for(asyncio.shield(self.future), timeout)
            except (TimeoutError, asyncio.TimeoutError):
                pass
            record = self.store._live(self.key)
        return None if record is None else record.snapshot()
