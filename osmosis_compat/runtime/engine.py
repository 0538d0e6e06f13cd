"""The rollout engine: admission, life cycle and graceful shutdown, for every protocol.

A protocol router turns a request into an idempotency *key* and two coroutines — ``prepare`` (work that must
succeed before the request is acknowledged, e.g. the legacy ``get_tools``) and ``run`` (the rollout itself) — and
hands them to :meth:`RolloutEngine.submit`:

- the key is claimed in the :class:`~.store.RolloutStore` atomically, so a key already known is not started twice,
  whichever process the duplicate reaches: the duplicate gets the leader's ``prepare`` value (its *answer*,
  ``created=False``); if the leader's ``prepare`` failed, duplicates in this process fail the same way and the key
  is forgotten so a retry starts afresh;
- ``run`` executes in a tracked background task inside a concurrency slot;
- finished keys are remembered for ``record_ttl_seconds`` (``keep_completed=True``) or forgotten at once; what is
  remembered is the store record (key, answer, status, result) — never the request or the task;
- on shutdown the engine stops admitting, lets in-flight rollouts drain for ``drain_timeout_seconds``, cancels
  what is left and awaits each one's ``abort`` (each bounded), so no accepted rollout ends in silence;
- :meth:`cancel` stops a rollout wherever it runs (a cancel for a rollout of another process goes through the
  store to its owner);
- with a shared store, each engine sends an ownership heartbeat and finishes the unfinished rollouts of owners
  whose heartbeat stopped (a process that died with rollouts in flight), with the result its protocol registered
  through :meth:`on_orphan` — so they end promptly instead of silently at their lease.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .limiter import ConcurrencyLimiter
from .store import STORE_ENV, RolloutRecord, RolloutStore, open_store

__all__ = ["Admission", "EngineClosedError", "EngineFullError", "RolloutEngine", "Submission"]

logger = logging.getLogger("osmosis_compat.runtime.engine")

T = TypeVar("T")

#: How long a duplicate waits for a leader in another process to finish ``prepare``.
DUPLICATE_ANSWER_WAIT_SECONDS = 60.0


class EngineClosedError(RuntimeError):
    """The engine is shutting down and admits no new rollouts."""


class EngineFullError(RuntimeError):
    """``max_pending`` rollouts are admitted and unfinished; the controller should retry later."""


@dataclass
class Admission:
    """One rollout admitted by this process, while it runs here."""

    key: str
    protocol: str = ""
    """The protocol that admitted it (``"legacy"``, ``"workflow"``, ``"polling"``)."""
    admitted_at: float = field(default_factory=time.monotonic)
    """Monotonic time of admission — before waiting for a slot, so latency includes queueing."""
    started_at: float | None = None
    """Monotonic time the rollout got its concurrency slot."""
    finished_at: float | None = None
    aborted: bool = False
    cancelled: bool = False
    """Set when :meth:`RolloutEngine.cancel` stopped it."""
    settled: bool = False
    """Set by the protocol once it recorded the rollout's terminal state in the store itself (the engine then skips
    its own fallback write)."""
    context: dict[str, Any] = field(default_factory=dict)
    """Free-form per-rollout state the protocol layer keeps while the rollout runs."""


@dataclass(frozen=True)
class Submission(Generic[T]):
    """The answer to :meth:`RolloutEngine.submit`: ``admission`` is ``None`` for a duplicate handled elsewhere."""

    value: T
    created: bool
    admission: Admission | None
    record: RolloutRecord | None = None
    """For a duplicate: the existing record (status, result …)."""

    @property
    def protocol(self) -> str:
        """The protocol of the rollout that holds the key (for a duplicate: the leader's, wherever it runs)."""
        if self.record is not None:
            return self.record.protocol
        return self.admission.protocol if self.admission is not None else ""


@dataclass
class _Local:
    admission: Admission
    prepared: asyncio.Future[Any]
    abort: Callable[[Admission], Awaitable[None]] | None = None
    task: asyncio.Task[None] | None = None


class RolloutEngine:
    """Admits rollouts by key and runs them as tracked background tasks (see the module docstring).

    ``store`` defaults to the one ``$OSMOSIS_COMPAT_STORE`` names (e.g. ``redis://redis:6379/0``, so an unchanged
    app scales out from its environment), else in memory. ``instance_id`` names this engine as the owner of the
    rollouts it runs (a uuid4 by default).
    """

    def __init__(
        self,
        *,
        max_concurrent: int | None = None,
        record_ttl_seconds: float = 3600.0,
        cleanup_interval_seconds: float = 60.0,
        drain_timeout_seconds: float = 10.0,
        abort_timeout_seconds: float = 30.0,
        keep_completed: bool = True,
        max_pending: int | None = None,
        store: RolloutStore | None = None,
        instance_id: str | None = None,
        heartbeat_interval_seconds: float = 2.0,
    ) -> None:
        self.limiter = ConcurrencyLimiter(max_concurrent=max_concurrent)
        self.record_ttl_seconds = record_ttl_seconds
        self.cleanup_interval_seconds = cleanup_interval_seconds
        self.drain_timeout_seconds = drain_timeout_seconds
        self.abort_timeout_seconds = abort_timeout_seconds
        self.keep_completed = keep_completed
        self.max_pending = max_pending
        self.store: RolloutStore = store if store is not None else open_store(os.environ.get(STORE_ENV))
        self.instance_id = instance_id or str(uuid.uuid4())
        self._local: dict[str, _Local] = {}
        self._running: dict[asyncio.Task[None], _Local] = {}
        self._completions: deque[float] = deque()
        self._closing = False
        self._started = False
        self._cleanup_task: asyncio.Task[None] | None = None
        self.heartbeat_interval_seconds = heartbeat_interval_seconds
        self._ownership_task: asyncio.Task[None] | None = None
        self._orphans: dict[str, Callable[[str], tuple[dict[str, Any] | None, float]]] = {}
        self._discards: dict[str, str] = {}  # key -> ticket of an admission answered "unavailable" (see submit)
        self._discard_task: asyncio.Task[None] | None = None
        self.store.on_cancel(self.instance_id, self._on_cancel_request)

    @property
    def retention_seconds(self) -> float:
        """How long a finished key is remembered (``0`` when finished keys are forgotten)."""
        return self.record_ttl_seconds if self.keep_completed else 0.0

    # -- admission -------------------------------------------------------------------------------------------

    async def submit(
        self,
        key: str,
        *,
        run: Callable[[Admission], Awaitable[None]],
        prepare: Callable[[], Awaitable[T]] | None = None,
        abort: Callable[[Admission], Awaitable[None]] | None = None,
        protocol: str = "",
        fields: dict[str, Any] | None = None,
    ) -> Submission[T]:
        """Admit the rollout identified by ``key`` unless that key is already known (see module docstring).

        ``fields`` are extra :class:`~.store.RolloutRecord` fields stored with the key (e.g. a polling lease).
        Raises whatever ``prepare`` raised (nothing is started then), :class:`EngineClosedError` while shutting
        down, :class:`EngineFullError` when ``max_pending`` is reached, and the store's
        :class:`~.store.StoreUnavailableError` (nothing is admitted then).
        """
        while True:
            local = self._local.get(key)
            if local is not None:  # the leader is in this process: share its prepare
                if local.admission.protocol != protocol:  # another protocol's rollout: nothing to share (409)
                    return Submission(value=None, created=False, admission=local.admission)
                value = await asyncio.shield(local.prepared)
                return Submission(value=value, created=False, admission=local.admission)
            if self._closing:
                raise EngineClosedError("the server is shutting down and accepts no new rollouts")
            if self.max_pending is not None and len(self._local) >= self.max_pending:
                raise EngineFullError(f"{len(self._local)} rollouts are pending (max_pending={self.max_pending})")
            loop = asyncio.get_running_loop()
            local = _Local(admission=Admission(key=key, protocol=protocol), prepared=loop.create_future(), abort=abort)
            self._local[key] = local
            ticket = uuid.uuid4().hex[:16]
            record = RolloutRecord(key=key, owner=self.instance_id, protocol=protocol, ticket=ticket, **(fields or {}))
            try:
                existing = await self.store.create(record)
            except BaseException as exc:
                self._forget(local, exc)
                # Unanswered is not undone: the write may have happened (the reply was lost) or still happen (a
                # shared store refuses a late one itself). Forget this admission's record once the store answers.
                self._discard_later(key, ticket)
                raise
            if existing is None:
                break
            self._local.pop(key, None)
            if existing.owner == self.instance_id and existing.ticket is not None and self._discards.get(key) == existing.ticket:
                # This process's own admission that was answered "unavailable" although it was written: nothing
                # runs it, so it is forgotten now and this admission (the controller's retry) takes its place.
                del self._discards[key]
                if await self.store.discard(key, existing.ticket):
                    local.prepared.cancel()
                    continue

            # A duplicate of a rollout another process admitted (or one this process finished and remembers).
            answer = await self._answer_of(existing, wanted=prepare is not None and existing.protocol == protocol)
            if answer is _GONE:
                local.prepared.cancel()
                continue  # the leader's prepare failed and the key was forgotten: start afresh
            local.prepared.set_result(answer)
            return Submission(value=answer, created=False, admission=None, record=existing)

        try:
            value = await prepare() if prepare is not None else None
            if value is not None:
                await self.store.update(key, answer=value)
        except BaseException as exc:
            self._forget(local, exc)
            try:
                await self.store.discard(key, ticket)
            except Exception:  # the store is down: forget the key as soon as it answers again
                logger.warning("Rollout %s: could not forget the key after a failed prepare; retrying in the background", key)
                self._discard_later(key, ticket)
            raise
        local.task = loop.create_task(self._run(local, run), name=f"rollout:{key}")
        self._running[local.task] = local
        local.prepared.set_result(value)
        return Submission(value=value, created=True, admission=local.admission)

    def _discard_later(self, key: str, ticket: str) -> None:
        """Forget ``key``'s record of admission ``ticket`` in the background, retrying while the store is
        unreachable (compare-and-delete: a later admission's record is never touched)."""
        self._discards[key] = ticket
        if self._discard_task is None or self._discard_task.done():
            try:
                self._discard_task = asyncio.get_running_loop().create_task(self._discard_loop(), name="rollout-discards")
            except RuntimeError:  # no running loop (cannot happen inside submit)
                pass

    async def _discard_loop(self) -> None:
        delay = 0.05
        while self._discards:
            for key, ticket in list(self._discards.items()):
                try:
                    await self.store.discard(key, ticket)
                except Exception:
                    continue
                if self._discards.get(key) == ticket:
                    del self._discards[key]
            if self._discards:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _forget(self, local: _Local, exc: BaseException) -> None:
        if self._local.get(local.admission.key) is local:
            del self._local[local.admission.key]
        if isinstance(exc, Exception):
            local.prepared.set_exception(exc)
            local.prepared.exception()  # mark retrieved: duplicates may not exist
        else:
            local.prepared.cancel()

    async def _answer_of(self, record: RolloutRecord, *, wanted: bool) -> Any:
        """The leader's answer; waits (bounded) while a leader elsewhere is still preparing."""
        deadline = time.monotonic() + DUPLICATE_ANSWER_WAIT_SECONDS
        current: RolloutRecord | None = record
        while current is not None and wanted and current.answer is None and not current.finished:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            current = await self.store.wait_for_change(current.key, current.version, min(remaining, 1.0))
        if current is None:
            return _GONE
        return current.answer

    async def _run(self, local: _Local, run: Callable[[Admission], Awaitable[None]]) -> None:
        admission = local.admission
        status = "failure"
        try:
            async with self.limiter.acquire():
                admission.started_at = time.monotonic()
                await run(admission)
            status = "success"
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        except Exception:
            # ``run`` owns its error reporting; anything escaping it is an infrastructure bug worth a trace.
            logger.exception("Rollout %s: unhandled error escaped the rollout task", admission.key)
        finally:
            admission.finished_at = time.monotonic()
            if local.task is not None:
                self._running.pop(local.task, None)
            local.task = None
            local.abort = None
            if self._local.get(admission.key) is local:
                del self._local[admission.key]
            if self.keep_completed:
                self._completions.append(time.monotonic())
            # Protocols that hold results finished the record themselves; this starts the retention of the others.
            if not admission.settled:
                try:
                    await self.store.finish(admission.key, status, retention=self.retention_seconds)
                except Exception:
                    logger.warning("Rollout %s: could not mark the key finished in the store", admission.key)

    async def release(self, admission: Admission) -> None:
        """Let ``admission.key`` be submitted again before this rollout's task has returned.

        For protocols that forget finished keys (``keep_completed=False``): call it just before sending the
        rollout's terminal result, so a controller that resubmits the moment it hears back is admitted, not
        answered "already running". The task itself stays tracked (health, shutdown) until it returns.
        """
        if self.keep_completed:
            return
        if self._local.get(admission.key) is not None and self._local[admission.key].admission is admission:
            del self._local[admission.key]
        admission.settled = True
        await self.store.delete(admission.key)

    # -- cancellation ----------------------------------------------------------------------------------------

    def cancel_local(self, key: str) -> bool:
        """Cancel ``key``'s task if it runs in this process; ``True`` if a task was cancelled."""
        local = self._local.get(key)
        if local is None or local.task is None or local.task.done():
            return False
        local.admission.cancelled = True
        local.task.cancel()
        return True

    async def cancel(self, key: str) -> bool:
        """Cancel ``key`` wherever it runs: here directly, elsewhere through the store. ``True`` if it was
        running here or the request was passed on to its owner."""
        if self.cancel_local(key):
            return True
        record = await self.store.get(key)
        # A finished record may still have a running task: a cancel or a lease expiry finishes the record first.
        if record is None or record.owner == self.instance_id:
            return False
        await self.store.request_cancel(key)
        return True

    async def _on_cancel_request(self, key: str) -> None:
        self.cancel_local(key)

    # -- ownership (shared stores) --------------------------------------------------------------------------

    def on_orphan(self, protocol: str, result: Callable[[str], tuple[dict[str, Any] | None, float]]) -> None:
        """How a ``protocol``'s rollout ends when the process running it died: ``result(key)`` gives the held result
        (or ``None``) and its retention in seconds. Rollouts of protocols without one end ``failure`` without a
        result, kept for ``record_ttl_seconds``."""
        self._orphans[protocol] = result

    @property
    def heartbeat_ttl_seconds(self) -> float:
        """How long a silent owner is still taken for alive (three missed heartbeats)."""
        return 3 * self.heartbeat_interval_seconds

    async def _ownership_loop(self) -> None:
        # Sweep only after a full TTL since this process last reached the store: after an outage every process must
        # have had the chance to heartbeat again, or the first one back would take the others for dead.
        sweep_from = time.monotonic() + self.heartbeat_ttl_seconds
        failing = False
        while True:
            try:
                await self.store.heartbeat(self.instance_id, self.heartbeat_ttl_seconds)
                if failing:
                    logger.warning("Rollout store reachable again")
                    failing = False
                if time.monotonic() >= sweep_from:
                    await self.sweep_orphans()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not failing:
                    logger.error("Rollout store unreachable (%s): new rollouts are refused until it is back", exc)
                failing = True
                sweep_from = time.monotonic() + self.heartbeat_ttl_seconds
            await asyncio.sleep(self.heartbeat_interval_seconds)

    async def sweep_orphans(self) -> int:
        """Finish the unfinished rollouts of owners whose heartbeat stopped; return how many."""
        finished = 0
        for owner in await self.store.owners():
            if owner == self.instance_id or await self.store.alive(owner):
                continue
            for key in await self.store.owned(owner):
                record = await self.store.get(key)
                if record is None or record.finished or record.owner != owner:
                    continue
                make = self._orphans.get(record.protocol)
                result, retention = make(key) if make is not None else (None, self.record_ttl_seconds)
                if await self.store.finish(key, "failure", result=result, retention=retention):
                    finished += 1
                    logger.warning("Rollout %s: its server process %s is gone; marked failed", key, owner)
            await self.store.forget_owner(owner)
        return finished

    # -- inspection ------------------------------------------------------------------------------------------

    @property
    def active_count(self) -> int:
        """Rollouts admitted by this process and not finished (running or waiting for a slot)."""
        return len(self._running)

    @property
    def completed_count(self) -> int:
        """Rollouts this process finished whose records are still kept (within the TTL)."""
        self._prune_completions(time.monotonic())
        return len(self._completions)

    @property
    def accepting(self) -> bool:
        return not self._closing

    @property
    def ready(self) -> bool:
        """Started and not shutting down: what a readiness probe asks of the engine (the store is asked apart)."""
        return self._started and not self._closing

    def get(self, key: str) -> Admission | None:
        """The admission for ``key`` while it is being admitted or runs in this process."""
        local = self._local.get(key)
        return local.admission if local else None

    async def lookup(self, key: str) -> RolloutRecord | None:
        """What the store remembers about ``key`` (any process's rollout)."""
        return await self.store.get(key)

    def snapshot(self) -> dict[str, Any]:
        return {
            "accepting_rollouts": self.accepting,
            "active_rollouts": self.active_count,
            "completed_rollouts": self.completed_count,
            "concurrency": self.limiter.snapshot(),
        }

    # -- life cycle ------------------------------------------------------------------------------------------

    def _prune_completions(self, now: float) -> None:
        horizon = now - self.record_ttl_seconds
        while self._completions and self._completions[0] <= horizon:
            self._completions.popleft()

    def prune(self, now: float | None = None) -> int:
        """Forget finished keys older than their retention; return how many the store dropped."""
        self._prune_completions(time.monotonic())
        prune = getattr(self.store, "prune", None)
        return int(prune(now)) if callable(prune) else 0

    async def _cleanup_loop(self) -> None:
        while True:
            await asyncio.sleep(self.cleanup_interval_seconds)
            try:
                self.prune()
            except Exception:  # pragma: no cover - defensive
                logger.exception("Record cleanup failed")

    def start(self) -> None:
        """Start the periodic record cleanup and, with a shared store, the ownership heartbeat (idempotent)."""
        self._closing = False
        self._started = True
        loop = asyncio.get_running_loop()
        if self._cleanup_task is None or self._cleanup_task.done():
            self._cleanup_task = loop.create_task(self._cleanup_loop(), name="rollout-cleanup")
        if self.store.shared and (self._ownership_task is None or self._ownership_task.done()):
            self._ownership_task = loop.create_task(self._ownership_loop(), name="rollout-ownership")

    def stop_admitting(self) -> None:
        """Refuse new rollouts from now on (:class:`EngineClosedError`); running ones continue."""
        self._closing = True

    async def shutdown(self) -> None:
        """Stop admitting, drain in-flight rollouts (bounded), cancel the rest and abort each (bounded)."""
        self._closing = True
        if self._cleanup_task is not None:
            self._cleanup_task.cancel()
            await asyncio.gather(self._cleanup_task, return_exceptions=True)
            self._cleanup_task = None
        try:
            in_flight = dict(self._running)
            await self._drain(in_flight)
        finally:
            # Heartbeat until drained: the others must not take this process's rollouts for orphans meanwhile.
            if self._ownership_task is not None:
                self._ownership_task.cancel()
                await asyncio.gather(self._ownership_task, return_exceptions=True)
                self._ownership_task = None
            if self._discard_task is not None:  # what is left expires with this owner's heartbeat (orphan sweep)
                self._discard_task.cancel()
                await asyncio.gather(self._discard_task, return_exceptions=True)
                self._discard_task = None

    async def _drain(self, in_flight: dict[asyncio.Task[None], _Local]) -> None:
        if not in_flight:
            return
        logger.info("Shutdown: draining %d in-flight rollout(s) for up to %.1fs", len(in_flight), self.drain_timeout_seconds)
        _, pending = await asyncio.wait(list(in_flight), timeout=self.drain_timeout_seconds)
        if not pending:
            return
        aborts: list[tuple[Callable[[Admission], Awaitable[None]], Admission]] = []
        for task in pending:
            local = in_flight[task]
            local.admission.aborted = True
            if local.abort is not None:
                aborts.append((local.abort, local.admission))
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.gather(*(self._abort_one(abort, admission) for abort, admission in aborts))

    async def _abort_one(self, abort: Callable[[Admission], Awaitable[None]], admission: Admission) -> None:
        try:
            await asyncio.wait_for(abort(admission), timeout=self.abort_timeout_seconds)
        except Exception:
            logger.exception("Rollout %s: abort handler failed during shutdown", admission.key)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[RolloutEngine]:
        """``async with engine.running():`` — start on enter, graceful shutdown on exit."""
        self.start()
        try:
            yield self
        finally:
            await self.shutdown()


_GONE = object()
