"""What runs a rollout for the polling protocol (:class:`~.polling.PollingExecutor`), one per kind of agent.

- :class:`WorkflowExecutor` — a workflow backend (``LocalBackend`` or a user's own, 0.2.x callback form or 0.3
  ``execute(request) -> ExecutionOutcome`` form), inside the rollout's ``RolloutContext``;
- :class:`LoopExecutor` — a legacy ``RolloutAgentLoop``, unchanged: ``ctx.chat`` goes non-streaming to
  ``<chat_completions_url>/chat/completions`` with ``Bearer <llm_api_key>`` and the loop's tools in every body (a
  polling controller never reads an init response), and ``ctx.complete``'s messages and reward become the sample.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from typing import Any

from osmosis_compat.workflow.context import API_KEY_ENV, RolloutContext
from osmosis_compat.workflow.types.protocol import RolloutInitRequest
from osmosis_compat.workflow.types.sample import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
)

from .polling import StatusSetter

__all__ = ["LoopExecutor", "WorkflowExecutor", "execute_backend", "execution_request"]

logger = logging.getLogger("osmosis_ai.rollout.server.app")


def execution_request(request: RolloutInitRequest) -> ExecutionRequest:
    """What a backend runs for ``request`` (either ``/rollout`` protocol)."""
    return ExecutionRequest(
        id=request.rollout_id,
        prompt=request.initial_messages,
        label=request.label,
        metadata=request.metadata,
        agent_timeout_sec=request.agent_timeout_sec,
        grader_timeout_sec=request.grader_timeout_sec,
        grade=request.grade,
    )


class _Progress:
    """What ``RolloutContext.progress`` is for a polling rollout: status changes go to the store."""

    def __init__(self, set_status: StatusSetter) -> None:
        self.set_status = set_status


def _takes_callbacks(execute: Any) -> bool:
    """Whether a backend's ``execute`` is the 0.2.x form (a required result callback after the request)."""
    try:
        parameters = list(inspect.signature(execute).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].default is inspect.Parameter.empty


async def execute_backend(backend: Any, request: ExecutionRequest) -> ExecutionOutcome:
    """Run ``request`` on ``backend`` whichever ``execute`` form it has; the 0.3 outcome either way."""
    if not _takes_callbacks(backend.execute):
        outcome = await backend.execute(request)
        if isinstance(outcome, ExecutionOutcome):
            return outcome
        if outcome is None:
            raise TypeError(f"{type(backend).__name__}.execute(request) returned None, expected an ExecutionOutcome")
        return ExecutionOutcome.model_validate(outcome, from_attributes=True)
    results: dict[str, ExecutionResult] = {}

    async def on_workflow_complete(result: ExecutionResult) -> None:
        results["workflow"] = result

    async def on_grader_complete(result: ExecutionResult) -> None:
        results["grader"] = result

    await backend.execute(request, on_workflow_complete, on_grader_complete if request.grade else None)
    if "workflow" not in results:
        raise RuntimeError(f"{type(backend).__name__}.execute() returned without reporting the workflow result")
    workflow = results["workflow"]
    if workflow.status != RolloutStatus.SUCCESS:
        return ExecutionOutcome(workflow=workflow)
    return ExecutionOutcome(workflow=workflow, grader=results.get("grader"))


class WorkflowExecutor:
    """Runs polling rollouts on a workflow backend."""

    def __init__(self, backend: Any, *, process_id: str | None = None) -> None:
        self.backend = backend
        self.process_id = process_id

    def has_capacity(self) -> bool:
        check = getattr(self.backend, "has_capacity", None)
        return True if check is None else bool(check())

    async def execute(self, request: RolloutInitRequest, set_status: StatusSetter, queued_sec: float = 0.0) -> ExecutionResult:
        rollout_ctx = RolloutContext(
            chat_completions_url=request.chat_completions_url,
            api_key=request.model_api_key,
            rollout_id=request.rollout_id,
            progress=_Progress(set_status),
            process_id=self.process_id,
            routing_headers=False,
        )
        # The backend deducts its own queueing from the agent budget; a workflow server's engine has no slots.
        execution = execution_request(request)
        try:
            with rollout_ctx:
                outcome = await execute_backend(self.backend, execution)
        except Exception as exc:
            from osmosis_compat.workflow.backend.local import categorize_exception

            logger.error("Rollout %s failed in the backend: %s", request.rollout_id, exc, exc_info=True)
            return ExecutionResult(
                status=RolloutStatus.FAILURE,
                err_message=str(exc) or "Internal server error",
                err_category=categorize_exception(exc),
            )
        return outcome.result


class LoopExecutor:
    """Runs polling rollouts of a legacy agent loop (see the module docstring).

    ``label_key`` names the metadata key the request label is shown under (legacy loops read their ground truth
    from the metadata, where TrainGate put it). ``grade: false`` drops the loop's reward; ``grade: true`` with a
    loop that passed no reward to ``ctx.complete`` fails the rollout (``validation_error``), as the adapter's
    grader does.
    """

    def __init__(self, loop: Any, *, client_settings: Any = None, label_key: str = "ground_truth") -> None:
        self.loop = loop
        self.client_settings = client_settings
        self.label_key = label_key

    def has_capacity(self) -> bool:
        return True

    async def execute(self, request: RolloutInitRequest, set_status: StatusSetter, queued_sec: float = 0.0) -> ExecutionResult:
        from osmosis_compat.adapters.legacy_loop_workflow import (
            FINISH_REASON_FIELD,
            legacy_request,
            loop_reward,
            run_loop,
        )
        from osmosis_compat.workflow.backend.local import categorize_exception, deadline_message

        sample_id = str(self.loop.name)
        started = time.monotonic()
        budget = request.agent_timeout_sec
        if budget is not None:
            budget = max(budget - queued_sec, 0.0)
        try:
            legacy = legacy_request(
                self.loop,
                rollout_id=request.rollout_id,
                server_url=request.chat_completions_url,
                prompt=request.initial_messages,
                metadata=request.metadata,
                label=request.label,
                label_key=self.label_key,
            )
            run = run_loop(
                self.loop,
                legacy,
                chat_completions_url=request.chat_completions_url,
                api_key=request.model_api_key or os.environ.get(API_KEY_ENV) or None,
                routing_headers=False,
                client_settings=self.client_settings,
            )
            if budget is None:
                result = await run
            else:
                try:
                    result = await asyncio.wait_for(run, budget)
                except (TimeoutError, asyncio.TimeoutError):
                    return _failure(
                        deadline_message("workflow", request.agent_timeout_sec, queued_sec), RolloutErrorCategory.TIMEOUT
                    )
                if time.monotonic() - started > budget:
                    return _failure(
                        deadline_message("workflow", request.agent_timeout_sec, queued_sec), RolloutErrorCategory.TIMEOUT
                    )
        except Exception as exc:
            logger.error("Legacy loop %r failed for rollout %s: %s", sample_id, request.rollout_id, exc)
            return _failure(str(exc), categorize_exception(exc))
        metrics = result.metrics.model_dump() if getattr(result, "metrics", None) is not None else {}
        sample = RolloutSample(
            id=sample_id,
            messages=list(result.final_messages or []),
            metrics=metrics,
            extra_fields={FINISH_REASON_FIELD: result.finish_reason},
        )
        if not request.grade:
            return ExecutionResult(status=RolloutStatus.SUCCESS, samples={sample_id: sample})
        try:
            sample.reward = loop_reward(sample_id, result.reward)
        except ValueError as exc:
            return ExecutionResult(
                status=RolloutStatus.FAILURE,
                samples={sample_id: sample},
                err_message=str(exc),
                err_category=RolloutErrorCategory.VALIDATION_ERROR,
            )
        return ExecutionResult(status=RolloutStatus.SUCCESS, samples={sample_id: sample})


def _failure(message: str, category: RolloutErrorCategory | str) -> ExecutionResult:
    return ExecutionResult(status=RolloutStatus.FAILURE, err_message=message, err_category=RolloutErrorCategory(category))
