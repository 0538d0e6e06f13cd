"""Test doubles for Osmosis rollouts: a scripted policy, fake controllers, and a uvicorn-in-thread helper.

Everything is exported lazily (PEP 562), so ``import osmosis_compat.testing`` costs nothing until a name
is used; FastAPI/uvicorn load only with the fakes that need them. See ``docs/testing.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osmosis_compat.testing.policy import ChatPolicy, ScriptedPolicy, ToolBinding
    from osmosis_compat.testing.polling_controller import FakePollingController, PollingAdmission, PollingRolloutRecord
    from osmosis_compat.testing.recording import (
        RecordedRequest,
        RolloutTimeout,
        StatusScript,
        UnexpectedStatus,
    )
    from osmosis_compat.testing.serving import (
        AsyncServerHandle,
        ServerHandle,
        ServerStartError,
        serve_app,
        serve_app_async,
    )
    from osmosis_compat.testing.structured import schema_instance
    from osmosis_compat.testing.traingate import FakeTrainGate, LegacyRolloutRecord
    from osmosis_compat.testing.workflow_controller import FakeWorkflowController, WorkflowRolloutRecord

_EXPORTS = {
    "ChatPolicy": "policy",
    "ScriptedPolicy": "policy",
    "ToolBinding": "policy",
    "FakePollingController": "polling_controller",
    "PollingAdmission": "polling_controller",
    "PollingRolloutRecord": "polling_controller",
    "RecordedRequest": "recording",
    "RolloutTimeout": "recording",
    "StatusScript": "recording",
    "UnexpectedStatus": "recording",
    "AsyncServerHandle": "serving",
    "ServerHandle": "serving",
    "ServerStartError": "serving",
    "serve_app": "serving",
    "serve_app_async": "serving",
    "schema_instance": "structured",
    "FakeTrainGate": "traingate",
    "LegacyRolloutRecord": "traingate",
    "FakeWorkflowController": "workflow_controller",
    "WorkflowRolloutRecord": "workflow_controller",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
