"""``ExecutionBackend`` — what the ``/rollout`` server runs rollouts on (upstream ``backend/base.py``, spec §2.10)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

from osmosis_compat.workflow.types.sample import ExecutionRequest, ExecutionResult

__all__ = ["ExecutionBackend", "ResultCallback"]

ResultCallback = Callable[[ExecutionResult], Awaitable[None]]
"""Receives a phase's result; the server's callbacks POST it to the controller."""


class ExecutionBackend(ABC):
    """Runs one rollout: the workflow, then (when ``on_grader_complete`` is given) grading.

    ``execute`` must call ``on_workflow_complete`` once with the workflow result and, when grading was asked for,
    ``on_grader_complete`` once with the graded (or failed) result. A 0.3-style backend instead defines
    ``execute(self, request)`` returning an ``ExecutionOutcome``; the servers accept either form.
    """

    @abstractmethod
    async def execute(
        self,
        request: ExecutionRequest,
        on_workflow_complete: ResultCallback,
        on_grader_complete: ResultCallback | None = None,
    ) -> None:
        """Run ``request``; exceptions raised by the callbacks propagate."""
        raise NotImplementedError

    @property
    def max_concurrency(self) -> int:
        """Concurrent rollouts allowed (``0`` = unlimited)."""
        return 0

    def health(self) -> dict[str, Any]:
        """The ``GET /health`` body."""
        return {"status": "ok"}

    def has_capacity(self) -> bool:
        """0.3: ``False`` makes the polling server answer 429 + ``Retry-After`` to new admissions."""
        return True

    async def shutdown(self) -> None:
        """0.3: release the backend's resources when the server stops (after in-flight rollouts drained)."""
