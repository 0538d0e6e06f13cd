"""Each agent API wrapped as the other: pure translation over the shared runtime (see ``docs/adapters.md``).

- :func:`loop_as_workflow` — a legacy ``RolloutAgentLoop`` as an ``(AgentWorkflow, Grader)`` pair for
  ``LocalBackend`` / ``create_rollout_server`` (workflow protocol);
- :func:`workflow_as_loop` — an ``AgentWorkflow`` (+ ``Grader``) as a ``RolloutAgentLoop`` for ``create_app`` /
  ``osmosis-compat serve`` (legacy protocol), its model calls going through the runtime's streaming bridge;
- :func:`openai_tool_schema` / :func:`find_tools` — Strands / OpenAI Agents / dict tools → OpenAI schemas.

Names resolve lazily (PEP 562): importing this package loads neither API nor any framework.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chat_shape import flatten_text_content, to_chat_messages
    from .errors import (
        AdaptedLoopError,
        LoopModelCallError,
        LoopModelTimeoutError,
        LoopReportedError,
        LoopResultError,
    )
    from .legacy_loop_workflow import LegacyLoopGrader, LegacyLoopWorkflow, LoopResultSource, loop_as_workflow
    from .tool_schemas import ToolSchemaError, find_module_tools, find_tools, openai_tool_schema, openai_tool_schemas
    from .workflow_loop import WorkflowAgentLoop, workflow_as_loop
    from .workflow_chat_client import WorkflowChatClient

_MODULE_NAMES: dict[str, tuple[str, ...]] = {
    ".chat_shape": ("flatten_text_content", "to_chat_messages"),
    ".errors": (
        "AdaptedLoopError", "LoopModelCallError", "LoopModelTimeoutError", "LoopReportedError", "LoopResultError",
    ),
    ".legacy_loop_workflow": ("LegacyLoopGrader", "LegacyLoopWorkflow", "LoopResultSource", "loop_as_workflow"),
    ".tool_schemas": (
        "ToolSchemaError", "find_module_tools", "find_tools", "openai_tool_schema", "openai_tool_schemas",
    ),
    ".workflow_loop": ("WorkflowAgentLoop", "workflow_as_loop"),
    ".workflow_chat_client": ("WorkflowChatClient",),
}

_EXPORTS: dict[str, str] = {name: module for module, names in _MODULE_NAMES.items() for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
