"""The ``/rollout`` wire types (upstream ``types/protocol.py``): the 0.2.x callback protocol (spec workflow-api
§3.3–§3.6) and the 0.3.8 polling protocol (spec polling-protocol.md), which share ``POST /rollout``.

One :class:`RolloutInitRequest` carries both: a body with ``completion_callback_url`` is a 0.2.x admission (200
``{}``, results pushed to the callbacks); a body without it is a 0.3.8 admission (202 + lease, results pulled).
Unknown JSON keys are ignored (default pydantic config), as upstream.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from osmosis_compat.runtime.wirecheck import (
    check_header_value,
    check_http_url,
    check_id_in_url,
    check_identifier,
    check_wire_json,
)
from osmosis_compat.workflow.types.sample import (
    MessageDict,
    MultiTurnMode,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
    StrEnum,
    finite_timeout,
)
from osmosis_compat.workflow.utils.identifiers import ensure_single_path_segment

__all__ = [
    "CancelRolloutsRequest",
    "CancelRolloutsResponse",
    "GraderCompleteRequest",
    "GraderInitRequest",
    "GraderInitResponse",
    "GraderStatus",
    "MessageDict",
    "MultiTurnMode",
    "POLLING_LEASE_HEADER",
    "RolloutCompleteRequest",
    "RolloutErrorCategory",
    "RolloutInitRequest",
    "RolloutInitResponse",
    "RolloutLifecycle",
    "RolloutResultResponse",
    "RolloutStatus",
]

POLLING_LEASE_HEADER = "X-Osmosis-Rollout-Lease"
"""The header carrying the polling lease token on ``GET /rollout/{id}/result`` (0.3.8)."""


class GraderStatus(StrEnum):
    """Outcome of the grading phase as the grader callback reports it (``pending`` is never sent)."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"


class RolloutInitRequest(BaseModel):
    """Body of ``POST /rollout``, 0.2.31 and 0.3.8 fields together.

    0.2.x: ``controller_api_key`` is both the callbacks' bearer and the LLM key; without
    ``grader_callback_url`` nothing is graded. 0.3.8: no callbacks; ``llm_api_key`` is the LLM key (``""`` is
    rejected; ``None`` falls back to ``controller_api_key``, then to ``$OSMOSIS_API_KEY``); ``grade=False`` skips
    grading. Deadlines are enforced in both (0.2.x ignored them) and must be finite.
    """

    rollout_id: str
    initial_messages: list[dict[str, Any]]
    label: str | None = None
    metadata: dict[str, Any] | None = None
    chat_completions_url: str
    controller_api_key: str | None = None
    llm_api_key: str | None = None
    grade: bool = True
    completion_callback_url: str | None = None
    grader_callback_url: str | None = None
    agent_timeout_sec: float | None = None
    grader_timeout_sec: float | None = None
    extra_fields: dict[str, Any] | None = None

    @field_validator("rollout_id")
    @classmethod
    def _rollout_id_is_single_path_segment(cls, value: str) -> str:
        value = check_identifier(ensure_single_path_segment(value, label="rollout_id"), label="rollout_id")
        return check_id_in_url(value, label="rollout_id")

    @field_validator("initial_messages", "label")
    @classmethod
    def _sent_on_values_are_json(cls, value: Any, info: Any) -> Any:
        # The prompt is re-sent with every model call and the label comes back in the result's sample: NaN/Infinity
        # or a lone surrogate would fail each of those requests (or the result poll) after a 2xx admission.
        return check_wire_json(value, label=info.field_name)

    @field_validator("metadata", "extra_fields")
    @classmethod
    def _free_form_text_is_unicode(cls, value: dict[str, Any] | None, info: Any) -> dict[str, Any] | None:
        # Free-form, so NaN stays accepted as upstream; a lone surrogate can be encoded nowhere.
        return check_wire_json(value, label=info.field_name, numbers=False)

    @field_validator("llm_api_key")
    @classmethod
    def _llm_api_key_not_empty(cls, value: str | None) -> str | None:
        if value == "":
            raise ValueError("llm_api_key must be omitted or a non-empty string")
        return check_header_value(value, label="llm_api_key")

    @field_validator("controller_api_key")
    @classmethod
    def _controller_key_is_sendable(cls, value: str | None) -> str | None:
        return check_header_value(value, label="controller_api_key")

    @field_validator("chat_completions_url", "completion_callback_url", "grader_callback_url")
    @classmethod
    def _urls_are_http(cls, value: str | None, info: Any) -> str | None:
        return check_http_url(value, label=info.field_name)

    @field_validator("agent_timeout_sec", "grader_timeout_sec")
    @classmethod
    def _timeouts_are_finite(cls, value: float | None) -> float | None:
        return finite_timeout(value)

    @property
    def uses_callbacks(self) -> bool:
        """``True`` for a 0.2.x admission (results pushed to ``completion_callback_url``), ``False`` for 0.3.8."""
        return self.completion_callback_url is not None

    @property
    def model_api_key(self) -> str | None:
        """The bearer for model calls: ``llm_api_key``, else ``controller_api_key`` (0.3.0 HEAD's rule)."""
        return self.llm_api_key if self.llm_api_key is not None else self.controller_api_key


class RolloutInitResponse(BaseModel):
    """Reply to ``POST /rollout``: ``{}`` in 0.2.x (200); in 0.3.8 (202) the polling lease and its timings."""

    rollout_id: str | None = None
    status: RolloutStatus | None = None
    polling_lease_token: str | None = Field(default=None, min_length=1)
    result_wait_timeout_sec: float | None = None
    polling_lease_timeout_sec: float | None = None

    @model_validator(mode="after")
    def _validate_timeouts(self) -> RolloutInitResponse:
        wait, lease = self.result_wait_timeout_sec, self.polling_lease_timeout_sec
        if wait is None and lease is None:
            return self
        if wait is None or not math.isfinite(wait) or wait <= 0:
            raise ValueError("result_wait_timeout_sec must be positive and finite")
        if lease is None or not math.isfinite(lease) or lease <= wait:
            raise ValueError("polling_lease_timeout_sec must be finite and exceed result_wait_timeout_sec")
        return self


class RolloutResultResponse(BaseModel):
    """``GET /rollout/{rollout_id}/result`` (0.3.8): the current status, or the final result with its one sample.

    All five keys are always on the wire. The sample goes without ``trajectory_messages`` (and without ``id``,
    which 0.3 removed); its reward is ``null`` unless the status is ``success`` and the sample is kept.
    """

    rollout_id: str
    status: RolloutStatus
    sample: RolloutSample | None = None
    err_message: str | None = None
    err_category: RolloutErrorCategory | None = None

    def wire_payload(self) -> dict[str, Any]:
        """The JSON body as 0.3.8 sends it."""
        return self.model_dump(mode="json", exclude={"sample": {"trajectory_messages", "id"}})


class CancelRolloutsRequest(BaseModel):
    """Body of ``POST /rollout/cancel``: exactly one of ``ids``, ``prefix`` or ``all``."""

    ids: list[str] | None = None
    prefix: str | None = None
    all: bool = False

    @field_validator("ids")
    @classmethod
    def _ids_are_text(cls, value: list[str] | None) -> list[str] | None:
        # Echoed as keys of ``dispositions``: a lone surrogate could not be encoded in the answer.
        return None if value is None else [check_identifier(item, label="ids[]") for item in value]

    @field_validator("prefix")
    @classmethod
    def _prefix_is_text(cls, value: str | None) -> str | None:
        return None if value is None else check_identifier(value, label="prefix")

    @property
    def selector_count(self) -> int:
        """How many selectors the body sets (the server answers 422 unless it is exactly one)."""
        return sum([self.ids is not None, self.prefix is not None, self.all])


class CancelRolloutsResponse(BaseModel):
    """``{rollout_id: "cancelled_queued" | "cancelled_running" | "not_found"}`` per selected rollout."""

    dispositions: dict[str, str]


class RolloutLifecycle(BaseModel):
    """The ``lifecycle`` object of ``GET /health`` (0.3.8): admission state, independent of the backend."""

    accepting_rollouts: bool
    active_rollouts: int = Field(ge=0)


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
