"""Wire and config types of the workflow API (upstream ``osmosis_ai.rollout.types``)."""

from osmosis_compat.workflow.types.config import AgentWorkflowConfig, BaseConfig, ConcurrencyConfig, GraderConfig
from osmosis_compat.workflow.types.protocol import (
    GraderCompleteRequest,
    GraderInitRequest,
    GraderInitResponse,
    GraderStatus,
    RolloutCompleteRequest,
    RolloutInitRequest,
    RolloutInitResponse,
)
from osmosis_compat.workflow.types.sample import (
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
    "BaseConfig",
    "ConcurrencyConfig",
    "ExecutionRequest",
    "ExecutionResult",
    "GraderCompleteRequest",
    "GraderConfig",
    "GraderInitRequest",
    "GraderInitResponse",
    "GraderStatus",
    "MessageDict",
    "MultiTurnMode",
    "RolloutCompleteRequest",
    "RolloutErrorCategory",
    "RolloutInitRequest",
    "RolloutInitResponse",
    "RolloutSample",
    "RolloutStatus",
    "SampleMessage",
]
