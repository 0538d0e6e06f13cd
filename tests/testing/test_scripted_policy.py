"""ScriptedPolicy: arithmetic chains over the offered tools, decided from the messages alone."""

from __future__ import annotations

import json

import pytest

from osmosis_compat.testing import ScriptedPolicy
from osmosis_compat.testing.arithmetic import Op, Ref, find_chain, format_number


def tool(name: str, properties: dict, *, strict: bool = False) -> dict:
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    if strict:
        parameters["additionalProperties"] = False
        parameters["title"] = f"{name}_args"
    function = {"name": name, "description": f"{name} tool", "parameters": parameters}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


ADD = tool("add", {"a": {"type": "integer"}, "b": {"type": "integer"}})
SUBTRACT = tool("subtract", {"minuend": {"type": "number"}, "subtrahend": {"type": "number"}})
MULTIPLY = tool("multiply_numbers", {"x": {"type": "number"}, "y": {"type": "number"}})
DIVIDE = tool("divide", {"num": {"type": "number"}, "den": {"type": "number"}})
CALCULATOR = tool("calculator", {"expression": {"type": "string"}})
OPS = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply_numbers": lambda a, b: a * b,
       "divide": lambda a, b: a / b}


def run_tools(call: dict) -> str:
    """Execute a tool call the way a framework would; results come back as strings."""
    name = call["function"]["name"]
    args = json.loads(call["function"]["arguments"])
    if name == "calculator":
        value = eval(args["expression"], {"__builtins__": {}})  # test-only, the policy wrote it
    else:
        value = OPS[name](*args.values())
    return format_number(value)


def converse(policy: ScriptedPolicy, question, tools, max_turns: int = 8) -> tuple[list[dict], list[dict]]:
    """Run the policy like an agent loop; return (messages, replies)."""
    messages: list[dict] = [{"role": "system", "content": "You are a calculator."},
                            {"role": "user", "content": question}]
    replies = []
    for _ in range(max_turns):
        reply = policy.reply(messages, tools)
        replies.append(reply)
        message = reply["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return messages, replies
        for call in message["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": run_tools(call)})
    raise AssertionError("policy did not finish")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is 12 + 30?", [Op("+", 12, 30)]),
        ("Compute (2 + 3) * 4", [Op("+", 2, 3), Op("*", Ref(0), 4)]),
        ("17 * 3 - 5", [Op("*", 17, 3), Op("-", Ref(0), 5)]),
        ("2*3 + 4*5?", [Op("*", 2, 3), Op("*", 4, 5), Op("+", Ref(0), Ref(1))]),
        ("What is 7 × 6?", [Op("*", 7, 6)]),
        ("In 2024, what is 8 / 2?", [Op("/", 8, 2)]),
        ("What is 5?", None),
        ("Tell me a joke.", None),
    ],
)
def test_find_chain(text, expected):
    assert find_chain(text) == expected


def test_single_operation_round_trip_uses_schema_parameter_names():
    messages, replies = converse(ScriptedPolicy(), "What is 12 + 30?", [ADD])
    call = replies[0]["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "add", "arguments": '{"a": 12, "b": 30}'}
    assert replies[0]["choices"][0]["finish_reason"] == "tool_calls"
    assert replies[-1]["choices"][0]["message"] == {"role": "assistant", "content": "The answer is 42."}
    assert replies[-1]["choices"][0]["finish_reason"] == "stop"


def test_chain_performs_one_operation_per_turn_with_intermediate_results():
    tools = [ADD, SUBTRACT, MULTIPLY, DIVIDE]
    _, replies = converse(ScriptedPolicy(), "Compute (2 + 3) * 4 - 6", tools)
    calls = [r["choices"][0]["message"]["tool_calls"][0]["function"] for r in replies[:-1]]
    assert calls == [
        {"name": "add", "arguments": '{"a": 2, "b": 3}'},
        {"name": "multiply_numbers", "arguments": '{"x": 5, "y": 4}'},
        {"name": "subtract", "arguments": '{"minuend": 20, "subtrahend": 6}'},
    ]
    assert replies[-1]["choices"][0]["message"]["content"] == "The answer is 14."


def test_intermediate_values_come_from_the_tool_messages():
    # A tool that answers differently from true arithmetic: the policy trusts the tool.
    messages = [{"role": "user", "content": "17 * 3 - 5"}]
    first = ScriptedPolicy().reply(messages, [SUBTRACT, MULTIPLY])["choices"][0]["message"]
    messages += [first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "Result: 50"}]
    second = ScriptedPolicy().reply(messages, [SUBTRACT, MULTIPLY])["choices"][0]["message"]
    assert json.loads(second["tool_calls"][0]["function"]["arguments"]) == {"minuend": 50, "subtrahend": 5}
    messages += [second, {"role": "tool", "tool_call_id": second["tool_calls"][0]["id"], "content": "45"}]
    final = ScriptedPolicy().reply(messages, [SUBTRACT, MULTIPLY])["choices"][0]["message"]
    assert final["content"] == "The answer is 45."


def test_generic_string_tool_gets_the_sub_expressions():
    _, replies = converse(ScriptedPolicy(), "Compute (2 + 3) * 4", [CALCULATOR])
    args = [json.loads(r["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) for r in replies[:-1]]
    assert args == [{"expression": "2 + 3"}, {"expression": "5 * 4"}]
    assert replies[-1]["choices"][0]["message"]["content"] == "The answer is 20."


def test_division_result_formats_without_trailing_zero_and_keeps_fractions():
    _, replies = converse(ScriptedPolicy(), "What is 10 / 4 + 0.5?", [DIVIDE, ADD])
    assert replies[-1]["choices"][0]["message"]["content"] == "The answer is 3."
    _, replies = converse(ScriptedPolicy(), "What is 10 / 4?", [DIVIDE])
    assert replies[-1]["choices"][0]["message"]["content"] == "The answer is 2.5."


def test_strict_agents_schemas_and_optional_number_types_are_understood():
    strict_add = tool("add", {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}},
                      strict=True)
    optional = tool("plus", {"left": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                             "right": {"type": ["number", "null"]}})
    for tools in ([strict_add], [optional]):
        reply = ScriptedPolicy().reply([{"role": "user", "content": "What is 2 + 3?"}], tools)
        args = json.loads(reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
        assert list(args.values()) == [2, 3]


def test_list_content_parts_and_strands_style_blocks_are_read():
    for content in ([{"type": "text", "text": "What is 2 + 3?"}], [{"text": "What is 2 + 3?"}]):
        reply = ScriptedPolicy().reply([{"role": "user", "content": content}], [ADD])
        assert reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"


def test_strands_native_tool_results_count_as_completed_steps():
    call_id = "call_x"
    messages = [
        {"role": "user", "content": [{"text": "What is 2 + 3?"}]},
        {"role": "assistant",
         "content": [{"toolUse": {"toolUseId": call_id, "name": "add", "input": {"a": 2, "b": 3}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": call_id, "status": "success",
                                                     "content": [{"text": "5"}]}}]},
    ]
    assert ScriptedPolicy().reply(messages, [ADD])["choices"][0]["message"]["content"] == "The answer is 5."


def test_without_usable_tools_the_policy_answers_itself():
    policy = ScriptedPolicy()
    question = [{"role": "user", "content": "Compute (2 + 3) * 4"}]
    assert policy.reply(question, None)["choices"][0]["message"]["content"] == "The answer is 20."
    # Only one of the two needed operators has a tool: answer directly rather than half-use tools.
    assert policy.reply(question, [ADD])["choices"][0]["message"]["content"] == "The answer is 20."
    search = tool("search", {"query": {"type": "string"}})
    assert "tool_calls" not in policy.reply(question, [search])["choices"][0]["message"]
    assert policy.reply([{"role": "user", "content": "Hi there"}], [ADD])["choices"][0]["message"]["content"] == "OK."
    assert policy.reply([{"role": "user", "content": "1 / 0"}], None)["choices"][0]["message"]["content"] == "OK."
    assert policy.reply([], None)["choices"][0]["message"]["content"] == "OK."


def test_a_new_question_starts_a_new_chain_and_ids_stay_unique():
    messages, _ = converse(ScriptedPolicy(), "What is 2 + 3?", [ADD])
    messages.append({"role": "user", "content": "And 4 + 4?"})
    reply = ScriptedPolicy().reply(messages, [ADD])["choices"][0]["message"]
    assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {"a": 4, "b": 4}
    first_id = messages[2]["tool_calls"][0]["id"]
    assert reply["tool_calls"][0]["id"] != first_id
    assert first_id.startswith("call_") and first_id.endswith("_1")
    assert reply["tool_calls"][0]["id"].endswith("_2")


def test_replies_are_deterministic_and_stateless():
    policy = ScriptedPolicy()
    messages = [{"role": "user", "content": "Compute (2 + 3) * 4"}]
    assert policy.reply(messages, [ADD, MULTIPLY]) == ScriptedPolicy().reply(messages, [ADD, MULTIPLY])
    # A retried request (P8) gets exactly the same answer, however often it is sent.
    assert policy.reply(messages, [ADD, MULTIPLY]) == policy.reply(messages, [ADD, MULTIPLY])
    reply = policy.reply(messages, [ADD, MULTIPLY], model="osmosis-rollout")
    assert reply["object"] == "chat.completion" and reply["model"] == "osmosis-rollout"
    assert reply["id"].startswith("chatcmpl-")
    usage = reply["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


def test_override_can_dictate_a_message_or_a_full_completion():
    def override(messages, tools):
        text = messages[-1]["content"]
        if text == "message":
            return {"content": "dictated"}
        if text == "full":
            return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "raw"},
                                 "finish_reason": "length"}]}
        return None

    policy = ScriptedPolicy(override=override)
    reply = policy.reply([{"role": "user", "content": "message"}], None)
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "dictated"}
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert policy.reply([{"role": "user", "content": "full"}], None)["choices"][0]["finish_reason"] == "length"
    assert policy.reply([{"role": "user", "content": "1 + 1"}], None)["choices"][0]["message"]["content"] == \
        "The answer is 2."


async def test_areply_applies_latency_and_rejects_bad_input():
    import time

    policy = ScriptedPolicy(latency_s=0.05)
    start = time.monotonic()
    await policy.areply([{"role": "user", "content": "hi"}], None)
    assert time.monotonic() - start >= 0.045
    with pytest.raises(TypeError):
        policy.reply("What is 2 + 3?", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ScriptedPolicy(latency_s=-1)


# -- property: any +,-,* expression is solved through the tools to the true value ----------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def expressions():
    leaf = st.integers(min_value=0, max_value=99).map(str)
    return st.recursive(
        leaf,
        lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        max_leaves=6,
    ).filter(lambda e: any(op in e for op in "+-*"))


@settings(max_examples=60, deadline=None)
@given(expression=expressions(), generic=st.booleans())
def test_any_expression_is_solved_with_the_tools(expression, generic):
    tools = [CALCULATOR] if generic else [ADD, SUBTRACT, MULTIPLY, DIVIDE]
    _, replies = converse(ScriptedPolicy(), f"Compute {expression}", tools, max_turns=10)
    expected = eval(expression, {"__builtins__": {}})
    assert replies[-1]["choices"][0]["message"]["content"] == f"The answer is {expected}."
    assert len(replies) - 1 == len(find_chain(expression))  # one tool call per operation


def test_a_tool_error_without_a_number_ends_the_chain_politely():
    messages = [{"role": "user", "content": "What is 5 / 0 + 1?"}]
    first = ScriptedPolicy().reply(messages, [DIVIDE, ADD])["choices"][0]["message"]
    assert first["tool_calls"][0]["function"]["name"] == "divide"
    messages += [first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"],
                         "content": "Error: division by zero"}]
    assert ScriptedPolicy().reply(messages, [DIVIDE, ADD])["choices"][0]["message"]["content"] == "OK."
    # A wordy tool on a computable chain: the policy carries on with the true value.
    messages = [{"role": "user", "content": "What is 2 + 3 + 4?"}]
    first = ScriptedPolicy().reply(messages, [ADD])["choices"][0]["message"]
    messages += [first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "five"}]
    second = ScriptedPolicy().reply(messages, [ADD])["choices"][0]["message"]
    assert json.loads(second["tool_calls"][0]["function"]["arguments"]) == {"a": 5, "b": 4}
