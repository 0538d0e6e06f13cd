"""Tool helpers (spec §2.10), every edge case."""

import asyncio

import pytest

from osmosis_compat.legacy.exceptions import ToolArgumentError
from osmosis_compat.legacy.tools import (
    create_tool_error_result,
    create_tool_result,
    execute_tool_calls,
    get_tool_call_info,
    parse_tool_arguments,
    serialize_tool_result,
)


def test_create_tool_result_key_order():
    result = create_tool_result("c1", "8")
    assert result == {"role": "tool", "content": "8", "tool_call_id": "c1"}
    assert list(result) == ["role", "content", "tool_call_id"]
    assert create_tool_result(None, 5)["content"] == 5  # no type checks
    assert create_tool_error_result("c1", "boom") == {"role": "tool", "content": "Error: boom", "tool_call_id": "c1"}


@pytest.mark.parametrize(
    "value, expected",
    [
        (True, "true"), (False, "false"), (1, "1"), (1.0, "1.0"), (10**20, "100000000000000000000"),
        (float("nan"), "nan"), ("text", "text"), ({"a": 1}, '{"a": 1}'), ([1, 2], "[1, 2]"), (None, "null"),
        ((1, 2), "[1, 2]"),
    ],
)
def test_serialize_tool_result(value, expected):
    assert serialize_tool_result(value) == expected


@pytest.mark.parametrize("value", [{1, 2}, object()])
def test_serialize_tool_result_rejects_non_json(value):
    with pytest.raises(TypeError):
        serialize_tool_result(value)


def test_parse_tool_arguments():
    args = {"a": 1}
    assert parse_tool_arguments(args) is args
    assert parse_tool_arguments('{"a": 5}') == {"a": 5}
    with pytest.raises(ToolArgumentError, match="^Expected dict from JSON, got list$"):
        parse_tool_arguments("[1]")
    with pytest.raises(ToolArgumentError, match="^Invalid JSON arguments: ") as info:
        parse_tool_arguments("")
    assert info.value.__cause__ is not None
    for bad, type_name in ((None, "NoneType"), (3, "int"), ([1], "list")):
        with pytest.raises(ToolArgumentError, match=f"^Expected str or dict arguments, got {type_name}$"):
            parse_tool_arguments(bad)


def test_get_tool_call_info():
    assert get_tool_call_info({"id": "c1", "function": {"name": "add", "arguments": '{"a": 1}'}}) == (
        "c1", "add", {"a": 1})
    assert get_tool_call_info({}) == ("unknown", "", {})
    assert get_tool_call_info({"id": None, "function": {"name": "f"}}) == (None, "f", {})
    with pytest.raises(ToolArgumentError) as info:
        get_tool_call_info({"id": "c2", "function": {"name": "f", "arguments": "{oops"}})
    exc = info.value
    assert (exc.tool_call_id, exc.tool_name) == ("c2", "f")
    assert str(exc).startswith("Invalid JSON arguments: ")
    assert isinstance(exc.__cause__, ToolArgumentError)
    with pytest.raises(AttributeError):
        get_tool_call_info({"id": "c", "function": None})


async def test_execute_tool_calls_concurrent_and_ordered():
    started = []

    async def executor(call):
        started.append(call["id"])
        await asyncio.sleep(0.02 if call["id"] == "a" else 0)
        return create_tool_result(call["id"], call["id"])

    results = await execute_tool_calls([{"id": "a"}, {"id": "b"}], executor)
    assert [r["tool_call_id"] for r in results] == ["a", "b"]
    assert started == ["a", "b"]
    assert await execute_tool_calls([], executor) == []
    assert await execute_tool_calls(None, executor) == []


async def test_execute_tool_calls_propagates_first_error():
    async def executor(call):
        raise ValueError(call["id"])

    with pytest.raises(ValueError, match="x"):
        await execute_tool_calls([{"id": "x"}], executor)
