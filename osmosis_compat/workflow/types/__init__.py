"""Wire and config types of the workflow API (upstream ``osmosis_ai.rollout.types``)."""

from osmosis_compat.workflow.types.config import AgentWorkflowConfig, BaseConfig, ConcurrencyConfig, GraderConfig
from osmosis_compat.workflow.types.output import AgentWorkflowOutput
from osmosis_compat.workflow.types.protocol import (
    POLLING_LEASE_HEADER,
    CancelRolloutsRequest,
    CancelRolloutsResponse,
    GraderCompleteRequest,
    GraderInitRequest,
    GraderInitResponse,
    GraderStatus,
    RolloutCompleteRequest,
    RolloutInitRequest,
    RolloutInitResponse,
    RolloutLifecycle,
    RolloutResultResponse,
)
from osmosis_compat.workflow.types.sample import (
    ExecutionOutcome,
    ExecutionRequest,
    ExecutionResult,
    MessageDict,
    MultiTurnMode,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
    SampleMessage,
)

__all__ = [
    "AgentWorkflowConfig",
    "AgentWorkflowOutput",
    "BaseConfig",
    "CancelRolloutsRequest",
    "CancelRolloutsResponse",
    "ConcurrencyConfig",
    "ExecutionOutcome",
    "ExecutionRequest",
    "ExecutionResult",
    "GraderCompleteRequest",
    "GraderConfig",
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
    "RolloutSample",
    "RolloutStatus",
    "SampleMessage",
]
