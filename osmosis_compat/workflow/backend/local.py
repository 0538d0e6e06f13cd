"""``LocalBackend`` — runs workflow and grader in this process (upstream ``backend/local/backend.py``, spec §2.10).

One rollout, inside one concurrency slot: run the workflow (new instance, deep-copied config) in the ambient
``RolloutContext``, collect its samples, report them (``on_workflow_complete``), then — if a grader exists, the
request has a label or metadata and the workflow succeeded — grade, check every sample has a reward and report
(``on_grader_complete``); otherwise report a bare grading failure.

Deliberate differences from upstream 0.2.31 (docs/workflow-api.md):

- ``agent_timeout_sec`` (counted from admission, so queueing for a slot uses the budget) and
  ``grader_timeout_sec`` are enforced; exceeding one is a failure with category ``timeout``;
- a failure while collecting samples is the workflow's failure (upstream let it escape ``execute``);
- 0.3: with no sample source registered, a non-empty list of message dicts returned by ``run()`` becomes the
  rollout's one sample.
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
from osmosis_compat.workflow.types.sample import (
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


def _budget(seconds: float | None) -> float | None:
    """A usable deadline in seconds, or ``None`` (no limit) for ``None``, NaN and infinity."""
    if seconds is None or not math.isfinite(seconds):
        return None
    return seconds


async def _within(awaitable: Awaitable[T], seconds: float | None, what: str) -> T:
    if seconds is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, timeout=max(seconds, 0.0))
    except (TimeoutError, asyncio.TimeoutError) as exc:
        if isinstance(exc, PhaseTimeoutError):
            raise
        raise PhaseTimeoutError(what) from None


def _messages_returned(output: Any) -> list[Mapping[str, Any]] | None:
    """0.3: ``run()`` may return the sample's messages as a list of dicts."""
    if isinstance(output, list) and output and all(isinstance(m, Mapping) for m in output):
        return output
    return None


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
        on_workflow_complete: ResultCallback,
        on_grader_complete: ResultCallback | None = None,
    ) -> None:
        """Run one rollout inside one concurrency slot (workflow, both callbacks and grading)."""
        admitted_at = time.monotonic()
        async with self.limiter.acquire():
            agent_budget = _budget(request.agent_timeout_sec)
            if agent_budget is not None:
                agent_budget -= time.monotonic() - admitted_at
            result = await self._run_workflow(request, agent_budget)
            await on_workflow_complete(result)
            if on_grader_complete is None:
                return
            wants_grading = request.label is not None or request.metadata is not None
            if self.grader_cls is not None and wants_grading and result.status == RolloutStatus.SUCCESS:
                graded = await self.run_grader(request, result)
                await on_grader_complete(graded)
            else:
                await on_grader_complete(ExecutionResult(status=RolloutStatus.FAILURE))

    async def run_workflow(self, request: ExecutionRequest) -> ExecutionResult:
        """Run the workflow phase of ``request`` (with its full ``agent_timeout_sec``); never raises for
        workflow errors — they become a failure result without samples."""
        return await self._run_workflow(request, _budget(request.agent_timeout_sec))

    async def _run_workflow(self, request: ExecutionRequest, budget: float | None) -> ExecutionResult:
        rollout_ctx = get_rollout_context() or RolloutContext()
        try:
            ctx = AgentWorkflowContext(
                prompt=request.prompt,
                config=copy.deepcopy(self.workflow_config),
                metadata=request.metadata,
                artifacts_dir=await self._artifacts_dir(request),
            )
            workflow = self.workflow_cls(ctx.config)

            what = f"Workflow timed out: agent_timeout_sec={request.agent_timeout_sec} exceeded"
            deadline = None if budget is None else time.monotonic() + budget
            token = _current_request.set(request)
            try:
                # Enter the context in this task (only run() goes under the deadline), so leaving it has the same
                # effect with or without a timeout: the grader phase sees no current RolloutContext (upstream).
                with rollout_ctx:
                    output = await _within(workflow.run(ctx), budget, what)
            finally:
                _current_request.reset(token)
            messages = None if rollout_ctx.sample_sources else _messages_returned(output)
            if messages is not None:
                name = rollout_ctx.rollout_id or request.id
                samples = {name: RolloutSample(id=name, messages=messages)}
            else:
                remaining = None if deadline is None else deadline - time.monotonic()
                samples = await _within(rollout_ctx.get_samples(), remaining, what)
        except Exception as exc:
            logger.error("Workflow failed for rollout %s: %s", request.id, exc, exc_info=True)
            return ExecutionResult(
                status=RolloutStatus.FAILURE, err_message=str(exc), err_category=categorize_exception(exc)
            )
        return ExecutionResult(status=RolloutStatus.SUCCESS, samples=samples)

    async def run_grader(self, request: ExecutionRequest, result: ExecutionResult) -> ExecutionResult:
        """Grade ``result.samples`` (with ``grader_timeout_sec``) and require a reward on every sample; a failure
        result still carries the samples, with whatever rewards were set."""
        try:
            ctx = GraderContext(
                label=request.label,
                samples=result.samples,
                metadata=request.metadata,
                artifacts_dir=await self._artifacts_dir(request),
            )
            assert self.grader_cls is not None
            grader = self.grader_cls(self.grader_config)
            what = f"Grader timed out: grader_timeout_sec={request.grader_timeout_sec} exceeded"
            await _within(grader.grade(ctx), _budget(request.grader_timeout_sec), what)
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
