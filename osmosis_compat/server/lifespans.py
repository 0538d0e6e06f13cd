"""Running the lifespans of ASGI sub-apps that a parent app dispatches to.

Starlette does not run the lifespan of a mounted app, yet every rollout app starts its engine in its lifespan and
drains it there on shutdown. :class:`SubAppLifespans` drives each sub-app through the ASGI lifespan protocol
itself — as uvicorn would — each in its own task, so startup and shutdown run exactly as if the app were
served alone, and the sub-apps drain *concurrently* on shutdown (total shutdown time = the slowest drain).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

__all__ = ["LifespanStartupError", "SubAppLifespans"]

_RETURNED = "osmosis_compat.lifespan.returned"  # internal: the app's lifespan call returned


class LifespanStartupError(RuntimeError):
    """A sub-app's lifespan startup failed; the apps already started have been shut down again."""


class _Lifespan:
    """One sub-app's lifespan, driven over ASGI messages from a dedicated task."""

    def __init__(self, app: Any, label: str) -> None:
        self.app = app
        self.label = label
        self.state: dict[str, Any] = {}
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        self._task = asyncio.get_running_loop().create_task(self._main(scope), name=f"lifespan:{self.label}")
        await self._inbox.put({"type": "lifespan.startup"})
        message = await self._outbox.get()
        if message["type"] == _RETURNED:
            return  # an app without lifespan support: nothing to start or stop
        if message["type"] != "lifespan.startup.complete":
            raise LifespanStartupError(f"{self.label}: startup failed: {_reason(message)}")

    async def shutdown(self) -> None:
        if self._task is None or self._task.done():
            return
        await self._inbox.put({"type": "lifespan.shutdown"})
        message = await self._outbox.get()
        await asyncio.gather(self._task, return_exceptions=True)
        if message["type"] not in ("lifespan.shutdown.complete", _RETURNED):
            raise RuntimeError(f"{self.label}: shutdown failed: {_reason(message)}")

    async def _main(self, scope: dict[str, Any]) -> None:
        try:
            await self.app(scope, self._inbox.get, self._outbox.put)
        except BaseException as exc:  # an app that raises instead of answering: report it as a failed step
            await self._outbox.put({"type": "lifespan.startup.failed", "message": f"{type(exc).__name__}: {exc}"})
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return
        # Returned: after its shutdown step, or at once for an app that does not support lifespans.
        await self._outbox.put({"type": _RETURNED})


class SubAppLifespans:
    """Start a set of ASGI apps' lifespans in order, stop them concurrently.

    ``startup()`` raises :class:`LifespanStartupError` if any app fails, after shutting down those already
    started. ``state_of(app)`` is the lifespan state the app yielded (merged into its requests' scope).
    """

    def __init__(self, apps: Sequence[tuple[str, Any]]) -> None:
        self._lifespans = [_Lifespan(app, label) for label, app in apps]
        self._started: list[_Lifespan] = []

    async def startup(self) -> None:
        for lifespan in self._lifespans:
            try:
                await lifespan.startup()
            except BaseException:
                await self.shutdown()
                raise
            self._started.append(lifespan)

    async def shutdown(self) -> None:
        started, self._started = self._started, []
        results = await asyncio.gather(*(lifespan.shutdown() for lifespan in started), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise RuntimeError("; ".join(str(e) for e in errors))

    def state_of(self, app: Any) -> dict[str, Any]:
        for lifespan in self._lifespans:
            if lifespan.app is app:
                return lifespan.state
        return {}


def _reason(message: dict[str, Any]) -> str:
    """The failure message of a lifespan step; Starlette sends a whole traceback, whose last line says it."""
    lines = [line for line in str(message.get("message") or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no reason given"
