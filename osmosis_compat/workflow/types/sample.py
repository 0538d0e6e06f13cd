"""Samples, execution request/result and the status enums (upstream ``types/sample.py``, spec §2.7–§2.9)."""

from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from osmosis_compat.workflow.utils.identifiers import ensure_single_path_segment

__all__ = [
    "ExecutionRequest",
    "ExecutionResult",
    "MessageDict",
    "MultiTurnMode",
    "RolloutErrorCategory",
    "RolloutSample",
    "RolloutStatus",
    "SampleMessage",
    "StrEnum",
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
    """Outcome of a rollout phase (0.2.x values)."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"


class RolloutErrorCategory(StrEnum):
    """Why a rollout phase failed (see ``LocalBackend`` for how exceptions map onto these)."""

    TIMEOUT = "timeout"
    VALIDATION_ERROR = "validation_error"
    HTTP_ERROR = "http_error"
    AGENT_ERROR = "agent_error"


class MultiTurnMode(StrEnum):
    """Mirror of a controller-side chat-body switch; exported, unused by the SDK itself."""

    MULTI_SAMPLE = "multi_sample"
    SINGLE_SAMPLE = "single_sample"


class RolloutSample(BaseModel):
    """One sample of a rollout: the conversation one agent/session produced, and its reward.

    ``trajectory_messages`` defaults to a deep copy of ``messages`` when not given (``None`` given explicitly
    disables trajectory persistence). No assignment validation: graders set ``reward`` in place.
    """

    id: str
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

    @field_validator("id")
    @classmethod
    def _id_is_single_path_segment(cls, value: str) -> str:
        return ensure_single_path_segment(value, label="rollout_id")


class ExecutionResult(BaseModel):
    """What a backend reports after the workflow phase or the grading phase."""

    status: RolloutStatus
    samples: dict[str, RolloutSample] = Field(default_factory=dict)
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None
