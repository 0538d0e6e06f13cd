"""The 0.3.8 polling protocol (spec/polling-protocol.md): :class:`PollingProtocol`, one peer of :mod:`.protocol`.

Admission, idempotency, concurrency and drain are the engine's; this module only adds what polling is about —
the outcome is *held* in the engine's store until the controller pulls it:

- ``POST /rollout`` (a body without ``completion_callback_url``) → the engine admits the id (409 if the store
  knows it: in flight, or finished and retained), the rollout starts at once, 202 with a lease token. 503 while
  draining; 429 + ``Retry-After: 5`` when the executor or the engine's ``max_pending`` says full;
- ``GET /rollout/{id}/result`` with ``X-Osmosis-Rollout-Lease`` → renews the lease and long-polls: answers as
  soon as the status changes, or after ``result_wait_timeout_sec`` with the current status; a finished result is
  answered at once for ``result_retention_sec``. 404 unknown id, 403 wrong lease, 422 no header;
- a lease not renewed in time while the rollout runs ends it ``failure`` / ``lease_expired`` and cancels it;
- ``POST /rollout/cancel`` with exactly one of ``ids`` / ``prefix`` / ``all``;
- every admitted rollout ends in exactly one terminal result: the first of completion, cancel, lease expiry and
  shutdown abort to reach the store wins (``RolloutStore.finish`` is compare-and-set).

What runs a rollout is a :class:`PollingExecutor`: a workflow backend, or a legacy loop (``executors.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse

from osmosis_compat.observability import metrics, tracing
from osmosis_compat.runtime.engine import Admission, RolloutEngine
from osmosis_compat.runtime.jsonwire import NotJSONError, dumps
from osmosis_compat.runtime.store import RolloutRecord, Snapshot, StoreUnavailableError
from osmosis_compat.runtime.wirecheck import HostAllowList
from osmosis_compat.workflow.types.protocol import (
    POLLING_LEASE_HEADER,
    CancelRolloutsRequest,
    RolloutInitRequest,
    RolloutResultResponse,
)
from osmosis_compat.workflow.types.sample import (
    ExecutionResult,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
)

from osmosis_compat.observability.ownership import RolloutOwnership

from .protocol import STORE_UNAVAILABLE_DETAIL, AdmissionRefused, Guard, RolloutProtocol, queue_full
from .security import bearer_guard

__all__ = [
    "DEFAULT_POLLING_LEASE_TIMEOUT_SEC",
    "DEFAULT_RESULT_RETENTION_SEC",
    "DEFAULT_RESULT_WAIT_TIMEOUT_SEC",
    "PollingExecutor",
    "PollingProtocol",
    "PollingRollouts",
    "PollingSettings",
    "bearer_guard",
    "StatusSetter",
    "process_identity",
    "to_result_response",
]

logger = logging.getLogger("osmosis_ai.rollout.server.app")

DEFAULT_RESULT_WAIT_TIMEOUT_SEC = 30.0
DEFAULT_POLLING_LEASE_TIMEOUT_SEC = 120.0
DEFAULT_RESULT_RETENTION_SEC = 900.0

SHUTDOWN_MESSAGE = "rollout server shut down before the rollout finished"
LOST_MESSAGE = "server instance lost"
FINISH_RETRY_SECONDS = 120.0
"""How long a finished rollout's result is retried while the store is unreachable (then it is logged as lost)."""
PROTOCOL = "polling"

StatusSetter = Callable[[str], Awaitable[None]]


class PollingExecutor(Protocol):
    """Runs one polling rollout and returns its final result (never raises for agent errors)."""

    async def execute(self, request: RolloutInitRequest, set_status: StatusSetter, queued_sec: float = 0.0) -> ExecutionResult:
        """Run ``request``; call ``set_status("grading")`` when grading starts. ``queued_sec`` (time spent waiting
        for a concurrency slot) comes out of ``agent_timeout_sec``."""
        ...

    def has_capacity(self) -> bool:
        """``False`` makes admission answer 429."""
        ...


@dataclass(frozen=True)
class PollingSettings:
    """The server settings 0.3.8 advertises at admission (``create_rollout_server`` keyword arguments)."""

    result_wait_timeout_sec: float = DEFAULT_RESULT_WAIT_TIMEOUT_SEC
    polling_lease_timeout_sec: float = DEFAULT_POLLING_LEASE_TIMEOUT_SEC
    result_retention_sec: float = DEFAULT_RESULT_RETENTION_SEC

    def __post_init__(self) -> None:
        wait, lease, keep = self.result_wait_timeout_sec, self.polling_lease_timeout_sec, self.result_retention_sec
        if not math.isfinite(wait) or wait <= 0:
            raise ValueError("result_wait_timeout_sec must be finite and greater than zero")
        if not math.isfinite(keep) or keep < 0:
            raise ValueError("result_retention_sec must be finite and non-negative")
        if not math.isfinite(lease) or lease <= wait:
            raise ValueError("polling_lease_timeout_sec must exceed result_wait_timeout_sec")


@dataclass(frozen=True)
class ProcessIdentity:
    """``process_id`` (a uuid4 per app) and ``instance_id`` (env ``_OSMOSIS_ROLLOUT_INSTANCE_ID`` or the process
    id) as ``GET /health`` reports them."""

    process_id: str
    instance_id: str


def process_identity(process_id: str | None = None) -> ProcessIdentity:
    """A fresh identity (0.3.8: made when the app is created)."""
    process_id = process_id or str(uuid.uuid4())
    return ProcessIdentity(process_id, os.environ.get("_OSMOSIS_ROLLOUT_INSTANCE_ID") or process_id)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _result_payload(rollout_id: str, status: str, **fields: Any) -> dict[str, Any]:
    return {"rollout_id": rollout_id, "status": status, "sample": None, "err_message": None, "err_category": None, **fields}


def lease_failure(rollout_id: str) -> dict[str, Any]:
    return _result_payload(
        rollout_id, "failure", err_message="polling lease expired", err_category=RolloutErrorCategory.LEASE_EXPIRED.value
    )


def cancelled_result(rollout_id: str) -> dict[str, Any]:
    return _result_payload(rollout_id, "cancelled", err_message="cancelled")


def shutdown_failure(rollout_id: str) -> dict[str, Any]:
    return _result_payload(
        rollout_id, "failure", err_message=SHUTDOWN_MESSAGE, err_category=RolloutErrorCategory.INTERNAL_ERROR.value
    )


def lost_failure(rollout_id: str) -> dict[str, Any]:
    """The result of a rollout whose server process died (another process of a shared store noticed)."""
    return _result_payload(
        rollout_id, "failure", err_message=LOST_MESSAGE, err_category=RolloutErrorCategory.INTERNAL_ERROR.value
    )


def _wire_sample(rollout_id: str, sample: RolloutSample, reward_allowed: bool) -> dict[str, Any]:
    """The sample's wire dict (0.3.8 keys); a sample holding non-JSON values is cut to its reward (as 0.3.8)."""
    payload = {
        "messages": list(sample.messages),
        "label": sample.label,
        "reward": sample.reward if reward_allowed and not sample.remove_sample else None,
        "remove_sample": sample.remove_sample,
        "metrics": sample.metrics,
        "extra_fields": sample.extra_fields,
    }
    try:
        dumps(payload)
    except NotJSONError as exc:
        logger.warning("Rollout %s: the sample cannot be sent as JSON (%s); returning its reward only", rollout_id, exc)
        payload.update(messages=[], metrics={}, extra_fields={})
        if isinstance(payload["reward"], float) and not math.isfinite(payload["reward"]):
            payload["reward"] = None
    return payload


def to_result_response(rollout_id: str, result: ExecutionResult) -> dict[str, Any]:
    """A backend result as the final ``RolloutResultResponse`` body.

    0.3 carries one sample per rollout. A 0.2.x workflow that produced several (one per agent/session) has no 0.3
    form: the rollout fails with ``validation_error`` naming the samples, rather than training on a silently
    chosen part of it (serve it to a 0.2.x controller, or register one sample source).
    """
    status = RolloutStatus(result.status)
    if status is RolloutStatus.PENDING:  # a 0.2.x custom backend's "not finished" is not a final status
        status = RolloutStatus.FAILURE
    samples = result.samples
    if len(samples) > 1:
        names = ", ".join(repr(name) for name in samples)
        return _result_payload(
            rollout_id,
            "failure",
            err_message=(
                f"the rollout produced {len(samples)} samples ({names}); the 0.3 polling protocol carries exactly "
                "one per rollout. Register one sample source (one OsmosisStrandsAgent / OsmosisMemorySession per "
                "rollout), or serve this workflow to a 0.2.x callback controller."
            ),
            err_category=RolloutErrorCategory.VALIDATION_ERROR.value,
        )
    sample = next(iter(samples.values()), None)
    wire = None if sample is None else _wire_sample(rollout_id, sample, status is RolloutStatus.SUCCESS)
    message = result.err_message
    if message is not None:
        message = message.encode("utf-8", errors="replace").decode("utf-8")
    return _result_payload(
        rollout_id,
        status.value,
        sample=wire,
        err_message=message,
        err_category=None if result.err_category is None else RolloutErrorCategory(result.err_category).value,
    )


class PollingProtocol(RolloutProtocol):
    """The polling protocol of one app over ``engine`` (see the module docstring). ``guard`` checks every polling
    route (:func:`~.security.bearer_guard`)."""

    name = PROTOCOL
    shutting_down_detail = "rollout server is shutting down"

    def __init__(
        self,
        engine: RolloutEngine,
        executor: PollingExecutor,
        settings: PollingSettings | None = None,
        *,
        identity: ProcessIdentity | None = None,
        allow_list: HostAllowList | None = None,
        guard: Guard | None = None,
        agent: str = "",
    ) -> None:
        super().__init__(engine, agent=agent, allow_list=allow_list)
        self.guard = guard
        self.store = engine.store
        self.executor = executor
        self.settings = settings or PollingSettings()
        self.identity = identity or process_identity()
        self._lease_timers: dict[str, asyncio.TimerHandle] = {}
        self._lease_checks: set[asyncio.Task[None]] = set()
        # 0.3.8's OTLP "rollout.ownership" records (only with OSMOSIS_ROLLOUT_OTLP_ENDPOINT set).
        self.ownership = RolloutOwnership()
        self.ownership.start()
        engine.on_orphan(PROTOCOL, lambda key: (lost_failure(key), self.settings.result_retention_sec))

    # -- admission -------------------------------------------------------------------------------------------

    async def admit_request(self, request: RolloutInitRequest) -> JSONResponse:
        """``POST /rollout`` for a 0.3.8 body, after auth."""
        rejected = self.url_rejection({"chat_completions_url": request.chat_completions_url})
        if rejected is not None:
            return rejected
        if not self.engine.accepting:
            return JSONResponse({"detail": self.shutting_down_detail}, status_code=503)
        if not self.executor.has_capacity():
            return queue_full()
        token = secrets.token_urlsafe(32)
        deadline = time.time() + self.settings.polling_lease_timeout_sec
        rollout_id = request.rollout_id
        # With no concurrency slots to wait for, the task starts at once: record it running from the start (one
        # store write less per rollout; the admission answer still says "queued", as 0.3.8's always does).
        status = RolloutStatus.RUNNING.value if self.engine.limiter.max_concurrent is None else RolloutStatus.QUEUED.value
        try:
            submission = await self.admit(
                rollout_id,
                run=lambda admission: self._run(request, admission),
                fields={"lease_digest": _digest(token), "lease_deadline": deadline, "status": status},
            )
        except AdmissionRefused as refused:
            return refused.response
        if not submission.created:
            return JSONResponse({"detail": "rollout_id is already registered"}, status_code=409)
        self._watch_lease(rollout_id, deadline)
        self.ownership.admitted(rollout_id, request.metadata)
        return JSONResponse(
            {
                "rollout_id": rollout_id,
                "status": RolloutStatus.QUEUED.value,
                "polling_lease_token": token,
                "result_wait_timeout_sec": self.settings.result_wait_timeout_sec,
                "polling_lease_timeout_sec": self.settings.polling_lease_timeout_sec,
            },
            status_code=202,
        )

    async def _run(self, request: RolloutInitRequest, admission: Admission) -> None:
        rollout_id = request.rollout_id

        async def set_status(status: str) -> None:
            self.ownership.status(rollout_id, str(status))
            try:
                await self.store.update(rollout_id, status=str(status))
            except StoreUnavailableError as exc:  # a status is advisory; the final result is retried (_finish)
                logger.warning("Rollout %s: status %s not stored: %s", rollout_id, status, exc)

        try:
            if self.engine.limiter.max_concurrent is not None:  # it waited for a slot: now it runs
                await set_status(RolloutStatus.RUNNING.value)
            else:  # stored as running at admission already; the ownership record of the start is still due
                self.ownership.status(rollout_id, RolloutStatus.RUNNING.value)
            queued = (admission.started_at or admission.admitted_at) - admission.admitted_at
            result = await self.executor.execute(request, set_status, queued)
            payload = to_result_response(rollout_id, result)
        except asyncio.CancelledError:
            # Cancel and lease expiry finished the record before cancelling the task; what is left is shutdown.
            await self._finish(rollout_id, shutdown_failure(rollout_id) if admission.aborted else cancelled_result(rollout_id))
            admission.settled = True
            raise
        except Exception as exc:  # the executor reports agent errors itself; this is a bug in the server
            logger.exception("Rollout %s: the server failed to run it", rollout_id)
            payload = _result_payload(
                rollout_id, "failure", err_message=str(exc) or "Internal server error",
                err_category=RolloutErrorCategory.INTERNAL_ERROR.value,
            )
        admission.context["outcome"] = payload["status"]
        await self._finish(rollout_id, payload)
        admission.settled = True
        logger.info("Rollout %s finished with status %s", rollout_id, payload["status"])

    async def _finish(self, rollout_id: str, payload: dict[str, Any]) -> bool:
        """Hold ``payload`` as the final result unless another outcome got there first; while the store is
        unreachable, retry (bounded) rather than lose the result."""
        delay = 0.1
        deadline = time.monotonic() + FINISH_RETRY_SECONDS
        while True:
            try:
                return await self._finish_once(rollout_id, payload)
            except StoreUnavailableError as exc:
                if time.monotonic() >= deadline:
                    logger.error("Rollout %s: result not stored, the rollout store stayed unreachable: %s", rollout_id, exc)
                    return False
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _finish_once(self, rollout_id: str, payload: dict[str, Any]) -> bool:
        # A completion that lands after the lease deadline becomes the lease failure (0.3.8): the store checks the
        # deadline in the same step, since a poll on another process may have just renewed it.
        expired = None if payload["status"] == "cancelled" else ("failure", lease_failure(rollout_id))
        done = await self.store.finish(
            rollout_id, payload["status"], result=payload, retention=self.settings.result_retention_sec, expired=expired
        )
        if done:
            timer = self._lease_timers.pop(rollout_id, None)
            if timer is not None:
                timer.cancel()
            self.ownership.status(rollout_id, payload["status"], final=True)
        return done

    # -- leases ----------------------------------------------------------------------------------------------

    def _watch_lease(self, rollout_id: str, deadline: float) -> None:
        """Check the lease when it would expire (one timer per rollout; a renewal found then re-arms it)."""
        loop = asyncio.get_running_loop()
        delay = max(0.0, deadline - time.time())
        self._lease_timers[rollout_id] = loop.call_later(delay, self._lease_due, rollout_id)

    def _lease_due(self, rollout_id: str) -> None:
        self._lease_timers.pop(rollout_id, None)
        task = asyncio.get_running_loop().create_task(self._check_lease(rollout_id), name=f"lease:{rollout_id}")
        self._lease_checks.add(task)
        task.add_done_callback(self._lease_checks.discard)

    async def _check_lease(self, rollout_id: str) -> None:
        try:
            record = await self.store.get(rollout_id)
        except StoreUnavailableError:
            self._watch_lease(rollout_id, time.time() + 1.0)
            return
        if record is None or record.finished:
            return
        if _lease_expired(record):
            await self._expire(rollout_id)
        elif record.lease_deadline is not None:
            self._watch_lease(rollout_id, record.lease_deadline)

    async def _expire(self, rollout_id: str) -> None:
        if await self.store.finish(
            rollout_id, "failure", result=lease_failure(rollout_id), retention=self.settings.result_retention_sec
        ):
            self.ownership.status(rollout_id, "failure", final=True)
            logger.warning("Rollout %s: polling lease expired; cancelling it", rollout_id)
            found = metrics.peek()
            if found is not None:
                found.child(found.lease_expiries, self.agent).inc()
            await self.engine.cancel(rollout_id)

    # -- result ----------------------------------------------------------------------------------------------

    async def result(self, rollout_id: str, lease_token: str) -> JSONResponse:
        """``GET /rollout/{rollout_id}/result``: see the module docstring."""
        admission = self.engine.get(rollout_id)
        parent = admission.context.get("span_context") if admission is not None else None
        found = metrics.peek()
        waiting = found.child(found.long_polls, self.agent) if found is not None else None
        if waiting is not None:
            waiting.inc()
        try:
            with tracing.span("poll", {"osmosis.rollout_id": rollout_id, "osmosis.protocol": self.name}, parent=parent):
                return await self._result(rollout_id, lease_token)
        finally:
            if waiting is not None:
                waiting.dec()

    async def _result(self, rollout_id: str, lease_token: str) -> JSONResponse:
        async with self.store.watch(rollout_id) as changes:  # before the read: no change slips in between
            now = time.time()
            check = await self.store.renew_lease(
                rollout_id, _digest(lease_token), now + self.settings.polling_lease_timeout_sec, now
            )
            if check.outcome == "unknown":
                return JSONResponse({"detail": "unknown rollout_id"}, status_code=404)
            if check.outcome == "forbidden":
                return JSONResponse({"detail": "invalid polling lease"}, status_code=403)
            if check.outcome == "finished":
                return _held(check.snapshot)
            if check.outcome == "expired":
                await self._expire(rollout_id)
                return _held(await self.store.get(rollout_id))
            assert check.snapshot is not None
            now_seen = await changes.wait(check.snapshot, self.settings.result_wait_timeout_sec)
        if now_seen is None:
            return JSONResponse({"detail": "unknown rollout_id"}, status_code=404)
        if now_seen.finished:
            return _held(now_seen)
        return JSONResponse(_result_payload(rollout_id, now_seen.status))

    # -- cancel ----------------------------------------------------------------------------------------------

    async def cancel(self, request: CancelRolloutsRequest) -> JSONResponse:
        """``POST /rollout/cancel``."""
        if request.selector_count != 1:
            return JSONResponse({"detail": "pass exactly one selector: ids, prefix, or all"}, status_code=422)
        if request.ids is not None:
            keys = list(dict.fromkeys(request.ids))
        else:
            keys = await self.store.keys(prefix=None if request.all else request.prefix)
        records = await self.store.get_many(keys)
        dispositions: dict[str, str] = {}
        for key, record in zip(keys, records):
            if record is None or record.lease_digest is None:
                if request.ids is not None:
                    dispositions[key] = "not_found"
                continue  # prefix/all select polling rollouts only
            disposition = "cancelled_queued" if record.status == RolloutStatus.QUEUED.value else "cancelled_running"
            # One attempt: while the store is unreachable the whole cancel answers 503 (the controller retries it),
            # and a write Redis would run late is refused there (its deadline), so nothing is left half-cancelled.
            if record.finished or not await self._finish_once(key, cancelled_result(key)):
                dispositions[key] = "not_found"
                if record.status == RolloutStatus.CANCELLED.value:
                    # Cancelled, but perhaps by a cancel whose answer was lost before it stopped the run: stop it.
                    await self.engine.cancel(key)
                continue
            dispositions[key] = disposition
            await self.engine.cancel(key)
            found = metrics.peek()
            if found is not None:
                found.child(found.cancels, self.agent).inc()
        cancelled = sum(1 for d in dispositions.values() if d.startswith("cancelled"))
        logger.info("Cancelled %d rollout(s)", cancelled)
        return JSONResponse({"dispositions": dispositions})

    # -- health ----------------------------------------------------------------------------------------------

    def health_fields(self) -> dict[str, Any]:
        """``instance_id``, ``process_id`` and ``lifecycle`` (0.3.8 ``/health``)."""
        return {
            "instance_id": self.identity.instance_id,
            "process_id": self.identity.process_id,
            "lifecycle": {"accepting_rollouts": self.engine.accepting, "active_rollouts": self.engine.active_count},
        }

    async def close(self) -> None:
        """Stop lease timers (after the engine drained)."""
        for timer in self._lease_timers.values():
            timer.cancel()
        self._lease_timers.clear()
        tasks = list(self._lease_checks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.ownership.enabled:
            await asyncio.to_thread(self.ownership.close)  # a blocking flush: off the event loop

    # -- routes ----------------------------------------------------------------------------------------------

    def add_routes(self, router: APIRouter | Any) -> None:
        """Add ``GET /rollout/{rollout_id}/result`` and ``POST /rollout/cancel`` to ``router`` (an app or router).
        ``POST /rollout`` is :func:`~.protocol.add_rollout_entry`'s, since the 0.2.x protocol shares it."""
        guard = self.guard

        async def rollout_result(
            raw: Request, rollout_id: str, lease_token: str = Header(alias=POLLING_LEASE_HEADER, min_length=1)
        ) -> Any:
            denied = guard(raw) if guard is not None else None
            return denied or await _or_unavailable(self.result(rollout_id, lease_token))

        async def cancel(raw: Request, request: CancelRolloutsRequest) -> Any:
            denied = guard(raw) if guard is not None else None
            return denied or await _or_unavailable(self.cancel(request))

        router.add_api_route(
            "/rollout/{rollout_id}/result",
            rollout_result,
            methods=["GET"],
            response_model=RolloutResultResponse,
            summary="Long-poll a rollout's status or final result (0.3.8 polling protocol)",
        )
        router.add_api_route(
            "/rollout/cancel", cancel, methods=["POST"], summary="Cancel rollouts by ids, prefix or all (0.3.8)"
        )


#: The name this class had before the three protocols became peers.
PollingRollouts = PollingProtocol


async def _or_unavailable(answer: Awaitable[JSONResponse]) -> JSONResponse:
    """503 while the rollout store is unreachable (RolloutClient retries result reads on 503)."""
    try:
        return await answer
    except StoreUnavailableError as exc:
        logger.warning("Answering 503: the rollout store is unavailable: %s", exc)
        return JSONResponse({"detail": STORE_UNAVAILABLE_DETAIL}, status_code=503)


def _lease_expired(record: RolloutRecord, now: float | None = None) -> bool:
    return record.lease_deadline is not None and (time.time() if now is None else now) >= record.lease_deadline


def _held(record: RolloutRecord | Snapshot | None) -> JSONResponse:
    if record is None or record.result is None:
        # Finished without a held result (e.g. dropped at the end of its retention meanwhile).
        return JSONResponse({"detail": "unknown rollout_id"}, status_code=404)
    return JSONResponse(record.result)


