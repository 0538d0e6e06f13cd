"""Agent-loop validator (spec §2.16): codes, severities, default request, result helpers."""

import pytest

from osmosis_compat.legacy.base import RolloutAgentLoop
from osmosis_compat.legacy.exceptions import AgentLoopValidationError
from osmosis_compat.legacy.schemas import OpenAIFunctionSchema, OpenAIFunctionToolSchema, RolloutRequest
from osmosis_compat.legacy.validator import ValidationError, ValidationResult, validate_agent_loop

GOOD_TOOL = {"type": "function", "function": {"name": "add", "description": "Add",
                                              "parameters": {"type": "object", "properties": {}, "required": []}}}


def loop_with(tools=None, get_tools=None, name="calc"):
    class Loop(RolloutAgentLoop):
        name = "placeholder"

        def get_tools(self, request):
            if get_tools is not None:
                return get_tools(request)
            return tools

        async def run(self, ctx):
            return ctx.complete([])

    Loop.name = name  # replaced after class creation so bad names reach the validator
    return Loop()


def codes(items):
    return [item.code for item in items]


class Duck:
    """Not a RolloutAgentLoop: the validator only inspects attributes."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def test_valid_loop():
    result = validate_agent_loop(loop_with([GOOD_TOOL, OpenAIFunctionToolSchema(
        type="function", function=OpenAIFunctionSchema(name="x", description="y"))]))
    assert result.valid and bool(result)
    assert result.errors == [] and result.warnings == []
    assert result.agent_name == "calc" and result.tool_count == 2
    result.raise_if_invalid()


def test_default_request_is_really_passed_to_get_tools():
    seen = []
    validate_agent_loop(loop_with(get_tools=lambda r: seen.append(r) or []))
    [request] = seen
    assert request.rollout_id == "validation-test-rollout"
    assert request.server_url == "http://localhost:8080"
    assert request.messages == [{"role": "user", "content": "Hello"}]
    assert request.completion_params == {"temperature": 1.0, "max_tokens": 512}
    assert request.metadata == {"_validation": True}
    custom = RolloutRequest(rollout_id="mine", server_url="http://x", messages=[], completion_params={})
    validate_agent_loop(loop_with(get_tools=lambda r: seen.append(r) or []), request=custom)
    assert seen[-1] is custom


def test_name_codes():
    assert codes(validate_agent_loop(Duck(get_tools=lambda r: [], run=None)).errors)[0] == "MISSING_NAME"
    result = validate_agent_loop(loop_with([], name=123))
    assert codes(result.errors) == ["INVALID_NAME_TYPE"] and result.agent_name is None
    assert codes(validate_agent_loop(loop_with([], name="   ")).errors) == ["EMPTY_NAME"]


def test_get_tools_exception_details():
    def boom(request):
        raise KeyError("ground_truth")

    [error] = validate_agent_loop(loop_with(get_tools=boom)).errors
    assert error.code == "GET_TOOLS_EXCEPTION"
    assert error.details == {"exception_type": "KeyError", "message": "'ground_truth'"}


@pytest.mark.parametrize("tools, code", [(None, "GET_TOOLS_RETURNS_NONE"), ((GOOD_TOOL,), "GET_TOOLS_INVALID_TYPE"),
                                         ("x", "GET_TOOLS_INVALID_TYPE")])
def test_get_tools_return_type(tools, code):
    assert codes(validate_agent_loop(loop_with(tools)).errors) == [code]


@pytest.mark.parametrize(
    "tool, errors, warnings",
    [
        ({"function": GOOD_TOOL["function"]}, ["MISSING_TOOL_TYPE"], []),
        ({**GOOD_TOOL, "type": "code"}, [], ["UNKNOWN_TOOL_TYPE"]),
        ({"type": "function"}, ["MISSING_FUNCTION"], []),
        ({"type": "function", "function": "add"}, ["INVALID_FUNCTION_TYPE"], []),
        ({"type": "function", "function": {"description": "d"}}, ["MISSING_FUNCTION_NAME"], []),
        ({"type": "function", "function": {"name": " ", "description": "d"}}, ["INVALID_FUNCTION_NAME"], []),
        ({"type": "function", "function": {"name": 5, "description": "d"}}, ["INVALID_FUNCTION_NAME"], []),
        ({"type": "function", "function": {"name": "f", "description": "d", "parameters": []}},
         ["INVALID_PARAMETERS_TYPE"], []),
        ({"type": "function", "function": {"name": "f", "description": "d",
                                           "parameters": {"type": "array", "properties": {}, "required": []}}},
         [], ["PARAMETERS_TYPE_NOT_OBJECT"]),
        ("tool", ["INVALID_TOOL_TYPE"], []),
    ],
)
def test_tool_codes(tool, errors, warnings):
    result = validate_agent_loop(loop_with([tool]))
    assert codes(result.errors) == errors
    assert codes(result.warnings) == warnings
    assert result.valid is (not errors)
    for item in result.errors + result.warnings:
        assert item.field.startswith("tools[0]")


def test_missing_description_warns_and_fails_as_the_server_would():
    result = validate_agent_loop(loop_with([{"type": "function", "function": {"name": "f"}}]))
    assert codes(result.warnings) == ["MISSING_FUNCTION_DESCRIPTION"]
    assert codes(result.errors) == ["INVALID_TOOL_SCHEMA"]
    assert "tools[0]: function.description" in result.errors[0].message
    assert "every rollout init would fail" in result.errors[0].message  # says why this is an error here


def test_async_get_tools_is_awaited():
    async def tools(request):
        return [GOOD_TOOL]

    result = validate_agent_loop(loop_with(get_tools=tools))
    assert result.valid and result.tool_count == 1
    assert codes(result.warnings) == ["ASYNC_GET_TOOLS"]


def test_run_codes():
    base = {"name": "x", "get_tools": lambda r: []}
    assert codes(validate_agent_loop(Duck(**base)).errors) == ["MISSING_RUN_METHOD"]
    assert codes(validate_agent_loop(Duck(**base, run=3)).errors) == ["RUN_NOT_CALLABLE"]
    assert codes(validate_agent_loop(Duck(**base, run=lambda ctx: None)).errors) == ["RUN_NOT_ASYNC"]


def test_validation_error_str():
    assert str(ValidationError("CODE", "msg", field="tools[0]")) == "[CODE] tools[0]: msg"
    assert str(ValidationError("CODE", "msg")) == "[CODE] msg"
    assert ValidationError("C", "m").details is None


def test_result_raise_if_invalid():
    errors = [ValidationError("A", "first", field="name"), ValidationError("B", "second")]
    result = ValidationResult(valid=False, errors=errors)
    assert not result and result.warnings == [] and result.tool_count == 0 and result.agent_name is None
    with pytest.raises(AgentLoopValidationError) as info:
        result.raise_if_invalid()
    assert str(info.value) == (
        "Agent loop validation failed with 2 error(s):\n  - [A] name: first\n  - [B] second"
    )
    assert info.value.errors == errors
    ValidationResult(valid=True).raise_if_invalid()


def test_missing_get_tools_is_reported_as_exception():
    [error] = validate_agent_loop(Duck(name="x", run=None)).errors[:1]
    assert error.code == "GET_TOOLS_EXCEPTION" and error.details["exception_type"] == "AttributeError"
