"""The policy both sides of a verification are answered by: the project's ``ScriptedPolicy``, which also fills in a
structured output when a program asks for one (an OpenAI Agents ``output_type``: ``response_format``; a Strands
``structured_output_model``: a ``StructuredOutputTool`` the run fails without), so such programs compare too.

The filled-in value is derived from the tool's JSON schema alone (first enum value, ``"x"``, ``1``, one item per
list…), so it is the same on both sides.
"""

from __future__ import annotations

import json
from typing import Any, Optional

#: How Strands describes the tool of a structured output (``strands.tools.structured_output``).
_STRUCTURED_MARK = "StructuredOutputTool"


class VerifyPolicy:
    """``ScriptedPolicy`` that also answers a request for structured output (``response_format`` with a JSON schema,
    ``tool_choice`` forcing a function, Strands' ``StructuredOutputTool``) with a value derived from the schema.
    Gets the request's parameters (``accepts_request_params``), as the fake controllers hand them to such policies."""

    accepts_request_params = True

    def __init__(self) -> None:
        from osmosis_compat.testing import ScriptedPolicy

        self.scripted = ScriptedPolicy()

    async def areply(self, messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]], *,
                     model: str = "scripted", params: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        return self.reply(messages, tools, model=model, params=params)

    def reply(self, messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]], *,
              model: str = "scripted", params: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        """A ``chat.completion`` for the request (``params``: its ``response_format`` / ``tool_choice``)."""
        params = params or {}
        fmt = params.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, dict) else None
        decided = self.scripted.decide(messages, tools or [])
        if schema and not decided.get("tool_calls"):
            message = {"role": "assistant", "content": json.dumps(instance(schema, schema))}
            return self.scripted.reply(messages, tools, model=model) | {"choices": [
                {"index": 0, "message": message, "finish_reason": "stop"}]}
        forced = self._forced_tool(params.get("tool_choice"), tools or [], messages)
        if forced is None:
            forced = self._structured_output_tool(messages, tools or [], decided)
        if forced is not None:
            spec = forced.get("function") or forced
            arguments = json.dumps(instance(spec.get("parameters") or {}, spec.get("parameters") or {}))
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_structured_{len(messages)}", "type": "function",
                 "function": {"name": spec.get("name"), "arguments": arguments}}]}
            return self.scripted.reply(messages, tools, model=model) | {"choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls"}]}
        return self.scripted.reply(messages, tools, model=model)

    @staticmethod
    def _forced_tool(choice: Any, tools: list[dict[str, Any]], messages: list[dict[str, Any]]) -> Any:
        name = ((choice or {}).get("function") or {}).get("name") if isinstance(choice, dict) else None
        matching = [t for t in tools if (t.get("function") or t).get("name") == name] if name else []
        return matching[0] if matching and not _called(messages, matching[0]) else None

    @staticmethod
    def _structured_output_tool(messages: list[dict[str, Any]], tools: list[dict[str, Any]], decided: dict) -> Any:
        structured = [t for t in tools if _STRUCTURED_MARK in str((t.get("function") or t).get("description"))]
        if not structured or _called(messages, structured[0]) or decided.get("tool_calls"):
            return None  # the program's own tools first: the structured output ends the run
        return structured[0]


def verify_policy() -> VerifyPolicy:
    return VerifyPolicy()


def _called(messages: list[dict[str, Any]], tool: dict[str, Any]) -> bool:
    name = (tool.get("function") or tool).get("name")
    return any((c.get("function") or {}).get("name") == name for m in messages for c in m.get("tool_calls") or [])


def instance(schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> Any:
    """A value valid for ``schema`` (``$ref``s resolved in ``root``), deterministic."""
    if depth > 8:
        return None
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return instance(target, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if o.get("type") != "null"]
        if options:
            return instance(options[0], root, depth + 1)
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        return {name: instance(sub, root, depth + 1) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [instance(schema.get("items") or {}, root, depth + 1)]
    if kind == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if kind == "number":
        return float(max(1, schema.get("minimum", 1)))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "x"
