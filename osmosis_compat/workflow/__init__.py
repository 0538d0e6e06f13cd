"""The AgentWorkflow + Grader API (osmosis-ai 0.2.18–0.2.31, with 0.3 aliases).

Names are exported lazily (PEP 562): ``import osmosis_compat.workflow`` loads nothing heavy, and the server
(FastAPI) or a framework integration is imported only when one of its names is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_compat.server.workflow_app import create_rollout_server
    from osmosis_compat.workflow.agent_workflow import AgentWorkflow
    from osmosis_compat.workflow.auth import ControllerAuth
    from osmosis_compat.workflow.backend import ExecutionBackend, LocalBackend, ResultCallback
    from osmosis_compat.workflow.context import (
        AgentWorkflowContext,
        GraderContext,
        HarborAgentWorkflowContext,
        RolloutContext,
        SampleSource,
        get_rollout_context,
        rollout_contextvar,
    )
    from osmosis_compat.workflow.discovery import discover, discover_entrypoint
    from osmosis_compat.workflow.grader import Grader
    from osmosis_compat.workflow.messages import last_assistant_text
    from osmosis_compat.workflow.types import (
        AgentWorkflowConfig,
        BaseConfig,
        ConcurrencyConfig,
        ExecutionRequest,
        ExecutionResult,
        GraderCompleteRequest,
        GraderConfig,
        GraderInitRequest,
        GraderInitResponse,
        GraderStatus,
        MessageDict,
        MultiTurnMode,
        RolloutCompleteRequest,
        RolloutErrorCategory,
        RolloutInitRequest,
        RolloutInitResponse,
        RolloutSample,
        RolloutStatus,
    )
    from osmosis_compat.workflow.validator import ValidationError, ValidationResult, resolved_agent_name, validate_backend

_TYPES = "osmosis_compat.workflow.types"
_CONTEXT = "osmosis_compat.workflow.context"

_EXPORTS: dict[str, str] = {
    "AgentWorkflow": "osmosis_compat.workflow.agent_workflow",
    "Grader": "osmosis_compat.workflow.grader",
    **dict.fromkeys(
        (
            "AgentWorkflowContext",
            "GraderContext",
            "HarborAgentWorkflowContext",
            "RolloutContext",
            "SampleSource",
            "get_rollout_context",
            "rollout_contextvar",
        ),
        _CONTEXT,
    ),
    **dict.fromkeys(
        (
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
            "RolloutCompleteRequest",
            "RolloutErrorCategory",
            "RolloutInitRequest",
            "RolloutInitResponse",
            "RolloutResultResponse",
            "RolloutSample",
            "RolloutStatus",
        ),
        _TYPES,
    ),
    "ExecutionBackend": "osmosis_compat.workflow.backend",
    "LocalBackend": "osmosis_compat.workflow.backend",
    "ResultCallback": "osmosis_compat.workflow.backend",
    "ControllerAuth": "osmosis_compat.workflow.auth",
    "create_rollout_server": "osmosis_compat.server.workflow_app",
    "ValidationError": "osmosis_compat.workflow.validator",
    "ValidationResult": "osmosis_compat.workflow.validator",
    "resolved_agent_name": "osmosis_compat.workflow.validator",
    "validate_backend": "osmosis_compat.workflow.validator",
    "discover": "osmosis_compat.workflow.discovery",
    "discover_entrypoint": "osmosis_compat.workflow.discovery",
    "last_assistant_text": "osmosis_compat.workflow.messages",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
