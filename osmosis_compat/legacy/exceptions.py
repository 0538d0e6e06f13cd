"""Every exception class of the legacy API (spec/legacy-protocol.md §2.9), name for name.

Hierarchy::

    OsmosisRolloutError(Exception)
    ├── OsmosisTransportError
    ├── OsmosisServerError(message, status_code)
    ├── OsmosisValidationError(message, status_code)
    ├── OsmosisTimeoutError
    ├── AgentLoopNotFoundError(name, available)
    └── ToolExecutionError(message, tool_call_id="", tool_name="")
        └── ToolArgumentError

plus the stand-alone ``ServeError``, ``AgentLoopValidationError``, ``CLIError``, ``PublicIPDetectionError``,
``MCPLoadError`` and the rubric-era ``MissingAPIKeyError``, ``ModelNotFoundError``, ``ProviderRequestError``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentLoopNotFoundError",
    "AgentLoopValidationError",
    "CLIError",
    "MCPLoadError",
    "MissingAPIKeyError",
    "ModelNotFoundError",
    "OsmosisRolloutError",
    "OsmosisServerError",
    "OsmosisTimeoutError",
    "OsmosisTransportError",
    "OsmosisValidationError",
    "ProviderRequestError",
    "PublicIPDetectionError",
    "ServeError",
    "ToolArgumentError",
    "ToolExecutionError",
]


class OsmosisRolloutError(Exception):
    """Base class of every rollout-SDK error an agent may catch."""


class OsmosisTransportError(OsmosisRolloutError):
    """TrainGate could not be reached (connection refused, reset, DNS …) after all retries."""


class OsmosisServerError(OsmosisRolloutError):
    """TrainGate answered 5xx after all retries. ``str(exc)`` is the response body text."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class OsmosisValidationError(OsmosisRolloutError):
    """TrainGate rejected the request (4xx, not retried) or answered an unexpected status."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class OsmosisTimeoutError(OsmosisRolloutError):
    """A call to TrainGate timed out after all retries."""


class AgentLoopNotFoundError(OsmosisRolloutError):
    """``get_agent_loop(name)`` found no loop of that name; ``available`` lists the registered names."""

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = available
        super().__init__(f"Agent loop '{name}' not found. Available: {available}")


class ToolExecutionError(OsmosisRolloutError):
    """A tool call failed; carries the call id and tool name when known."""

    def __init__(self, message: str, tool_call_id: str = "", tool_name: str = "") -> None:
        super().__init__(message)
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name


class ToolArgumentError(ToolExecutionError):
    """The arguments of a tool call could not be parsed into a JSON object."""


class ServeError(Exception):
    """``serve_agent_loop`` was called with an impossible configuration."""


class AgentLoopValidationError(Exception):
    """An agent loop failed validation; ``errors`` holds the validator's ``ValidationError`` items."""

    def __init__(self, message: str, errors: list[Any] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


class CLIError(Exception):
    """A command-line usage error (bad module path, unloadable agent …), printed as ``Error: <msg>``."""


class PublicIPDetectionError(Exception):
    """The public IP address could not be determined (osmosis-compat never tries: pass the host explicitly)."""


class MCPLoadError(Exception):
    """An MCP server directory could not be loaded (MCP agent loops are not part of osmosis-compat)."""


class MissingAPIKeyError(RuntimeError):
    """Rubric era: the API key for the rubric-judge provider is missing."""


class ProviderRequestError(RuntimeError):
    """Rubric era: a request to the rubric-judge provider failed."""

    def __init__(self, provider: str, model: str, detail: str) -> None:
        self.provider = provider
        self.model = model
        self.detail = detail.strip() or "Provider request failed with no additional detail."
        super().__init__(f"Provider '{provider}' request for model '{model}' failed. {self.detail}")


class ModelNotFoundError(ProviderRequestError):
    """Rubric era: the rubric-judge provider does not know the requested model."""
