"""``LocalBackend`` — runs workflow and grader in this process (upstream ``backend/local/backend.py``, spec §2.10
and workflow-api §6 for 0.3).

One rollout, inside one concurrency slot: run the workflow (new instance, deep-copied config) in the ambient
``RolloutContext``, collect its samples, then — if a grader exists, the request has a label or metadata and the
workflow succeeded — grade and check every sample has a reward; otherwise grading fails (with a message saying
why). Two call forms: 0.2.x reports each phase to callbacks (``execute(request, on_workflow_complete,
on_grader_complete)``); 0.3 returns an ``ExecutionOutcome`` (``execute(request)``) and honours ``grade=False``.

Deliberate differences from upstream 0.2.31 (docs/workflow-api.md):

- ``agent_timeout_sec`` (counted from admission, so queueing for a slot uses the budget) and
  ``grader_timeout_sec`` are enforced as 0.3.8 does; exceeding one is a failure with category ``timeout`` and
  0.3.8's message (``"workflow exceeded its 1.0s deadline"``);
- a failure while collecting samples is the workflow's failure (upstream let it escape ``execute``);
- 0.3: ``run()`` may return an ``AgentWorkflowOutput`` or a list of message dicts (see ``types/output.py``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import time
from collections.abc import Awaitable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from osmosis_compat.workflow.agent_workflow import AgentWorkflow
from osmosis_compat.workflow.backend.base import ExecutionBackend, ResultCallback
from osmosis_compat.workflow.context import AgentWorkflowContext, GraderContext, RolloutContext, get_rollout_context
from osmosis_compat.workflow.grader import Grader
from osmosis_compat.workflow.types.config import AgentWorkflowConfig, GraderConfig
from osmosis_compat.workflow.types.output import AgentWorkflowOutput
from osmosis_compat.workflow.types.sample import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
)
from osmosis_compat.workflow.utils.concurrency import ConcurrencyLimiter
from osmosis_compat.workflow.utils.file_artifacts import create_rollout_artifacts_dir, default_artifact_root
from osmosis_compat.workflow.utils.imports import resolve_object
from osmosis_compat.workflow.utils.rewards import validate_samples_have_rewards

__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "LocalBackend",
    "PhaseTimeoutError",
    "categorize_exception",
    "current_execution_request",
    "deadline_message",
]

logger = logging.getLogger("osmosis_ai.rollout.backend.local")

DEFAULT_MAX_CONCURRENT = 4
"""Limit used when ``LocalBackend`` gets no ``workflow_config`` (with a config, its ``concurrency`` decides)."""

T = TypeVar("T")


class PhaseTimeoutError(TimeoutError):
    """A workflow or grader exceeded the request's ``agent_timeout_sec`` / ``grader_timeout_sec``."""


_current_request: ContextVar[ExecutionRequest | None] = ContextVar("osmosis_current_execution_request", default=None)


def current_execution_request() -> ExecutionRequest | None:
    """The request whose workflow phase is running in this task (``None`` elsewhere). Not upstream API: the
    adapters use it to show a legacy loop the request label (0.2.x workflows never see the label)."""
    return _current_request.get()


def categorize_exception(exc: BaseException) -> RolloutErrorCategory:
    """An ``err_category`` attribute naming a category wins (the adapters tag HTTP failures of model calls with
    ``http_error`` that way); else ``TimeoutError`` → ``timeout``; ``ValueError``/``TypeError``/``AssertionError``
    (pydantic's ``ValidationError`` is a ``ValueError``) → ``validation_error``; anything else → ``agent_error``."""
    tagged = getattr(exc, "err_category", None)
    if isinstance(tagged, str) and tagged in {c.value for c in RolloutErrorCategory}:
        return RolloutErrorCategory(tagged)
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return RolloutErrorCategory.TIMEOUT
    if isinstance(exc, (ValueError, TypeError, AssertionError)):
        return RolloutErrorCategory.VALIDATION_ERROR
    return RolloutErrorCategory.AGENT_ERROR


def _budget(seconds: float | None, spent: float = 0.0) -> float | None:
    """The seconds left of a deadline after ``spent`` seconds (never negative), or ``None`` for no deadline."""
    if seconds is None or not math.isfinite(seconds):
        return None
    return max(seconds - spent, 0.0)


def deadline_message(phase: str, limit: float | None, queued_sec: float = 0.0) -> str:
    """0.3.8's text for a deadline that fired: ``"workflow exceeded its 1.0s deadline"`` (+ time spent queued)."""
    message = f"{phase} exceeded its {limit}s deadline"
    if queued_sec >= 0.1:
        message += f" ({queued_sec:.1f}s of it spent queued)"
    return message


async def _within(awaitable: Awaitable[T], seconds: float | None, what: str) -> T:
    if seconds is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, timeout=seconds)
    except (TimeoutError, asyncio.TimeoutError) as exc:
        if isinstance(exc, PhaseTimeoutError):
            raise
        raise PhaseTimeoutError(what) from None


def _overran(started: float, budget: float | None) -> bool:
    """Code that blocked the event loop past its deadline returned anyway: 0.3.8 still reports a timeout, since
    the controller stopped waiting."""
    return budget is not None and time.monotonic() - started > budget


def _messages_returned(output: Any) -> list[Mapping[str, Any]] | None:
    """0.3: ``run()`` may return the sample's messages as a list of dicts."""
    if isinstance(output, list) and output and all(isinstance(m, Mapping) for m in output):
        return output
    return None


def _no_grading_reason(has_grader: bool) -> str:
    if not has_grader:
        return "grading was requested but the workflow has no grader: serve it with a Grader, or send grade: false"
    return "grading needs a label or metadata, and the request had neither"


class LocalBackend(ExecutionBackend):
    """Runs ``workflow`` (+ ``grader``) in-process. Each argument may be the object or a ``"module:attr"`` string.

    Concurrency: ``workflow_config.concurrency.max_concurrent`` when a ``workflow_config`` is given (``None`` =
    unlimited), else 4. ``GraderConfig.concurrency`` is not consulted.
    """

    def __init__(
        self,
        *,
        workflow: type[AgentWorkflow[Any]] | str,
        workflow_config: AgentWorkflowConfig | str | None = None,
        grader: type[Grader] | str | None = None,
        grader_config: GraderConfig | str | None = None,
    ) -> None:
        self.workflow_cls: type[AgentWorkflow[Any]] = resolve_object(workflow) if workflow else None  # type: ignore[assignment]
        self.workflow_config: AgentWorkflowConfig | None = resolve_object(workflow_config) if workflow_config else None
        self.grader_cls: type[Grader] | None = resolve_object(grader) if grader else None
        self.grader_config: GraderConfig | None = resolve_object(grader_config) if grader_config else None
        if not isinstance(self.workflow_cls, type):
            raise TypeError(
                f"LocalBackend(workflow=...) expects an AgentWorkflow subclass or a 'module:attr' string naming one; "
                f"got {workflow!r}"
            )
        if self.grader_cls is not None and not isinstance(self.grader_cls, type):
            raise TypeError(
                f"LocalBackend(grader=...) expects a Grader subclass or a 'module:attr' string naming one; got {grader!r}"
            )
        if self.workflow_config is not None:
            concurrency = getattr(self.workflow_config, "concurrency", None)
            max_concurrent = getattr(concurrency, "max_concurrent", None)
        else:
            max_concurrent = DEFAULT_MAX_CONCURRENT
        self.limiter = ConcurrencyLimiter(max_concurrent=max_concurrent)
        self.artifact_root: Path = default_artifact_root()

    @property
    def max_concurrency(self) -> int:
        return self.limiter.max_concurrent or 0

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "concurrency": self.limiter.snapshot()}

    async def execute(
        self,
        request: ExecutionRequest,
        on_workflow_complete: ResultCallback | None = None,
        on_grader_complete: ResultCallback | None = None,
    ) -> ExecutionOutcome | None:
        """Run one rollout inside one concurrency slot: the workflow, then grading.

        0.2.x form (``on_workflow_complete`` given): report the workflow result, then — when
        ``on_grader_complete`` is given — the graded result (or a bare grading failure); returns ``None``.
        0.3 form (no callbacks): returns the :class:`ExecutionOutcome`; grading is skipped for ``grade=False``
        or a failed workflow, and the current ``RolloutContext`` is told ``grading`` when grading starts.
        """
        admitted_at = time.monotonic()
        rollout_ctx = get_rollout_context()
        async with self.limiter.acquire():
            queued_sec = time.monotonic() - admitted_at
            result = await self.run_workflow(request, queued_sec=queued_sec)
            if on_workflow_complete is not None:
                await on_workflow_complete(result)
                if on_grader_complete is not None:
                    await on_grader_complete(await self._grade(request, result, rollout_ctx))
                return None
            if not request.grade or result.status != RolloutStatus.SUCCESS:
                return ExecutionOutcome(workflow=result)
            return ExecutionOutcome(workflow=result, grader=await self._grade(request, result, rollout_ctx))

    async def _grade(
        self, request: ExecutionRequest, result: ExecutionResult, rollout_ctx: RolloutContext | None
    ) -> ExecutionResult:
        wants_grading = request.label is not None or request.metadata is not None
        if self.grader_cls is None or not wants_grading or result.status != RolloutStatus.SUCCESS:
            # 0.2.31's grader callback says nothing here; a 0.3 result says why, since it is all the controller sees.
            explain = result.status == RolloutStatus.SUCCESS and rollout_ctx is not None and not rollout_ctx.routing_headers
            message = _no_grading_reason(self.grader_cls is not None) if explain else None
            return ExecutionResult(status=RolloutStatus.FAILURE, err_message=message)
        if rollout_ctx is not None:
            await rollout_ctx.set_status(RolloutStatus.GRADING.value)
        return await self.run_grader(request, result)

    async def run_workflow(self, request: ExecutionRequest, *, queued_sec: float = 0.0) -> ExecutionResult:
        """Run the workflow phase of ``request`` with what is left of its ``agent_timeout_sec`` after
        ``queued_sec``; never raises for workflow errors — they become a failure result without samples."""
        budget = _budget(request.agent_timeout_sec, queued_sec)
        rollout_ctx = get_rollout_context() or RolloutContext()
        what = deadline_message("workflow", request.agent_timeout_sec, queued_sec)
        started = time.monotonic()
        try:
            ctx = AgentWorkflowContext(
                prompt=request.prompt,
                config=copy.deepcopy(self.workflow_config),
                metadata=request.metadata,
                artifacts_dir=await self._artifacts_dir(request),
            )
            workflow = self.workflow_cls(ctx.config)
            token = _current_request.set(request)
            try:
                # Enter the context in this task (only run() goes under the deadline), so leaving it has the same
                # effect with or without a timeout: the grader phase sees no current RolloutContext (upstream).
                with rollout_ctx:
                    output = await _within(workflow.run(ctx), budget, what)
            finally:
                _current_request.reset(token)
            name = rollout_ctx.rollout_id or request.id
            if isinstance(output, AgentWorkflowOutput):
                output = AgentWorkflowOutput.model_validate(output)  # re-checked: it may have been mutated
                samples = (
                    {}
                    if output.messages is None
                    else {name: RolloutSample(id=name, messages=output.messages, label=request.label, metrics=dict(output.metrics))}
                )
            elif (messages := None if rollout_ctx.sample_sources else _messages_returned(output)) is not None:
                samples = {name: RolloutSample(id=name, messages=messages)}
            else:
                samples = await _within(rollout_ctx.get_samples(), _budget(budget, time.monotonic() - started), what)
            if _overran(started, budget):
                raise PhaseTimeoutError(what)
        except Exception as exc:
            logger.error("Workflow failed for rollout %s: %s", request.id, exc, exc_info=True)
            return ExecutionResult(
                status=RolloutStatus.FAILURE, err_message=str(exc), err_category=categorize_exception(exc)
            )
        return ExecutionResult(status=RolloutStatus.SUCCESS, samples=samples)

    async def run_grader(self, request: ExecutionRequest, result: ExecutionResult) -> ExecutionResult:
        """Grade ``result.samples`` (with ``grader_timeout_sec``) and require a reward on every sample; a failure
        result still carries the samples, with whatever rewards were set."""
        budget = _budget(request.grader_timeout_sec)
        started = time.monotonic()
        try:
            ctx = GraderContext(
                label=request.label,
                samples=result.samples,
                metadata=request.metadata,
                artifacts_dir=await self._artifacts_dir(request),
            )
            assert self.grader_cls is not None
            grader = self.grader_cls(self.grader_config)
            what = deadline_message("grader", request.grader_timeout_sec)
            await _within(grader.grade(ctx), budget, what)
            if _overran(started, budget):
                raise PhaseTimeoutError(what)
            validate_samples_have_rewards(ctx.samples)
        except Exception as exc:
            logger.error("Grader failed for rollout %s: %s", request.id, exc, exc_info=True)
            return ExecutionResult(
                status=RolloutStatus.FAILURE,
                samples=result.samples,
                err_message=str(exc),
                err_category=categorize_exception(exc),
            )
        return ExecutionResult(status=RolloutStatus.SUCCESS, samples=ctx.get_samples())

    async def _artifacts_dir(self, request: ExecutionRequest) -> Path | None:
        return await create_rollout_artifacts_dir(self.artifact_root, request.id)
