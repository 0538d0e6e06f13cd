"""The 0.2.31 workflow callback protocol (spec workflow-api §3): :class:`WorkflowCallbacks`, one peer of
:mod:`.protocol`.

Request flow: FastAPI validates the ``RolloutInitRequest`` body (422 with details) → the engine admits the rollout
under its ``rollout_id`` (a rollout_id that is still running is not started again; the duplicate gets the same
200 ``{}``; an id another protocol holds gets 409) → 200 ``{}`` → in a tracked background task, inside the
rollout's ``RolloutContext``, ``backend.execute`` runs the workflow; the completion callback is posted before
grading starts, the grader callback after it; both through the runtime's callback sender (retry per spec §3.8,
each kind delivered at most once).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi.responses import JSONResponse

from osmosis_compat.runtime.callbacks import CallbackLedger, CallbackSender, get_workflow_callback_policy
from osmosis_compat.runtime.engine import Admission, RolloutEngine
from osmosis_compat.runtime.jsonwire import NotJSONError
from osmosis_compat.runtime.wirecheck import HostAllowList
from osmosis_compat.workflow.auth import ControllerAuth
from osmosis_compat.workflow.backend.base import ExecutionBackend
from osmosis_compat.workflow.context import RolloutContext
from osmosis_compat.workflow.types.protocol import (
    GraderCompleteRequest,
    GraderStatus,
    RolloutCompleteRequest,
    RolloutInitRequest,
)
from osmosis_compat.workflow.types.sample import (
    ExecutionResult,
    RolloutErrorCategory,
    RolloutStatus,
)

from .executors import execution_request
from .protocol import AdmissionRefused, RolloutProtocol

__all__ = ["COMPLETION", "GRADER", "INTERNAL_ERROR_MESSAGE", "SHUTDOWN_ERROR_MESSAGE", "WorkflowCallbacks"]

logger = logging.getLogger("osmosis_ai.rollout.server.app")

INTERNAL_ERROR_MESSAGE = "Internal server error"
SHUTDOWN_ERROR_MESSAGE = "Rollout aborted: the rollout server shut down before the rollout finished"

COMPLETION = "completion"
GRADER = "grader"


class WorkflowCallbacks(RolloutProtocol):
    """The 0.2.31 callback protocol for ``backend`` over ``engine`` (see the module docstring): its side of
    ``POST /rollout`` (bodies with callback URLs), the completion and grader callbacks."""

    name = "workflow"

    def __init__(
        self, engine: RolloutEngine, backend: ExecutionBackend, *, agent: str = "", allow_list: HostAllowList | None = None
    ) -> None:
        super().__init__(engine, agent=agent, allow_list=allow_list)
        self.backend = backend
        self.sender = CallbackSender(get_workflow_callback_policy())

    async def admit_request(self, request: RolloutInitRequest) -> JSONResponse:
        """``POST /rollout`` with callback URLs, after auth: 200 ``{}`` (also for a duplicate of a rollout still
        running, which starts nothing); 409 for an id another protocol holds."""
        rejected = self.url_rejection(
            {
                "chat_completions_url": request.chat_completions_url,
                "completion_callback_url": request.completion_callback_url,
                "grader_callback_url": request.grader_callback_url,
            }
        )
        if rejected is not None:
            return rejected
        try:
            submission = await self.admit(
                request.rollout_id,
                run=lambda admission: self.run(request, admission),
                abort=lambda admission: self.abort(request, admission),
            )
        except AdmissionRefused as refused:
            return refused.response
        if not submission.created:
            logger.warning("Rollout %s is already running; the duplicate request starts nothing", request.rollout_id)
        return JSONResponse({})

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
                admission.context["outcome"] = _outcome(result)
                await self.send_completion(request, ledger, result)

            async def on_grader_complete(result: ExecutionResult) -> None:
                admission.context["outcome"] = _outcome(result)
                await self.send_grader(request, ledger, result)

            with rollout_ctx:
                await self.backend.execute(
                    execution,
                    on_workflow_complete,
                    on_grader_complete if request.grader_callback_url else None,
                )
        except Exception:
            logger.exception("Rollout %s failed in the server; reporting it as failed", request.rollout_id)
            admission.context["outcome"] = "failure"
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


def _outcome(result: ExecutionResult) -> str:
    """The metrics' outcome of a backend result."""
    return "success" if result.status == RolloutStatus.SUCCESS else "failure"
