"""Static checks of an agent loop before serving it (spec/legacy-protocol.md §2.16).

``validate_agent_loop`` really calls ``get_tools`` with a sample request and reports problems as
:class:`ValidationError` items (errors make the loop invalid, warnings do not). ``ValidationError`` is
the one finding class both validators use (``osmosis_compat.runtime.validation``); ``ValidationResult`` is the
shared result whose ``raise_if_invalid`` raises the legacy ``AgentLoopValidationError``.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Optional

from osmosis_compat.runtime.validation import ValidationError
from osmosis_compat.runtime.validation import ValidationResult as _SharedValidationResult

from .exceptions import AgentLoopValidationError
from .schemas import OpenAIFunctionToolSchema, RolloutRequest, normalize_tools

__all__ = ["AgentLoopValidationError", "ValidationError", "ValidationResult", "validate_agent_loop"]


class ValidationResult(_SharedValidationResult):
    """The shared result, raising the legacy ``AgentLoopValidationError`` (upstream's message)."""

    def raise_if_invalid(self) -> None:
        """Raise ``AgentLoopValidationError`` listing every error when the result is not valid."""
        if not self.valid:
            raise AgentLoopValidationError(self.failure_message("Agent loop"), errors=list(self.errors))


def _default_request() -> RolloutRequest:
    return RolloutRequest(
        rollout_id="validation-test-rollout",
        server_url="http://localhost:8080",
        messages=[{"role": "user", "content": "Hello"}],
        completion_params={"temperature": 1.0, "max_tokens": 512},
        metadata={"_validation": True},
    )


def _check_name(agent_loop: Any, errors: list[ValidationError]) -> None:
    if not hasattr(agent_loop, "name"):
        errors.append(ValidationError("MISSING_NAME", "Agent loop must have a 'name' attribute", field="name"))
        return
    name = agent_loop.name
    if not isinstance(name, str):
        errors.append(
            ValidationError(
                "INVALID_NAME_TYPE", f"Agent loop name must be a string, got {type(name).__name__}", field="name"
            )
        )
    elif not name.strip():
        errors.append(ValidationError("EMPTY_NAME", "Agent loop name cannot be empty", field="name"))


def _check_tool_dict(tool: dict[str, Any], where: str, errors: list[ValidationError], warnings: list[ValidationError]) -> None:
    if "type" not in tool:
        errors.append(ValidationError("MISSING_TOOL_TYPE", "Tool must have a 'type' field", field=where))
    elif tool["type"] != "function":
        warnings.append(
            ValidationError("UNKNOWN_TOOL_TYPE", f"Tool type '{tool['type']}' is not 'function'", field=where)
        )
    if "function" not in tool:
        errors.append(ValidationError("MISSING_FUNCTION", "Tool must have a 'function' field", field=where))
        return
    function = tool["function"]
    if not isinstance(function, dict):
        errors.append(
            ValidationError(
                "INVALID_FUNCTION_TYPE",
                f"Tool 'function' must be a dict, got {type(function).__name__}",
                field=f"{where}.function",
            )
        )
        return
    if "name" not in function:
        errors.append(
            ValidationError("MISSING_FUNCTION_NAME", "Function must have a 'name' field", field=f"{where}.function")
        )
    elif not isinstance(function["name"], str) or not function["name"].strip():
        errors.append(
            ValidationError(
                "INVALID_FUNCTION_NAME", "Function name must be a non-empty string", field=f"{where}.function.name"
            )
        )
    if "description" not in function:
        warnings.append(
            ValidationError(
                "MISSING_FUNCTION_DESCRIPTION",
                "Function should have a 'description' field",
                field=f"{where}.function",
            )
        )
    if "parameters" in function:
        parameters = function["parameters"]
        if not isinstance(parameters, dict):
            errors.append(
                ValidationError(
                    "INVALID_PARAMETERS_TYPE",
                    f"Function parameters must be a dict, got {type(parameters).__name__}",
                    field=f"{where}.function.parameters",
                )
            )
        elif parameters.get("type") != "object":
            warnings.append(
                ValidationError(
                    "PARAMETERS_TYPE_NOT_OBJECT",
                    f"Function parameters type should be 'object', got {parameters.get('type')!r}",
                    field=f"{where}.function.parameters.type",
                )
            )


def _call_get_tools(agent_loop: Any, request: RolloutRequest, warnings: list[ValidationError]) -> Any:
    tools = agent_loop.get_tools(request)
    if inspect.isawaitable(tools):
        # osmosis-compat's server awaits an async get_tools (upstream broke on it); validate what it yields.
        warnings.append(
            ValidationError(
                "ASYNC_GET_TOOLS",
                "get_tools is async: osmosis-compat awaits it, upstream osmosis-ai cannot serve it",
                field="get_tools",
            )
        )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_await(tools))
        if inspect.iscoroutine(tools):
            tools.close()
        raise RuntimeError("async get_tools cannot be validated from inside a running event loop")
    return tools


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _check_tools(
    agent_loop: Any, request: RolloutRequest, errors: list[ValidationError], warnings: list[ValidationError]
) -> int:
    try:
        tools = _call_get_tools(agent_loop, request, warnings)
    except Exception as exc:
        errors.append(
            ValidationError(
                "GET_TOOLS_EXCEPTION",
                f"get_tools() raised an exception: {exc}",
                field="get_tools",
                details={"exception_type": type(exc).__name__, "message": str(exc)},
            )
        )
        return 0
    if tools is None:
        errors.append(ValidationError("GET_TOOLS_RETURNS_NONE", "get_tools() returned None", field="get_tools"))
        return 0
    if not isinstance(tools, list):
        errors.append(
            ValidationError(
                "GET_TOOLS_INVALID_TYPE",
                f"get_tools() must return a list, got {type(tools).__name__}",
                field="get_tools",
            )
        )
        return 0
    errors_before = len(errors)
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if isinstance(tool, OpenAIFunctionToolSchema):
            continue
        if isinstance(tool, dict):
            _check_tool_dict(tool, where, errors, warnings)
        else:
            errors.append(
                ValidationError(
                    "INVALID_TOOL_TYPE",
                    f"Tool must be an OpenAIFunctionToolSchema or dict, got {type(tool).__name__}",
                    field=where,
                )
            )
    if len(errors) == errors_before:
        # The server sends exactly what normalize_tools accepts; anything it rejects would fail every init.
        try:
            normalize_tools(tools)
        except ValueError as exc:
            # Upstream only warned here, then answered 500 to every init with this tool list (docs/legacy-api.md).
            errors.append(ValidationError(
                "INVALID_TOOL_SCHEMA",
                f"{exc} (the server cannot send this tool list: every rollout init would fail; upstream "
                "osmosis-ai only warned at validation, then answered 500 to every init)",
                field="tools",
            ))
    return len(tools)


def _check_run(agent_loop: Any, errors: list[ValidationError]) -> None:
    if not hasattr(agent_loop, "run"):
        errors.append(ValidationError("MISSING_RUN_METHOD", "Agent loop must have a 'run' method", field="run"))
        return
    run = agent_loop.run
    if not callable(run):
        errors.append(ValidationError("RUN_NOT_CALLABLE", "Agent loop 'run' must be callable", field="run"))
        return
    if not inspect.iscoroutinefunction(run):
        errors.append(ValidationError("RUN_NOT_ASYNC", "Agent loop 'run' must be an async method", field="run"))


def validate_agent_loop(agent_loop: Any, *, request: Optional[RolloutRequest] = None) -> ValidationResult:
    """Check an agent loop's name, tools (``get_tools`` is really called, with ``request`` or a sample request:
    rollout_id ``"validation-test-rollout"``, metadata ``{"_validation": True}``) and ``run`` method."""
    errors: list[ValidationError] = []
    warnings: list[ValidationError] = []
    _check_name(agent_loop, errors)
    tool_count = _check_tools(agent_loop, request or _default_request(), errors, warnings)
    _check_run(agent_loop, errors)
    name = getattr(agent_loop, "name", None)
    return ValidationResult(
        valid=not errors,
        errors=errors,
        warnings=warnings,
        agent_name=name if isinstance(name, str) else None,
        tool_count=tool_count,
    )
