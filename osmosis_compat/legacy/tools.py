"""Helpers for executing tool calls inside an agent loop (spec/legacy-protocol.md §2.10)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable, Optional

from .exceptions import ToolArgumentError

__all__ = [
    "create_tool_error_result",
    "create_tool_result",
    "execute_tool_calls",
    "get_tool_call_info",
    "parse_tool_arguments",
    "serialize_tool_result",
]


def create_tool_result(tool_call_id: str, content: str) -> dict[str, Any]:
    """A tool message: ``{"role": "tool", "content": content, "tool_call_id": tool_call_id}``."""
    return {"role": "tool", "content": content, "tool_call_id": tool_call_id}


def create_tool_error_result(tool_call_id: str, error_message: str) -> dict[str, Any]:
    """A tool message whose content is ``"Error: " + error_message``."""
    return create_tool_result(tool_call_id, f"Error: {error_message}")


def serialize_tool_result(result: Any) -> str:
    """A tool's return value as message content.

    bool → ``"true"``/``"false"``; int/float → ``str()``; str unchanged; anything else → ``json.dumps`` (default
    separators); values JSON cannot encode raise ``TypeError``.
    """
    if isinstance(result, bool):
        return json.dumps(result)
    if isinstance(result, (int, float)):
        return str(result)
    if isinstance(result, str):
        return result
    return json.dumps(result)


def parse_tool_arguments(arguments: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict: a dict is returned as is, a string is decoded as a JSON object.

    Raises ``ToolArgumentError`` for invalid JSON, JSON that is not an object, or any other argument type.
    """
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ToolArgumentError(f"Invalid JSON arguments: {exc}") from exc
        if not isinstance(parsed, dict):
            raise ToolArgumentError(f"Expected dict from JSON, got {type(parsed).__name__}")
        return parsed
    raise ToolArgumentError(f"Expected str or dict arguments, got {type(arguments).__name__}")


def get_tool_call_info(tool_call: dict[str, Any]) -> tuple[Optional[str], str, dict[str, Any]]:
    """``(tool_call_id, function_name, arguments)`` of an OpenAI-style tool call.

    Missing id → ``"unknown"``; missing name → ``""``; missing arguments → ``{}``. Unparseable arguments raise
    ``ToolArgumentError`` carrying the call id and tool name.
    """
    tool_call_id = tool_call.get("id", "unknown")
    function = tool_call.get("function", {})
    name = function.get("name", "")
    raw_arguments = function.get("arguments", {})
    try:
        arguments = parse_tool_arguments(raw_arguments)
    except ToolArgumentError as exc:
        raise ToolArgumentError(str(exc), tool_call_id=tool_call_id, tool_name=name) from exc
    return tool_call_id, name, arguments


async def execute_tool_calls(
    tool_calls: Optional[list[dict[str, Any]]],
    executor: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """Run ``executor`` on every tool call concurrently; results in input order. The first exception
    propagates. An empty or ``None`` list gives ``[]``."""
    if not tool_calls:
        return []
    return list(await asyncio.gather(*[_traced(executor, tool_call) for tool_call in tool_calls]))


async def _traced(executor: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]], tool_call: dict[str, Any]) -> dict[str, Any]:
    """One tool call in its own ``execute_tool <name>`` span (a no-op without tracing)."""
    from osmosis_compat.observability import tracing

    function = tool_call.get("function") if isinstance(tool_call, dict) else None
    name = function.get("name", "") if isinstance(function, dict) else ""
    with tracing.tool_span(str(name)):
        return await executor(tool_call)
