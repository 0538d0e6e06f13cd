"""Tool objects → OpenAI function schemas: Strands @tool, OpenAI Agents FunctionTool, dicts; schemas stay whole."""

from __future__ import annotations

from enum import Enum
from typing import Literal, Optional

import pytest
from pydantic import BaseModel

from osmosis_compat.adapters import ToolSchemaError, find_tools, openai_tool_schema, openai_tool_schemas
from osmosis_compat.legacy.schemas import normalize_tools


class Color(str, Enum):
    red = "red"
    blue = "blue"


class Point(BaseModel):
    x: float
    y: float


def _strands_tool():
    from strands import tool

    @tool
    def plot(a: int, points: list[Point], color: Color, mode: Literal["fast", "slow"], note: Optional[str] = None) -> str:
        """Plot points.

        Args:
            a: how many
            points: the points
            color: the colour
            mode: speed
            note: an optional note
        """
        return ""

    return plot


def _agents_tool():
    from agents import function_tool

    @function_tool
    def plot(a: int, points: list[Point], color: Color, note: Optional[str] = None) -> str:
        """Plot points.

        Args:
            a: how many
        """
        return ""

    return plot


def test_strands_tool_keeps_nested_arrays_enums_and_optional() -> None:
    schema = openai_tool_schema(_strands_tool())
    fn = schema["function"]
    assert schema["type"] == "function"
    assert fn["name"] == "plot"
    assert fn["description"].startswith("Plot points.")
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["a", "points", "color", "mode"]  # optional `note` not required
    assert params["properties"]["points"]["items"] == {"$ref": "#/$defs/Point"}
    assert params["$defs"]["Point"]["properties"]["x"]["type"] == "number"  # nested object kept whole
    assert params["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert params["properties"]["mode"]["enum"] == ["fast", "slow"]
    assert "note" in params["properties"]
    assert "strict" not in fn


def test_agents_function_tool_keeps_strict_schema() -> None:
    schema = openai_tool_schema(_agents_tool())
    fn = schema["function"]
    assert fn["name"] == "plot"
    assert fn["strict"] is True
    params = fn["parameters"]
    assert params["additionalProperties"] is False
    assert params["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert params["$defs"]["Point"]["required"] == ["x", "y"]


def test_converted_schemas_pass_the_legacy_init_response_validation_whole() -> None:
    tools = openai_tool_schemas([_strands_tool(), {"name": "other", "parameters": {"type": "object"}}])
    normalized = normalize_tools(tools)
    assert normalized[0]["function"]["parameters"]["$defs"]["Point"]["type"] == "object"
    assert normalized[1]["function"]["description"] == "Tool: other"  # legacy requires a description
    assert normalized[1]["function"]["parameters"] == {"type": "object", "properties": {}, "required": []}


def test_dict_forms() -> None:
    openai = {"type": "function", "function": {"name": "add", "description": "Add", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}}}
    assert openai_tool_schema(openai) == openai
    strands_spec = {"name": "add", "description": "Add", "inputSchema": {"json": {"properties": {}}}}
    assert openai_tool_schema(strands_spec)["function"]["parameters"] == {"type": "object", "properties": {}, "required": []}
    assert openai_tool_schema({"toolSpec": strands_spec})["function"]["name"] == "add"
    # the input is not mutated
    assert strands_spec["inputSchema"] == {"json": {"properties": {}}}


def test_legacy_pydantic_tool() -> None:
    from osmosis_compat.legacy.schemas import OpenAIFunctionToolSchema

    tool = OpenAIFunctionToolSchema.model_validate(
        {"type": "function", "function": {"name": "add", "description": "Add", "parameters": {
            "type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}}}
    )
    fn = openai_tool_schema(tool)["function"]
    assert fn["parameters"]["properties"]["a"] == {"type": "number"}  # no explicit nulls


@pytest.mark.parametrize(
    "bad, message",
    [
        (42, "int is not a tool"),
        ({"foo": 1}, "not a tool definition"),
        ({"name": "", "parameters": {}}, "non-empty"),
        ({"name": "x", "parameters": {"type": "array"}}, "type 'object'"),
        ({"name": "x", "parameters": {"type": "object", "required": "a"}}, "required must be a list"),
    ],
)
def test_bad_tools_raise_a_readable_error(bad, message) -> None:
    with pytest.raises(ToolSchemaError, match=message):
        openai_tool_schema(bad)


def test_duplicate_names_rejected() -> None:
    with pytest.raises(ToolSchemaError, match="two tools are named 'plot'"):
        openai_tool_schemas([_strands_tool(), _agents_tool()])


def test_find_tools_in_a_workflow_config() -> None:
    from osmosis_compat.legacy.schemas import OpenAIFunctionToolSchema  # noqa: F401 (import check only)

    strands_tool, agents_tool = _strands_tool(), _agents_tool()

    class Holder:
        tools = [agents_tool]

    class Config(BaseModel):
        model_config = {"extra": "allow", "arbitrary_types_allowed": True}
        name: str

    config = Config(name="x", tools=[strands_tool, "not a tool"], agent=Holder(), again=strands_tool, other=3)
    assert find_tools(config) == [strands_tool, agents_tool]
    assert find_tools({"t": strands_tool}) == [strands_tool]
    assert find_tools(None) == []


def test_find_module_tools_next_to_a_workflow_class() -> None:
    from pathlib import Path

    from osmosis_compat.adapters import find_module_tools
    from osmosis_compat.cli.loading import _import_file

    strands_calculator = _import_file(str(Path(__file__).resolve().parents[2] / "examples/modern/strands_calculator.py"))

    found = find_module_tools(strands_calculator.StrandsCalculatorWorkflow)
    assert [openai_tool_schema(t)["function"]["name"] for t in found] == ["add", "multiply"]
    assert find_module_tools(int) == []  # builtins: no tools
