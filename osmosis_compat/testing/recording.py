"""What the fake controllers remember, and how a test waits for it across threads and event loops.

A fake served by :func:`~osmosis_compat.testing.serving.serve_app` handles requests in uvicorn's thread
while the test awaits results in its own loop, so records are guarded by a lock and waiters are woken
with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["RecordedRequest", "StatusScript", "StatusScriptSlot", "RecordLog", "UnexpectedStatus", "RolloutTimeout"]

T = TypeVar("T")


@dataclass(frozen=True)
class RecordedRequest:
    """One request a fake received: lower-cased ``headers``, parsed JSON ``body`` (``None`` if not JSON),
    the ``status_code`` it was answered with, and the rollout/sample ids it was attributed to."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status_code: int
    rollout_id: str | None = None
    sample_id: str | None = None
    received_at: float = field(default_factory=time.monotonic)


class StatusScript:
    """HTTP statuses a fake endpoint answers with, consumed one per request, then ``default`` forever.

    ``StatusScript([500, 500])`` fails twice then succeeds; ``StatusScript([], default=500)`` always
    fails; ``StatusScript([204])`` answers the first request with an empty 204. Thread-safe.
    """

    def __init__(self, statuses: Iterable[int] = (), *, default: int = 200) -> None:
        self._pending = list(statuses)
        self.default = default
        self._lock = threading.Lock()
        for status in [*self._pending, default]:
            if not 100 <= int(status) <= 599:
                raise ValueError(f"not an HTTP status: {status!r}")

    @classmethod
    def coerce(cls, value: StatusScript | Iterable[int] | int | None) -> StatusScript:
        """Accept a script, a list of statuses, a single always-used status, or ``None`` (always 200)."""
        if isinstance(value, StatusScript):
            return value
        if value is None:
            return cls()
        if isinstance(value, int):
            return cls(default=value)
        return cls(value)

    def next_status(self) -> int:
        """The status for the next request."""
        with self._lock:
            return self._pending.pop(0) if self._pending else self.default

    def __repr__(self) -> str:
        return f"StatusScript({self._pending!r}, default={self.default})"


class StatusScriptSlot:
    """Attribute holding a :class:`StatusScript`; assigning a list, an int or ``None`` coerces it, so
    ``gate.callback_script = [500, 500]`` works while the fake is serving."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._attr = f"_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return getattr(instance, self._attr)

    def __set__(self, instance: Any, value: StatusScript | Iterable[int] | int | None) -> None:
        setattr(instance, self._attr, StatusScript.coerce(value))


class UnexpectedStatus(RuntimeError):
    """A rollout server answered an admission request with a status the driver does not accept."""

    def __init__(self, message: str, *, status_code: int, body: Any, response: Any = None) -> None:
        super().__init__(f"{message}: HTTP {status_code} {body!r}")
        self.status_code = status_code
        self.body = body
        self.response = response


class RolloutTimeout(TimeoutError):
    """The expected callback(s) did not arrive in time; ``record`` holds what did arrive."""

    def __init__(self, message: str, record: Any) -> None:
        super().__init__(message)
        self.record = record


@dataclass(eq=False)
class _Waiter(Generic[T]):
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    match: Callable[[T], bool]
    missing: int


class RecordLog(Generic[T]):
    """An append-only, thread-safe list that coroutines in any event loop can wait on.

    Waiting is incremental (each append is checked once per waiter), so a benchmark with thousands of
    concurrent rollouts and records stays linear.
    """

    def __init__(self) -> None:
        self._items: list[T] = []
        self._lock = threading.Lock()
        self._waiters: list[_Waiter[T]] = []

    def append(self, item: T) -> None:
        """Add ``item`` and wake every waiter that now has all the items it waits for."""
        ready: list[_Waiter[T]] = []
        with self._lock:
            self._items.append(item)
            for waiter in self._waiters:
                if waiter.match(item):
                    waiter.missing -= 1
                    if waiter.missing <= 0:
                        ready.append(waiter)
            if ready:
                self._waiters = [w for w in self._waiters if w.missing > 0]
        for waiter in ready:
            waiter.loop.call_soon_threadsafe(_resolve, waiter.future)

    def snapshot(self) -> list[T]:
        """A copy of the items so far."""
        with self._lock:
            return list(self._items)

    async def wait_for_count(
        self, match: Callable[[T], bool], count: int, timeout: float, *, start: int = 0
    ) -> bool:
        """Wait until ``count`` items from position ``start`` on satisfy ``match``; ``False`` on timeout
        (never raises for it)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            missing = count - sum(1 for item in self._items[start:] if match(item))
            if missing <= 0:
                return True
            waiter = _Waiter(loop, loop.create_future(), match, missing)
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter.future, timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
