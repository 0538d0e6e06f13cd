"""Structured output for the scripted policy: what a real model does when a request dictates the shape of its answer.

A chat request can ask for more than text: ``response_format`` with a JSON schema (an OpenAI Agents ``output_type``, a
LiteLLM ``response_format=Model``), a ``tool_choice`` naming the function it must call or ``"required"`` (Strands'
``structured_output_async`` on a model without native schemas, OpenAI Agents' ``ModelSettings(tool_choice=…)``), or
Strands' ``StructuredOutputTool`` among the tools (``Agent(structured_output_model=…)``). A real model complies; a
policy that answers ``"The answer is 5."`` makes the framework fail (``ModelBehaviorError: Invalid JSON``, ``No
tool_calls found in response``), so a test of such a program could never pass.

:func:`structured_message` is the reply that complies; the value it sends is :func:`schema_instance` of the schema:
derived from the schema alone, so the same request always gets the same answer (the policy stays stateless).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "StructuredRequest", "is_structured_output_tool", "offered_tools", "schema_instance", "structured_message",
    "tool_name", "tool_parameters",
]

#: How Strands describes the tool of an ``Agent(structured_output_model=…)`` (``strands.tools.structured_output``).
STRUCTURED_OUTPUT_MARK = "StructuredOutputTool"

#: A valid value for each string ``format`` pydantic checks (a ``datetime`` field rejects ``"x"``).
_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "time": "00:00:00", "duration": "PT1S",
    "email": "user@example.com", "idn-email": "user@example.com", "uri": "https://example.com/",
    "url": "https://example.com/", "uuid": "00000000-0000-4000-8000-000000000000", "ipv4": "127.0.0.1",
    "ipv6": "::1", "hostname": "example.com", "binary": "", "byte": "",
}
_MAX_DEPTH = 12  # nested $refs expanded at most (a recursion that cannot stop ends with null)


@dataclass(frozen=True)
class StructuredRequest:
    """What a chat request's parameters ask of the reply: ``schema``, the JSON schema its content must match
    (``response_format.json_schema.schema``); ``forced``, the function ``tool_choice`` names; ``required``, whether
    ``tool_choice`` is ``"required"`` (some tool must be called)."""

    schema: dict[str, Any] | None = None
    forced: str | None = None
    required: bool = False

    @classmethod
    def read(cls, params: Mapping[str, Any] | None) -> StructuredRequest:
        """The request in ``params`` (the chat body's ``response_format`` / ``tool_choice``; anything else ignored)."""
        params = params or {}
        fmt = params.get("response_format")
        schema = None
        if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
            body = fmt.get("json_schema")
            schema = body.get("schema") if isinstance(body, Mapping) else None
        choice = params.get("tool_choice")
        return cls(
            schema=dict(schema) if isinstance(schema, Mapping) else None,
            forced=_chosen_function(choice),
            required=choice == "required",
        )


def offered_tools(tools: list[dict[str, Any]] | None, tool_choice: Any) -> list[dict[str, Any]] | None:
    """The tools the model may call under ``tool_choice``: none for ``"none"``, only the named one for
    ``{"type": "function", "function": {"name": …}}``, all of them otherwise."""
    if not tools or tool_choice is None:
        return tools
    if tool_choice == "none":
        return None
    name = _chosen_function(tool_choice)
    if name:
        return [t for t in tools if isinstance(t, dict) and tool_name(t) == name]
    return tools


def is_structured_output_tool(tool: Any) -> bool:
    """True for the tool Strands adds for ``structured_output_model`` (it must be called last, to end the run)."""
    spec = _spec(tool)
    return STRUCTURED_OUTPUT_MARK in str(spec.get("description") or "")


def structured_message(
    request: StructuredRequest,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    decided: dict[str, Any],
    *,
    since: int | None,
) -> dict[str, Any] | None:
    """The assistant message that complies with ``request``, or ``None`` when ``decided`` (what the policy would say
    anyway) already does. ``tools`` are the offered ones (after ``tool_choice``); ``since`` is the index of the
    message that started this turn (the last question): a tool called after it counts as done.

    In order: ``decided`` tool calls stand (the program's own tools come first); a ``response_format`` schema gets
    its instance as the content; a forced function, else (``"required"``) the structured-output tool or the first
    offered one, else Strands' structured-output tool, is called once with its parameters' instance.
    """
    if decided.get("tool_calls"):
        return None
    if request.schema is not None:
        return {"role": "assistant", "content": json.dumps(schema_instance(request.schema))}
    done = _called_since(messages, since)
    candidates = [t for t in tools if tool_name(t) not in done]
    if request.forced:
        target = next((t for t in candidates if tool_name(t) == request.forced), None)
    else:
        structured = [t for t in candidates if is_structured_output_tool(t)]
        target = (structured or (candidates if request.required else []) or [None])[0]
    if target is None:
        return None
    name = tool_name(target)
    arguments = json.dumps(schema_instance(tool_parameters(target)))
    digest = hashlib.sha256(f"{len(messages)}:{name}:{arguments}".encode()).hexdigest()[:8]
    call = {"id": f"call_{digest}", "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def schema_instance(schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None) -> Any:
    """A value valid for the JSON ``schema`` (``$ref`` resolved in ``root``, default the schema itself), derived from
    the schema alone: ``const`` / the first ``enum`` value; the first non-null option of ``anyOf`` / ``oneOf``; the
    merged options of ``allOf``; every property of an object; ``minItems`` (at least one) items of an array, one per
    ``prefixItems``; a string ``"x"`` (a valid example for a ``format``, ``minLength`` long); a number at its
    ``minimum`` (1 when unbounded, within ``maximum``); ``true``; ``null`` for ``null``. A recursive schema (a tree of
    nodes) stops where it can: an empty list, a null option. Constraints it does not read (``pattern``,
    ``multipleOf``) may be violated."""
    return _instance(schema, schema if root is None else root, ())


def _instance(schema: Any, root: Mapping[str, Any], refs: tuple[str, ...]) -> Any:
    """``refs``: the ``$ref``s being expanded (a recursive one stops at the next list or optional)."""
    if not isinstance(schema, Mapping) or len(refs) > _MAX_DEPTH:
        return None
    if "$ref" in schema:
        ref = str(schema["$ref"])
        return _instance(_resolve(ref, root), root, (*refs, ref))
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key) or []
        usable = [o for o in options if not _is_null(o)]
        if usable and not (len(usable) < len(options) and _recursive(usable[0], refs)):
            return _instance(usable[0], root, refs)
        if options:
            return None
    if schema.get("allOf"):
        parts = [_instance(o, root, refs) for o in schema["allOf"]]
        if all(isinstance(p, dict) for p in parts):
            return {k: v for p in parts for k, v in p.items()}
        return parts[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: _instance(sub, root, refs) for name, sub in properties.items()}
    if kind == "array":
        return _array(schema, root, refs)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema)


def _array(schema: Mapping[str, Any], root: Mapping[str, Any], refs: tuple[str, ...]) -> list[Any]:
    prefix = [_instance(s, root, refs) for s in schema.get("prefixItems") or []]
    items = schema.get("items")
    wanted = 0 if prefix or _recursive(items, refs) else 1  # a list of the node being built: empty
    count = max(int(schema.get("minItems") or 0), wanted)
    maximum = schema.get("maxItems")
    if isinstance(maximum, int):
        count = min(count, maximum)
    rest = max(0, count - len(prefix))
    return prefix + ([_instance(items, root, refs) for _ in range(rest)] if isinstance(items, Mapping) else [])


def _recursive(schema: Any, refs: tuple[str, ...]) -> bool:
    return isinstance(schema, Mapping) and schema.get("$ref") in refs


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "null"


def _number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), (int, float)):
        low = schema["exclusiveMinimum"] + (1 if integer else 0.5)
    if isinstance(schema.get("exclusiveMaximum"), (int, float)):
        high = schema["exclusiveMaximum"] - (1 if integer else 0.5)
    value: float = 1 if low is None else low
    if high is not None and value > high:
        value = high if low is None else (low + high) / 2
    return math.ceil(value) if integer else float(value)


def _string(schema: Mapping[str, Any]) -> str:
    text = _FORMATS.get(str(schema.get("format")), "x")
    minimum, maximum = schema.get("minLength"), schema.get("maxLength")
    if isinstance(minimum, int) and len(text) < minimum:
        text += "x" * (minimum - len(text))
    if isinstance(maximum, int):
        text = text[:maximum]
    return text


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    target: Any = root
    for part in ref.removeprefix("#").strip("/").split("/"):
        if not part:
            continue
        target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, Mapping) else None
    return target


def _chosen_function(choice: Any) -> str | None:
    if not isinstance(choice, Mapping):
        return None
    name = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), Mapping) else None
    name = name or choice.get("name")
    return name if isinstance(name, str) and name else None


def _spec(tool: Any) -> Mapping[str, Any]:
    if not isinstance(tool, Mapping):
        return {}
    spec = tool.get("function") or tool.get("toolSpec") or tool
    return spec if isinstance(spec, Mapping) else {}


def tool_name(tool: Any) -> str | None:
    """The name of an OpenAI (``{"type": "function", "function": {…}}``), flat, or Strands ``toolSpec`` tool
    definition; ``None`` when it has none."""
    name = _spec(tool).get("name")
    return name if isinstance(name, str) else None


def tool_parameters(tool: Any) -> Mapping[str, Any]:
    """The JSON schema of a tool definition's parameters (``parameters``, ``input_schema`` or ``inputSchema``, a
    Strands ``{"json": …}`` unwrapped); ``{}`` when it has none."""
    spec = _spec(tool)
    schema = spec.get("parameters") or spec.get("input_schema") or spec.get("inputSchema") or {}
    if isinstance(schema, Mapping) and isinstance(schema.get("json"), Mapping):
        schema = schema["json"]
    return schema if isinstance(schema, Mapping) else {}


def _called_since(messages: list[dict[str, Any]], since: int | None) -> set[str]:
    """Names of the tools the assistant called after message ``since`` (chat-completions or Strands-native)."""
    names: set[str] = set()
    for message in messages[(since + 1) if since is not None else 0:]:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                names.add(function["name"])
        content = message.get("content")
        if isinstance(content, list):
            names.update(p["toolUse"].get("name") for p in content
                         if isinstance(p, Mapping) and isinstance(p.get("toolUse"), Mapping))
    return names
