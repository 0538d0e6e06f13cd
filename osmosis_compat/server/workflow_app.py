"""``create_rollout_server``: the ``/rollout`` protocols of 0.2.31 (callbacks, spec workflow-api §3) and 0.3.8
(polling, spec polling-protocol.md) on the shared engine. ``POST /rollout`` is shared: a body with
``completion_callback_url`` takes the 0.2.31 path below; one without it (what a 0.3.8 controller sends) the
polling router (:mod:`.polling`), which holds the result for ``GET /rollout/{id}/result``.

0.2.31 request flow: FastAPI validates the ``RolloutInitRequest`` body (422 with details) → the engine admits the rollout
under its ``rollout_id`` (a rollout_id that is still running is not started again; the duplicate gets the same
200 ``{}``) → 200 ``{}`` → in a tracked background task, inside the rollout's ``RolloutContext``,
``backend.execute`` runs the workflow; the completion callback is posted before grading starts, the grader
callback after it; both through the runtime's callback sender (retry per spec §3.8, each kind delivered at most
once).

Deliberate differences from upstream 0.2.31 (docs/workflow-api.md):

- a ``rollout_id`` already running is not started twice (upstream ran both and duplicated every callback);
  once it has finished, the same id may be submitted again, as upstream;
- the error path never posts a second completion/grader callback after one was delivered;
- graceful shutdown drains in-flight rollouts for a bounded time, then sends each one failure callbacks
  (upstream dropped them silently);
- a sample holding a value JSON cannot carry (bytes, datetime, NaN, infinity) gives a grader failure callback
  naming the value's path (upstream's POST raised and the rollout ended as "Internal server error");
- trajectories are not saved to ``~/.osmosis`` (ATIF persistence is out of scope).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from osmosis_compat.runtime.callbacks import CallbackLedger, CallbackSender, get_workflow_callback_policy
from osmosis_compat.runtime.engine import Admission, EngineClosedError, EngineFullError, RolloutEngine
from osmosis_compat.runtime.http import aclose_clients
from osmosis_compat.runtime.jsonwire import NotJSONError
from osmosis_compat.runtime.store import RolloutStore, StoreUnavailableError
from osmosis_compat.runtime.wirecheck import HostAllowList, resolve_controller_hosts
from osmosis_compat.server.errors import install_error_handlers
from osmosis_compat.server.executors import WorkflowExecutor, execution_request
from osmosis_compat.server.security import callback_auth_notice, controller_url_rejection, route_path
from osmosis_compat.server.polling import (
    DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    DEFAULT_RESULT_RETENTION_SEC,
    DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    PollingRollouts,
    PollingSettings,
    bearer_guard,
    process_identity,
)
from osmosis_compat.workflow.auth import ControllerAuth
from osmosis_compat.workflow.backend.base import ExecutionBackend
from osmosis_compat.workflow.context import RolloutContext
from osmosis_compat.workflow.types.protocol import (
    GraderCompleteRequest,
    GraderStatus,
    RolloutCompleteRequest,
    RolloutInitRequest,
    RolloutInitResponse,
)
from osmosis_compat.workflow.types.sample import (
    ExecutionResult,
    RolloutErrorCategory,
    RolloutStatus,
)

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT_SECONDS",
    "INTERNAL_ERROR_MESSAGE",
    "SHUTDOWN_ERROR_MESSAGE",
    "create_rollout_server",
]

logger = logging.getLogger("osmosis_ai.rollout.server.app")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
INTERNAL_ERROR_MESSAGE = "Internal server error"
SHUTDOWN_ERROR_MESSAGE = "Rollout aborted: the rollout server shut down before the rollout finished"
DEFAULT_DRAIN_TIMEOUT_SECONDS = 10.0

COMPLETION = "completion"
GRADER = "grader"


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)


def _user_lifespan(lifespan: Any, app: FastAPI) -> AbstractAsyncContextManager[Any]:
    """Open the user's ``lifespan`` whatever shape FastAPI/Starlette accept: a callable returning an async (or
    sync) context manager, or an (async) generator function."""
    if inspect.isasyncgenfunction(lifespan):
        return asynccontextmanager(lifespan)(app)
    if inspect.isgeneratorfunction(lifespan):
        from contextlib import contextmanager

        return _sync_to_async(contextmanager(lifespan)(app))
    manager = lifespan(app)
    if isinstance(manager, AbstractContextManager) and not isinstance(manager, AbstractAsyncContextManager):
        return _sync_to_async(manager)
    return manager


@asynccontextmanager
async def _sync_to_async(manager: AbstractContextManager[Any]) -> AsyncIterator[Any]:
    with manager as state:
        yield state


class _WorkflowRollouts:
    """The protocol's side of one server: turns requests into engine submissions and results into callbacks."""

    def __init__(self, backend: ExecutionBackend, engine: RolloutEngine) -> None:
        self.backend = backend
        self.engine = engine
        self.sender = CallbackSender(get_workflow_callback_policy())

    async def submit(self, request: RolloutInitRequest) -> bool:
        """Admit ``request``; ``False`` when the same ``rollout_id`` is already running (nothing started)."""
        submission = await self.engine.submit(
            request.rollout_id,
            run=lambda admission: self.run(request, admission),
            abort=lambda admission: self.abort(request, admission),
            protocol="workflow",
        )
        if not submission.created:
            logger.warning("Rollout %s is already running; the duplicate request starts nothing", request.rollout_id)
        return submission.created

    # -- one rollout ------------------------------------------------------------------------------------------

    async def run(self, request: RolloutInitRequest, admission: Admission) -> None:
        ledger = CallbackLedger(request.rollout_id)
        admission.context["ledger"] = ledger
        try:
            execution = execution_request(request)
            rollout_ctx = RolloutContext(
                chat_completions_url=request.chat_completions_url,
                api_key=request.model_api_key,
                rollout_id=request.rollout_id,
            )

            async def on_workflow_complete(result: ExecutionResult) -> None:
                await self.send_completion(request, ledger, result)

            async def on_grader_complete(result: ExecutionResult) -> None:
                await self.send_grader(request, ledger, result)

            with rollout_ctx:
                await self.backend.execute(
                    execution,
                    on_workflow_complete,
                    on_grader_complete if request.grader_callback_url else None,
                )
        except Exception:
            logger.exception("Rollout %s failed in the server; reporting it as failed", request.rollout_id)
            await self.report_failure(request, ledger, INTERNAL_ERROR_MESSAGE)

    async def abort(self, request: RolloutInitRequest, admission: Admission) -> None:
        """Shutdown: the engine cancelled this rollout after the drain period — tell the controller."""
        ledger = admission.context.get("ledger") or CallbackLedger(request.rollout_id)
        logger.warning("Rollout %s aborted by shutdown; sending failure callbacks", request.rollout_id)
        await self.report_failure(request, ledger, SHUTDOWN_ERROR_MESSAGE)

    # -- callbacks --------------------------------------------------------------------------------------------

    def _headers(self, request: RolloutInitRequest) -> dict[str, str] | None:
        return ControllerAuth(api_key=request.controller_api_key).as_bearer_headers()

    async def _post(self, request: RolloutInitRequest, ledger: CallbackLedger, kind: str, url: str, payload: Any) -> None:
        if kind == (GRADER if request.grader_callback_url else COMPLETION):
            # The terminal callback: a controller may resubmit this rollout_id the moment it arrives.
            admission = self.engine.get(request.rollout_id)
            if admission is not None and admission.context.get("ledger") is ledger:
                await self.engine.release(admission)
        await self.sender.send(
            url,
            payload,
            kind=kind,
            ledger=ledger,
            headers=self._headers(request),
            policy=get_workflow_callback_policy(),
        )

    async def send_completion(self, request: RolloutInitRequest, ledger: CallbackLedger, result: ExecutionResult) -> None:
        payload = RolloutCompleteRequest(
            rollout_id=request.rollout_id,
            status=result.status,
            err_message=result.err_message,
            err_category=result.err_category,
        ).model_dump()
        await self._post(request, ledger, COMPLETION, request.completion_callback_url, payload)

    async def send_grader(self, request: RolloutInitRequest, ledger: CallbackLedger, result: ExecutionResult) -> None:
        assert request.grader_callback_url is not None
        body = GraderCompleteRequest(
            rollout_id=request.rollout_id,
            status=GraderStatus.SUCCESS if result.status == RolloutStatus.SUCCESS else GraderStatus.FAILURE,
            samples=result.samples,
            err_message=result.err_message,
            err_category=result.err_category,
        )
        try:
            await self._post(request, ledger, GRADER, request.grader_callback_url, body.wire_payload())
        except NotJSONError as exc:
            # Encoded before any request: nothing was sent, so a clear failure can still go out.
            logger.error("Rollout %s: grader callback payload is not JSON: %s", request.rollout_id, exc)
            failure = GraderCompleteRequest(
                rollout_id=request.rollout_id,
                status=GraderStatus.FAILURE,
                err_message=(
                    f"Sample data cannot be sent as JSON ({exc}). Samples may hold only JSON values: no bytes, "
                    "datetimes, NaN or infinity."
                ),
                err_category=RolloutErrorCategory.VALIDATION_ERROR,
            )
            await self._post(request, ledger, GRADER, request.grader_callback_url, failure.wire_payload())

    async def report_failure(self, request: RolloutInitRequest, ledger: CallbackLedger, message: str) -> None:
        """Error path (spec §3.4 step 6): completion failure, then grader failure — each only if that callback was
        not already delivered; delivery errors are logged, never raised. A callback still being delivered (e.g.
        when shutdown cancelled the rollout mid-delivery) is waited for first: if it gets through, it stands."""
        completion = RolloutCompleteRequest(
            rollout_id=request.rollout_id, status=RolloutStatus.FAILURE, err_message=message
        ).model_dump()
        await ledger.settle(COMPLETION)
        try:
            if not ledger.was_delivered(COMPLETION):
                await self._post(request, ledger, COMPLETION, request.completion_callback_url, completion)
        except Exception:
            logger.exception("Rollout %s: failure completion callback could not be delivered", request.rollout_id)
        if not request.grader_callback_url:
            return
        await ledger.settle(GRADER)
        if ledger.was_delivered(GRADER):
            return
        grader = GraderCompleteRequest(rollout_id=request.rollout_id, status=GraderStatus.FAILURE).wire_payload()
        try:
            await self._post(request, ledger, GRADER, request.grader_callback_url, grader)
        except Exception:
            logger.exception("Rollout %s: failure grader callback could not be delivered", request.rollout_id)


def create_rollout_server(
    *,
    backend: ExecutionBackend,
    lifespan: Callable[[FastAPI], Any] | None = None,
    configure_logging: bool = True,
    result_wait_timeout_sec: float = DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    polling_lease_timeout_sec: float = DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    result_retention_sec: float = DEFAULT_RESULT_RETENTION_SEC,
    api_key: str | None = None,
    drain_timeout_seconds: float = DEFAULT_DRAIN_TIMEOUT_SECONDS,
    store: RolloutStore | None = None,
    max_pending: int | None = None,
    keyless_callbacks: bool = False,
    controller_hosts: str | Sequence[str] | HostAllowList | None = None,
    announce_auth: bool = True,
) -> FastAPI:
    """Build the rollout server app for ``backend``: both ``/rollout`` protocols on one engine.

    Routes: ``GET /health``; ``POST /rollout`` — a body with ``completion_callback_url`` is a 0.2.31 admission
    (200 ``{}``, results to the callbacks), one without it a 0.3.8 admission (202 + polling lease);
    ``GET /rollout/{rollout_id}/result`` and ``POST /rollout/cancel`` (0.3.8).

    0.3.8 keyword arguments: ``result_wait_timeout_sec`` (long-poll wait, 30), ``polling_lease_timeout_sec`` (120,
    must exceed the wait), ``result_retention_sec`` (how long a finished result is held, 900), ``api_key`` (every
    route then requires ``Authorization: Bearer <api_key>``, else 401). ``lifespan`` is the user's FastAPI
    lifespan (entered after the engine starts, left after in-flight rollouts drained); ``configure_logging=True``
    sets up INFO logging only if the root logger has no handler.

    osmosis-compat additions: ``drain_timeout_seconds`` bounds how long shutdown waits for in-flight rollouts
    before ending them (failure callbacks, or a held ``failure`` result); ``store`` is where rollout state lives
    (default in memory; a shared store lets several processes serve as one); ``max_pending`` caps admitted,
    unfinished rollouts (429 + ``Retry-After`` beyond it; default: no cap, as upstream's ``LocalBackend``).

    Security (docs/serving.md, "Keys and hosts"): a 0.2.31 callback controller sends no key, so with ``api_key`` its
    bodies get 401 — said in a logged warning at creation (``announce_auth=False`` leaves that to a caller that
    hosts several apps). ``keyless_callbacks=True`` deliberately admits bodies with callback URLs without the key
    (polling bodies and every other route still need it). ``controller_hosts`` (``"a,b"`` or a list; default
    ``$OSMOSIS_COMPAT_CONTROLLER_HOSTS``; empty: any host) restricts the hosts the chat and callback URLs of an
    admission may name (422 otherwise).
    """
    if configure_logging:
        _configure_logging()
    if api_key is not None and not api_key.strip():
        raise ValueError("api_key must be non-empty when provided")
    allow_list = resolve_controller_hosts(controller_hosts)
    if api_key is not None and announce_auth:
        logger.warning(callback_auth_notice(["/rollout"], keyless_callbacks=keyless_callbacks, allow_list=allow_list))
    settings = PollingSettings(result_wait_timeout_sec, polling_lease_timeout_sec, result_retention_sec)
    identity = process_identity()
    engine = RolloutEngine(
        max_concurrent=None,
        keep_completed=False,
        drain_timeout_seconds=drain_timeout_seconds,
        max_pending=max_pending,
        store=store,
        instance_id=identity.process_id,
    )
    rollouts = _WorkflowRollouts(backend, engine)
    polling = PollingRollouts(engine, WorkflowExecutor(backend, process_id=identity.process_id), settings, identity=identity)

    @asynccontextmanager
    async def server_lifespan(app: FastAPI) -> AsyncIterator[Any]:
        await engine.store.start()
        engine.start()
        try:
            if lifespan is None:
                yield
            else:
                async with _user_lifespan(lifespan, app) as state:
                    try:
                        yield state
                    finally:
                        # Drain before the user's resources close: in-flight workflows may still use them.
                        await engine.shutdown()
        finally:
            await engine.shutdown()
            await polling.close()
            shutdown = getattr(backend, "shutdown", None)
            if shutdown is not None:
                try:
                    await shutdown()
                except Exception:
                    logger.exception("The backend's shutdown() failed")
            await engine.store.close()
            await aclose_clients()

    app = FastAPI(title="Osmosis rollout server (workflow)", lifespan=server_lifespan)
    install_error_handlers(app)
    app.state.rollout_engine = engine
    app.state.rollout_backend = backend
    app.state.rollout_polling = polling
    require_key = bearer_guard(api_key)
    if api_key is not None:

        @app.middleware("http")
        async def authenticate(request: Request, call_next: Any) -> Any:
            if keyless_callbacks and request.method == "POST" and route_path(request.scope) == "/rollout":
                return await call_next(request)  # the route checks the key unless the body has callback URLs
            return require_key(request) or await call_next(request)

    @app.get("/health")
    async def health() -> Any:
        payload = dict(backend.health())
        payload.update(polling.health_fields())
        return payload

    @app.post("/rollout", response_model=RolloutInitResponse)
    async def rollout(request: RolloutInitRequest, raw: Request) -> Any:
        if keyless_callbacks and not request.uses_callbacks:
            denied = require_key(raw)
            if denied is not None:
                return denied
        rejected = controller_url_rejection(
            allow_list,
            {
                "chat_completions_url": request.chat_completions_url,
                "completion_callback_url": request.completion_callback_url,
                "grader_callback_url": request.grader_callback_url,
            },
        )
        if rejected is not None:
            return rejected
        if not request.uses_callbacks:
            return await polling.admit(request)
        try:
            await rollouts.submit(request)
        except EngineClosedError as exc:
            return JSONResponse(status_code=503, content={"detail": str(exc)})
        except EngineFullError:
            return JSONResponse(
                status_code=429, content={"detail": "rollout queue is full; retry later"}, headers={"Retry-After": "5"}
            )
        except StoreUnavailableError as exc:
            logger.error("Rollout %s not admitted: the rollout store is unavailable: %s", request.rollout_id, exc)
            return JSONResponse(status_code=503, content={"detail": "rollout store unavailable; retry later"})
        return JSONResponse({})

    polling.add_result_routes(app)
    return app
