"""Tool objects of any kind → OpenAI function-tool schemas, and finding the tools a workflow uses.

A workflow served to a legacy controller must declare its tools in the InitResponse. They are given
explicitly, or found in the workflow config. Accepted tool kinds:

- OpenAI tool dicts ``{"type": "function", "function": {...}}`` and the legacy ``OpenAIFunctionToolSchema``;
- flat function dicts ``{"name", "description", "parameters"}``;
- Strands tools (``@strands.tool`` functions and any ``AgentTool``: their ``tool_spec``) and Strands tool-spec
  dicts ``{"name", "description", "inputSchema": {"json": {...}}}``;
- OpenAI Agents ``FunctionTool`` (``@function_tool``): ``name``, ``description``, ``params_json_schema``,
  ``strict_json_schema``.

JSON schemas are kept **whole** (nested objects, ``items``, ``enum``, ``anyOf`` for optional parameters,
``$defs``/``$ref``, ``additionalProperties``, ``default``, titles): the legacy server of osmosis-compat
forwards them unchanged. Only what the legacy InitResponse requires is filled in: a ``description`` (falls back
to ``"Tool: <name>"``) and ``parameters.type``/``properties``/``required``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "ToolSchemaError",
    "find_module_tools",
    "find_tools",
    "is_tool",
    "openai_tool_schema",
    "openai_tool_schemas",
]

logger = logging.getLogger("osmosis_compat.adapters.tools")


class ToolSchemaError(ValueError):
    """An object given as a tool cannot be turned into an OpenAI function schema."""


def _parameters(schema: Any, name: str) -> dict[str, Any]:
    if schema is None:
        schema = {}
    if not isinstance(schema, Mapping):
        raise ToolSchemaError(f"tool {name!r}: parameters must be a JSON-schema object, got {type(schema).__name__}")
    params = copy.deepcopy(dict(schema))
    kind = params.setdefault("type", "object")
    if kind != "object":
        raise ToolSchemaError(f"tool {name!r}: parameters must have type 'object', got {kind!r}")
    if not isinstance(params.setdefault("properties", {}), Mapping):
        raise ToolSchemaError(f"tool {name!r}: parameters.properties must be an object")
    if not isinstance(params.setdefault("required", []), list):
        raise ToolSchemaError(f"tool {name!r}: parameters.required must be a list")
    return params


def _function(name: Any, description: Any, parameters: Any, strict: bool | None = None) -> dict[str, Any]:
    if not isinstance(name, str) or not name.strip():
        raise ToolSchemaError(f"tool name must be a non-empty string, got {name!r}")
    function: dict[str, Any] = {
        "name": name,
        "description": description if isinstance(description, str) and description.strip() else f"Tool: {name}",
        "parameters": _parameters(parameters, name),
    }
    if strict is not None:
        function["strict"] = bool(strict)
    return {"type": "function", "function": function}


def _strands_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    schema = spec.get("inputSchema")
    if isinstance(schema, Mapping) and "json" in schema:
        schema = schema["json"]
    return _function(spec.get("name"), spec.get("description"), schema)


def is_tool(value: Any) -> bool:
    """Whether ``value`` is a tool object this module converts (dicts count only in OpenAI/Strands shape)."""
    if isinstance(value, Mapping):
        if value.get("type") == "function" and isinstance(value.get("function"), Mapping):
            return True
        return isinstance(value.get("name"), str) and ("inputSchema" in value or "parameters" in value)
    if isinstance(value, (str, bytes, type)):
        return False
    if isinstance(getattr(value, "tool_spec", None), Mapping):  # Strands AgentTool
        return True
    if isinstance(getattr(value, "params_json_schema", None), Mapping) and isinstance(getattr(value, "name", None), str):
        return True  # OpenAI Agents FunctionTool
    return _legacy_tool_model(value) is not None


def _legacy_tool_model(value: Any) -> dict[str, Any] | None:
    function = getattr(value, "function", None)
    dump = getattr(value, "model_dump", None)
    if function is None or dump is None or not hasattr(function, "parameters"):
        return None
    data = dump(mode="json", exclude_none=True)
    return data if isinstance(data, dict) else None


def openai_tool_schema(tool: Any) -> dict[str, Any]:
    """The OpenAI function-tool dict for ``tool`` (see the module docstring for accepted kinds).

    Raises :class:`ToolSchemaError` naming the tool and the problem for anything else.
    """
    if isinstance(tool, Mapping):
        if tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
            fn = tool["function"]
            return _function(fn.get("name"), fn.get("description"), fn.get("parameters"), fn.get("strict"))
        if "toolSpec" in tool and isinstance(tool["toolSpec"], Mapping):
            return _strands_spec(tool["toolSpec"])
        if "inputSchema" in tool:
            return _strands_spec(tool)
        if "name" in tool:
            return _function(tool.get("name"), tool.get("description"), tool.get("parameters"), tool.get("strict"))
        raise ToolSchemaError(f"dict is not a tool definition (keys: {sorted(tool)})")
    spec = getattr(tool, "tool_spec", None)
    if isinstance(spec, Mapping):
        return _strands_spec(spec)
    schema = getattr(tool, "params_json_schema", None)
    if isinstance(schema, Mapping):
        return _function(
            getattr(tool, "name", None),
            getattr(tool, "description", None),
            schema,
            bool(getattr(tool, "strict_json_schema", False)),
        )
    legacy = _legacy_tool_model(tool)
    if legacy is not None:
        return openai_tool_schema(legacy)
    raise ToolSchemaError(
        f"{type(tool).__name__} is not a tool: expected an OpenAI tool dict, a Strands @tool, "
        "or an OpenAI Agents FunctionTool"
    )


def openai_tool_schemas(tools: Iterable[Any]) -> list[dict[str, Any]]:
    """:func:`openai_tool_schema` over ``tools``; duplicate names raise :class:`ToolSchemaError`."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for tool in tools:
        schema = openai_tool_schema(tool)
        name = schema["function"]["name"]
        if name in seen:
            raise ToolSchemaError(f"two tools are named {name!r}; tool names must be unique")
        seen.add(name)
        out.append(schema)
    return out


def _config_values(config: Any) -> list[Any]:
    if config is None:
        return []
    if isinstance(config, Mapping):
        return list(config.values())
    values: dict[str, Any] = {}
    fields = getattr(type(config), "model_fields", None)
    if isinstance(fields, Mapping):
        values.update({name: getattr(config, name, None) for name in fields})
        values.update(getattr(config, "model_extra", None) or {})
    else:
        values.update(getattr(config, "__dict__", {}))
    return list(values.values())


def find_tools(config: Any) -> list[Any]:
    """The tool objects found in a workflow config, in field order.

    Looks at every field value (declared and extra) of a pydantic config, or the values of a mapping: a tool,
    a list/tuple/set of values among which tools are picked, or an object with a ``tools`` list (a Strands or
    OpenAI Agents ``Agent``). The same tool object found twice is listed once.
    """
    found: list[Any] = []
    seen: set[int] = set()

    def add(value: Any) -> None:
        if is_tool(value) and id(value) not in seen:
            seen.add(id(value))
            found.append(value)

    for value in _config_values(config):
        if isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                add(item)
        elif is_tool(value):
            add(value)
        else:
            tools = getattr(value, "tools", None)
            if isinstance(tools, (list, tuple)) and not isinstance(value, (str, bytes, Mapping)):
                for item in tools:
                    add(item)
    return found


def find_module_tools(obj: Any) -> list[Any]:
    """Tool objects bound at module level in the module that defines ``obj`` (a workflow class), in definition
    order; the first tool of each name wins and objects that do not convert are skipped.

    The fallback when neither ``tools=`` nor the workflow config names the tools: workflows usually define their
    ``@tool`` / ``@function_tool`` functions next to the class and build their agent inside ``run()``.
    """
    import sys

    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    if module is None:
        return []
    found: list[Any] = []
    names: set[str] = set()
    for value in list(vars(module).values()):
        if isinstance(value, Mapping) or not is_tool(value):
            continue
        try:
            name = openai_tool_schema(value)["function"]["name"]
        except ToolSchemaError:
            continue
        if name not in names:
            names.add(name)
            found.append(value)
    return found
