"""Samples, execution request/result and the status enums (upstream ``types/sample.py``, spec §2.7–§2.9)."""

from __future__ import annotations

import copy
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from osmosis_compat.workflow.utils.identifiers import ensure_single_path_segment

__all__ = [
    "ExecutionOutcome",
    "ExecutionRequest",
    "ExecutionResult",
    "MessageDict",
    "MultiTurnMode",
    "RolloutErrorCategory",
    "RolloutSample",
    "RolloutStatus",
    "SampleMessage",
    "StrEnum",
    "TERMINAL_STATUSES",
    "finite_timeout",
]

logger = logging.getLogger("osmosis_ai.rollout.types.sample")

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10

    class StrEnum(str, Enum):
        """``enum.StrEnum`` for Python 3.10: members are ``str`` and print as their value."""

        def __str__(self) -> str:
            return str(self.value)


MessageDict = dict[str, Any]
"""One chat message as a plain dict."""

SampleMessage = Mapping[str, Any]
"""One message of a sample, in the framework's native shape (chat dict, Strands message, Responses item)."""


class RolloutStatus(StrEnum):
    """A rollout's status: the 0.2.x phase outcomes (``pending``, ``success``, ``failure``) and the 0.3 life-cycle
    states a polling controller sees (``queued`` → ``running`` → ``grading`` → ``success`` | ``failure`` |
    ``cancelled``; ``unknown`` exists in 0.3's enum and is never sent)."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    GRADING = "grading"
    SUCCESS = "success"
    FAILURE = "failure"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"


#: The statuses after which a rollout's result never changes.
TERMINAL_STATUSES = frozenset({RolloutStatus.SUCCESS, RolloutStatus.FAILURE, RolloutStatus.CANCELLED})


class RolloutErrorCategory(StrEnum):
    """Why a rollout phase failed (see ``LocalBackend`` for how exceptions map onto these)."""

    TIMEOUT = "timeout"
    LEASE_EXPIRED = "lease_expired"
    VALIDATION_ERROR = "validation_error"
    HTTP_ERROR = "http_error"
    AGENT_ERROR = "agent_error"
    INTERNAL_ERROR = "internal_error"


class MultiTurnMode(StrEnum):
    """Mirror of a controller-side chat-body switch; exported, unused by the SDK itself."""

    MULTI_SAMPLE = "multi_sample"
    SINGLE_SAMPLE = "single_sample"


class RolloutSample(BaseModel):
    """One sample of a rollout: the conversation one agent/session produced, and its reward.

    ``trajectory_messages`` defaults to a deep copy of ``messages`` when not given (``None`` given explicitly
    disables trajectory persistence). No assignment validation: graders set ``reward`` in place.

    ``id`` was required in 0.2.x and removed in 0.3; here it is optional, so 0.3 code that builds samples
    without one runs unchanged. A sample collected without an id takes its registration name (the 0.2.x
    callback keys samples by it).
    """

    id: str | None = None
    messages: Sequence[Mapping[str, Any]] = Field(default_factory=list)
    trajectory_messages: Sequence[Mapping[str, Any]] | None = None
    label: str | None = None
    reward: float | None = None
    remove_sample: bool = False
    metrics: dict[str, Any] = Field(default_factory=dict)
    extra_fields: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _default_trajectory_messages(self) -> RolloutSample:
        if "trajectory_messages" not in self.model_fields_set:
            try:
                self.trajectory_messages = copy.deepcopy(list(self.messages))
            except Exception as exc:  # an uncopyable object in the history: keep the sample, skip the copy
                logger.warning("Could not copy messages of sample %r into trajectory_messages: %s", self.id, exc)
                self.trajectory_messages = None
        return self


class ExecutionRequest(BaseModel):
    """What a backend runs: one rollout's prompt, label, metadata and budgets.

    ``id`` is the rollout id and must be a single path segment (the error names ``rollout_id``).
    """

    id: str
    prompt: list[dict[str, Any]]
    label: str | None = None
    metadata: dict[str, Any] | None = None
    agent_timeout_sec: float | None = None
    grader_timeout_sec: float | None = None
    grade: bool = True
    """0.3: ``False`` skips grading (the result keeps the sample, without a reward)."""

    @field_validator("id")
    @classmethod
    def _id_is_single_path_segment(cls, value: str) -> str:
        return ensure_single_path_segment(value, label="rollout_id")

    @field_validator("agent_timeout_sec", "grader_timeout_sec")
    @classmethod
    def _timeout_is_finite(cls, value: float | None) -> float | None:
        return finite_timeout(value)


def finite_timeout(value: float | None) -> float | None:
    """A deadline in seconds, or ``None`` for none; NaN and infinity are not deadlines (0.3 answers 422)."""
    if value is not None and not math.isfinite(value):
        raise ValueError("timeout must be finite; omit it to run unbounded")
    return value


class ExecutionResult(BaseModel):
    """What a backend reports after the workflow phase or the grading phase.

    ``samples`` is the 0.2.x dict keyed by sample name; :attr:`sample` is 0.3's single-sample view of it.
    ``extra_fields`` holds backend diagnostics, never sent on the wire (0.3).
    """

    status: RolloutStatus
    samples: dict[str, RolloutSample] = Field(default_factory=dict)
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None
    extra_fields: dict[str, Any] | None = None

    @property
    def sample(self) -> RolloutSample | None:
        """The first sample (``None`` without samples): the 0.3 view of a single-sample result."""
        return next(iter(self.samples.values()), None)


class ExecutionOutcome(BaseModel):
    """0.3: the workflow result and, when grading ran, the grader result of one execution."""

    workflow: ExecutionResult
    grader: ExecutionResult | None = None

    @property
    def result(self) -> ExecutionResult:
        """The rollout's final result, as 0.3.8 picks it: a failed workflow's result (with the grader's samples if
        it has none), else the grader's result when grading ran, else the workflow's."""
        if self.workflow.status is not RolloutStatus.SUCCESS:
            if not self.workflow.samples and self.grader is not None and self.grader.samples:
                return self.workflow.model_copy(update={"samples": self.grader.samples})
            return self.workflow
        return self.grader or self.workflow
