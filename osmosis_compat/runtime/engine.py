"""The rollout engine: admission, life cycle and graceful shutdown, for every protocol.

A protocol router turns a request into an idempotency *key* and two coroutines — ``prepare`` (work that must
succeed before the request is acknowledged, e.g. the legacy ``get_tools``) and ``run`` (the rollout itself,
which delivers its own outcome) — and hands them to :meth:`RolloutEngine.submit`:

- a key already known is not started twice: the duplicate gets the leader's ``prepare`` value
  (``created=False``); if the leader's ``prepare`` failed, duplicates fail the same way and the key is forgotten
  so a retry starts afresh;
- ``run`` executes in a tracked background task inside a concurrency slot;
- finished keys are remembered for ``record_ttl_seconds`` (``keep_completed=True``) or forgotten at once;
- on shutdown the engine stops admitting, lets in-flight rollouts drain for ``drain_timeout_seconds``, cancels
  what is left and awaits each one's ``abort`` (each bounded), so no accepted rollout ends in silence.

The engine keeps each rollout's :class:`Admission`; ``admission.outcome`` lets a future polling protocol hold a
result until it is pulled instead of pushing it with callbacks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .limiter import ConcurrencyLimiter

__all__ = ["Admission", "EngineClosedError", "RolloutEngine", "Submission"]

logger = logging.getLogger("osmosis_compat.runtime.engine")

T = TypeVar("T")


class EngineClosedError(RuntimeError):
    """The engine is shutting down and admits no new rollouts."""


@dataclass
class Admission:
    """One admitted rollout as the engine tracks it."""

    key: str
    admitted_at: float = field(default_factory=time.monotonic)
    """Monotonic time of admission — before waiting for a slot, so latency includes queueing."""
    started_at: float | None = None
    """Monotonic time the rollout got its concurrency slot."""
    finished_at: float | None = None
    aborted: bool = False
    outcome: Any = None
    """What the rollout produced, for protocols that hold results until pulled."""
    context: dict[str, Any] = field(default_factory=dict)
    """Free-form per-rollout state the protocol layer wants to keep with the admission."""


@dataclass(frozen=True)
class Submission(Generic[T]):
    """The answer to :meth:`RolloutEngine.submit`."""

    value: T
    created: bool
    admission: Admission


@dataclass
class _Record:
    future: asyncio.Future[Any]
    admission: Admission | None = None
    task: asyncio.Task[None] | None = None
    abort: Callable[[Admission], Awaitable[None]] | None = None
    completed_at: float | None = None


class RolloutEngine:
    """Admits rollouts by key and runs them as tracked background tasks."""

    def __init__(
        self,
        *,
        max_concurrent: int | None = None,
        record_ttl_seconds: float = 3600.0,
        cleanup_interval_seconds: float = 60.0,
        drain_timeout_seconds: float = 10.0,
        abort_timeout_seconds: float = 30.0,
        keep_completed: bool = True,
    ) -> None:
        self.limiter = ConcurrencyLimiter(max_concurrent=max_concurrent)
        self.record_ttl_seconds = record_ttl_seconds
        self.cleanup_interval_seconds = cleanup_interval_seconds
        self.drain_timeout_seconds = drain_timeout_seconds
        self.abort_timeout_seconds = abort_timeout_seconds
        self.keep_completed = keep_completed
        self._records: dict[str, _Record] = {}
        self._running: dict[asyncio.Task[None], _Record] = {}
        self._closing = False
        self._cleanup_task: asyncio.Task[None] | None = None

    # -- admission -------------------------------------------------------------------------------------------

    async def submit(
        self,
        key: str,
        *,
        run: Callable[[Admission], Awaitable[None]],
        prepare: Callable[[], Awaitable[T]] | None = None,
        abort: Callable[[Admission], Awaitable[None]] | None = None,
    ) -> Submission[T]:
        """Admit the rollout identified by ``key`` unless that key is already known (see module docstring).

        Raises whatever ``prepare`` raised (nothing is started then) and :class:`EngineClosedError` while
        shutting down.
        """
        record = self._records.get(key)
        if record is not None:
            value = await asyncio.shield(record.future)
            assert record.admission is not None
            return Submission(value=value, created=False, admission=record.admission)
        if self._closing:
            raise EngineClosedError("the server is shutting down and accepts no new rollouts")
        loop = asyncio.get_running_loop()
        record = _Record(future=loop.create_future(), abort=abort)
        self._records[key] = record
        admission = Admission(key=key)
        try:
            value = await prepare() if prepare is not None else None
        except BaseException as exc:
            if self._records.get(key) is record:
                del self._records[key]
            record.future.set_exception(exc)
            record.future.exception()  # mark retrieved: duplicates may not exist
            raise
        record.admission = admission
        record.task = loop.create_task(self._run(record, admission, run), name=f"rollout:{key}")
        self._running[record.task] = record
        record.future.set_result(value)
        return Submission(value=value, created=True, admission=admission)

    async def _run(self, record: _Record, admission: Admission, run: Callable[[Admission], Awaitable[None]]) -> None:
        try:
            async with self.limiter.acquire():
                admission.started_at = time.monotonic()
                await run(admission)
        except asyncio.CancelledError:
            raise
        except Exception:
            # ``run`` owns its error reporting; anything escaping it is an infrastructure bug worth a trace.
            logger.exception("Rollout %s: unhandled error escaped the rollout task", admission.key)
        finally:
            admission.finished_at = time.monotonic()
            if record.task is not None:
                self._running.pop(record.task, None)
            record.task = None
            record.completed_at = admission.finished_at
            if not self.keep_completed and self._records.get(admission.key) is record:
                del self._records[admission.key]

    def release(self, admission: Admission) -> None:
        """Let ``admission.key`` be submitted again before this rollout's task has returned.

        For protocols that forget finished keys (``keep_completed=False``): call it just before sending the
        rollout's terminal result, so a controller that resubmits the moment it hears back is admitted, not
        answered "already running". The task itself stays tracked (health, shutdown) until it returns.
        """
        record = self._records.get(admission.key)
        if not self.keep_completed and record is not None and record.admission is admission:
            del self._records[admission.key]

    # -- inspection ------------------------------------------------------------------------------------------

    @property
    def active_count(self) -> int:
        """Rollouts admitted and not finished (running or waiting for a slot)."""
        return len(self._running)

    @property
    def completed_count(self) -> int:
        """Finished rollouts whose records are still kept (within the TTL)."""
        return sum(1 for r in self._records.values() if r.completed_at is not None)

    @property
    def accepting(self) -> bool:
        return not self._closing

    def get(self, key: str) -> Admission | None:
        """The admission for ``key``, if the engine still knows it."""
        record = self._records.get(key)
        return record.admission if record else None

    def snapshot(self) -> dict[str, Any]:
        return {
            "accepting_rollouts": self.accepting,
            "active_rollouts": self.active_count,
            "completed_rollouts": self.completed_count,
            "concurrency": self.limiter.snapshot(),
        }

    # -- life cycle ------------------------------------------------------------------------------------------

    def prune(self, now: float | None = None) -> int:
        """Forget finished keys older than the TTL; return how many were dropped."""
        now = time.monotonic() if now is None else now
        stale = [
            key
            for key, record in self._records.items()
            if record.completed_at is not None and now - record.completed_at > self.record_ttl_seconds
        ]
        for key in stale:
            del self._records[key]
        return len(stale)

    async def _cleanup_loop(self) -> None:
        while True:
            await asyncio.sleep(self.cleanup_interval_seconds)
            try:
                self.prune()
            except Exception:  # pragma: no cover - defensive
                logger.exception("Record cleanup failed")

    def start(self) -> None:
        """Start the periodic record cleanup (idempotent)."""
        self._closing = False
        if self._cleanup_task is None or self._cleanup_task.done():
            self._cleanup_task = asyncio.get_running_loop().create_task(self._cleanup_loop(), name="rollout-cleanup")

    async def shutdown(self) -> None:
        """Stop admitting, drain in-flight rollouts (bounded), cancel the rest and abort each (bounded)."""
        self._closing = True
        if self._cleanup_task is not None:
            self._cleanup_task.cancel()
            await asyncio.gather(self._cleanup_task, return_exceptions=True)
            self._cleanup_task = None
        in_flight = dict(self._running)
        if not in_flight:
            return
        logger.info("Shutdown: draining %d in-flight rollout(s) for up to %.1fs", len(in_flight), self.drain_timeout_seconds)
        _, pending = await asyncio.wait(list(in_flight), timeout=self.drain_timeout_seconds)
        if not pending:
            return
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        aborts = []
        for task in pending:
            record = in_flight[task]
            if record.admission is None:
                continue
            record.admission.aborted = True
            if record.abort is not None:
                aborts.append(self._abort_one(record.abort, record.admission))
        await asyncio.gather(*aborts)

    async def _abort_one(self, abort: Callable[[Admission], Awaitable[None]], admission: Admission) -> None:
        try:
            await asyncio.wait_for(abort(admission), timeout=self.abort_timeout_seconds)
        except Exception:
            logger.exception("Rollout %s: abort handler failed during shutdown", admission.key)

    @asynccontextmanager
    async def running(self) -> AsyncIterator["RolloutEngine"]:
        """``async with engine.running():`` — start on enter, graceful shutdown on exit."""
        self.start()
        try:
            yield self
        finally:
            await self.shutdown()
