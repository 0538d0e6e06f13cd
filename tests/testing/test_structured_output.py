"""ScriptedPolicy answers a request for structured output as a real model would (rule 6): a ``response_format`` JSON
schema, a forced or required ``tool_choice``, Strands' ``StructuredOutputTool`` — checked on the policy, on the
three fake controllers (which hand it the request's parameters alike), and with the real Strands and OpenAI Agents
packages, which reject a plain-text answer to such a request."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Literal, Optional

import httpx
import pytest
from pydantic import BaseModel, Field

from osmosis_compat.testing import (
    FakePollingController,
    FakeTrainGate,
    FakeWorkflowController,
    ScriptedPolicy,
    schema_instance,
)

QUESTION = [{"role": "user", "content": "What is 2 + 3?"}]
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
PERSON = {"type": "function", "function": {"name": "PersonInfo", "description": "Extracted person information.",
                                           "parameters": {"type": "object", "properties": {
                                               "name": {"type": "string"}, "age": {"type": "integer"}}}}}
STRANDS_OUTPUT = {"type": "function", "function": {
    "name": "Answer", "description": "IMPORTANT: This StructuredOutputTool should only be invoked as the last and "
    "final tool before returning the completed result to the caller. <description></description>",
    "parameters": {"type": "object", "properties": {"value": {"type": "integer"}}}}}


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Leaf(BaseModel):
    weight: float = Field(gt=0, le=0.75)
    tags: list[str] = Field(min_length=2)


class Node(BaseModel):
    name: str = Field(min_length=3, max_length=5)
    children: list[Node] = []


class Everything(BaseModel):
    when: datetime.datetime
    day: datetime.date
    colour: Colour
    mode: Literal["fast", "slow"]
    count: int = Field(ge=3)
    leaf: Leaf
    maybe: Optional[Leaf] = None
    pair: tuple[int, str]
    table: dict[str, int]
    tree: Node
    flag: bool


def message(reply: dict) -> dict:
    return reply["choices"][0]["message"]


def test_an_instance_of_a_pydantic_schema_validates():
    schema = Everything.model_json_schema()
    value = schema_instance(schema)
    assert Everything.model_validate(value).count == 3
    assert Everything.model_validate_json(json.dumps(value)).leaf.weight == 0.5  # within (0, 0.75]
    assert schema_instance(schema) == value  # derived from the schema alone


def test_a_response_format_schema_gets_its_instance_after_the_programs_own_tools():
    policy = ScriptedPolicy()
    params = {"response_format": {"type": "json_schema", "json_schema": {
        "name": "Everything", "schema": Everything.model_json_schema(), "strict": False}}}
    first = message(policy.reply(QUESTION, [ADD], params=params))
    assert first["tool_calls"][0]["function"]["name"] == "add"  # the arithmetic still uses the tools first
    done = [*QUESTION, first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "5"}]
    final = message(policy.reply(done, [ADD], params=params))
    Everything.model_validate_json(final["content"])
    assert message(policy.reply(done, [ADD])) == {"role": "assistant", "content": "The answer is 5."}


def test_a_forced_function_is_called_once_per_question():
    policy = ScriptedPolicy()
    forced = {"tool_choice": {"type": "function", "function": {"name": "PersonInfo"}}}
    call = message(policy.reply(QUESTION, [ADD, PERSON], params=forced))["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("PersonInfo", {"name": "x", "age": 1})
    called = [*QUESTION, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": call}]}, {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    assert message(policy.reply(called, [ADD, PERSON], params=forced))["content"] == "The answer is 5."
    # a forced arithmetic tool gets the arithmetic's arguments, not the schema's
    add = message(policy.reply(QUESTION, [ADD, PERSON], params={"tool_choice": {"type": "function",
                                                                                "function": {"name": "add"}}}))
    assert json.loads(add["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}


def test_required_and_strands_structured_output_tools_end_the_run():
    policy = ScriptedPolicy()
    required = message(policy.reply(QUESTION, [PERSON], params={"tool_choice": "required"}))
    assert required["tool_calls"][0]["function"]["name"] == "PersonInfo"
    first = message(policy.reply(QUESTION, [ADD, STRANDS_OUTPUT]))
    assert first["tool_calls"][0]["function"]["name"] == "add"  # the program's tools first
    done = [*QUESTION, first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "5"}]
    last = message(policy.reply(done, [ADD, STRANDS_OUTPUT]))["tool_calls"][0]["function"]
    assert (last["name"], json.loads(last["arguments"])) == ("Answer", {"value": 1})
    # without a request for it, nothing changes; and the option turns it off
    assert message(policy.reply(QUESTION, [PERSON]))["content"] == "The answer is 5."
    off = ScriptedPolicy(structured_output=False)
    assert message(off.reply(QUESTION, [PERSON], params={"tool_choice": "required"}))["content"] == "The answer is 5."


class Recorder:
    """A policy that keeps what the controller handed it."""

    accepts_request_params = True

    def __init__(self) -> None:
        self.params: list[dict] = []

    async def areply(self, messages, tools, *, model="", params=None):
        self.params.append(dict(params or {}))
        return ScriptedPolicy().reply(messages, tools, model=model, params=params)


async def test_every_fake_controller_hands_the_request_params_to_the_policy():
    body = {"messages": QUESTION, "tools": [ADD, PERSON], "temperature": 0.5,
            "tool_choice": {"type": "function", "function": {"name": "PersonInfo"}}}
    fakes = {
        "workflow": (FakeWorkflowController, "/v1/chat/completions", {"Authorization": "Bearer ctrl-key"}, {}),
        "polling": (lambda policy: FakePollingController(policy, check_keys=False), "/v1/rollouts/r1/chat/completions",
                    {}, {}),
        "traingate": (FakeTrainGate, "/v1/chat/completions", {}, {"rollout_id": "r1"}),
    }
    for kind, (make, path, headers, extra) in fakes.items():
        recorder = Recorder()
        fake = make(recorder)
        with fake.serve():
            async with httpx.AsyncClient() as client:
                reply = (await client.post(fake.url + path, json={**body, **extra}, headers=headers)).json()
        assert recorder.params == [{"temperature": 0.5, "tool_choice": body["tool_choice"]}], kind
        assert message(reply)["tool_calls"][0]["function"]["name"] == "PersonInfo", kind


@pytest.fixture(scope="module")
def controller():
    fake = FakeWorkflowController()
    with fake.serve():
        yield fake


class Sum(BaseModel):
    """The sum and when it was computed."""

    total: int
    at: datetime.datetime


async def test_openai_agents_output_type_gets_a_valid_final_output(controller):
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=controller.url + "/v1", api_key=controller.controller_api_key, max_retries=0,
                         default_headers={"x-rollout-id": "r-output-type"})
    agent = Agent(name="calc", output_type=Sum, model=OpenAIChatCompletionsModel(model="m", openai_client=client))
    result = await Runner.run(agent, "What is 2 + 3?", max_turns=3)
    assert isinstance(result.final_output, Sum)
    assert controller.chat_requests("r-output-type")[0].body["response_format"]["type"] == "json_schema"


async def test_strands_structured_output_by_tool_and_by_output_model(controller):
    from strands import Agent
    from strands.models.litellm import LiteLLMModel

    def model(rollout_id: str) -> LiteLLMModel:
        return LiteLLMModel(client_args={"api_base": controller.url + "/v1", "api_key": controller.controller_api_key,
                                         "extra_headers": {"x-rollout-id": rollout_id}, "num_retries": 0},
                            model_id="openai/osmosis-rollout")

    forced = Agent(model=model("r-strands-forced"), callback_handler=None, retry_strategy=None)
    assert isinstance(await forced.structured_output_async(Sum, "What is 2 + 3?"), Sum)
    assert controller.chat_requests("r-strands-forced")[0].body["tool_choice"] == "required"

    agent = Agent(model=model("r-strands-model"), callback_handler=None, retry_strategy=None,
                  structured_output_model=Sum)
    result = await agent.invoke_async("What is 2 + 3?")
    assert isinstance(result.structured_output, Sum)
