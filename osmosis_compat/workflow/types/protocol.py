"""The ``/rollout`` wire types (upstream ``types/protocol.py``, spec workflow-api §3.3–§3.6).

Unknown JSON keys are ignored (default pydantic config), as in 0.2.31.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from osmosis_compat.workflow.types.sample import (
    MessageDict,
    MultiTurnMode,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
    StrEnum,
)
from osmosis_compat.workflow.utils.identifiers import ensure_single_path_segment

__all__ = [
    "GraderCompleteRequest",
    "GraderInitRequest",
    "GraderInitResponse",
    "GraderStatus",
    "MessageDict",
    "MultiTurnMode",
    "RolloutCompleteRequest",
    "RolloutErrorCategory",
    "RolloutInitRequest",
    "RolloutInitResponse",
    "RolloutStatus",
]


class GraderStatus(StrEnum):
    """Outcome of the grading phase as the grader callback reports it (``pending`` is never sent)."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"


class RolloutInitRequest(BaseModel):
    """Body of ``POST /rollout``.

    ``controller_api_key`` is both the bearer for the callbacks and the LLM key for the chat endpoint;
    without ``grader_callback_url`` nothing is graded. ``agent_timeout_sec`` / ``grader_timeout_sec`` are
    enforced by osmosis-compat's ``LocalBackend`` (upstream 0.2.x ignored them).
    """

    rollout_id: str
    initial_messages: list[dict[str, Any]]
    label: str | None = None
    metadata: dict[str, Any] | None = None
    chat_completions_url: str
    controller_api_key: str | None = None
    completion_callback_url: str
    grader_callback_url: str | None = None
    agent_timeout_sec: float | None = None
    grader_timeout_sec: float | None = None
    extra_fields: dict[str, Any] | None = None

    @field_validator("rollout_id")
    @classmethod
    def _rollout_id_is_single_path_segment(cls, value: str) -> str:
        return ensure_single_path_segment(value, label="rollout_id")


class RolloutInitResponse(BaseModel):
    """Reply to ``POST /rollout`` in 0.2.x: an empty object."""


class RolloutCompleteRequest(BaseModel):
    """Completion callback body; every key is always present (``extra_fields`` is ``null`` in 0.2.x)."""

    rollout_id: str
    status: RolloutStatus
    extra_fields: dict[str, Any] | None = None
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None


class GraderCompleteRequest(BaseModel):
    """Grader callback body. ``samples`` go on the wire without ``trajectory_messages``
    (see :meth:`wire_payload`)."""

    rollout_id: str
    status: GraderStatus
    samples: dict[str, RolloutSample] = Field(default_factory=dict)
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None

    def wire_payload(self) -> dict[str, Any]:
        """``model_dump()`` with ``trajectory_messages`` excluded from every sample, as upstream posts it."""
        return self.model_dump(exclude={"samples": {"__all__": {"trajectory_messages"}}})


class GraderInitRequest(BaseModel):
    """Type only (no endpoint uses it in 0.2.x)."""

    rollout_id: str
    samples: dict[str, RolloutSample] = Field(default_factory=dict)
    completion_callback_url: str
    extra_fields: dict[str, Any] | None = None
    controller_api_key: str | None = None


class GraderInitResponse(BaseModel):
    """Type only: an empty object."""
