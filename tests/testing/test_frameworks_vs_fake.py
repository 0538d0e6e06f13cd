"""The real Strands and OpenAI Agents packages against FakeWorkflowController's chat endpoint, no osmosis
code in between (spec/frameworks.md §5): both must finish a tool round-trip with "The answer is 5."."""

from __future__ import annotations

import json

import pytest

from osmosis_compat.testing import FakeWorkflowController

HEADERS = {"x-rollout-id": "r-fw", "x-sample-id": "s0"}


@pytest.fixture(scope="module")
def controller():
    fake = FakeWorkflowController()
    with fake.serve():
        yield fake


def requests_for(controller: FakeWorkflowController, rollout_id: str):
    return [r for r in controller.chat_requests(rollout_id)]


async def test_strands_litellm_streaming_round_trip(controller):
    from strands import Agent, tool
    from strands.models.litellm import LiteLLMModel

    calls = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number.
        """
        calls.append((a, b))
        return a + b

    model = LiteLLMModel(
        client_args={"api_base": controller.url + "/v1", "api_key": controller.controller_api_key,
                     "extra_headers": {**HEADERS, "x-rollout-id": "r-strands"}, "num_retries": 0},
        model_id="openai/osmosis-rollout",
    )
    agent = Agent(model=model, tools=[add], system_prompt="You are a calculator.", callback_handler=None,
                  retry_strategy=None)
    result = await agent.invoke_async("What is 2 + 3?")

    assert str(result).strip() == "The answer is 5."
    assert result.stop_reason == "end_turn"
    assert calls == [(2, 3)]
    seen = requests_for(controller, "r-strands")
    assert [r.status_code for r in seen] == [200, 200]
    assert all(r.body["stream"] is True and r.body["model"] == "osmosis-rollout" for r in seen)
    assert all(r.sample_id == "s0" and r.headers["authorization"] == "Bearer ctrl-key" for r in seen)
    assert seen[1].body["messages"][-1]["role"] == "tool"
    # usage chunk was delivered (stream_options.include_usage) and counted by Strands
    assert result.metrics.accumulated_usage["totalTokens"] > 0


async def test_openai_agents_chat_completions_model_round_trip(controller):
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    client = AsyncOpenAI(base_url=controller.url + "/v1", api_key=controller.controller_api_key, max_retries=0,
                         default_headers={**HEADERS, "x-rollout-id": "r-agents"})
    agent = Agent(name="calc", instructions="You are a calculator.", tools=[add],
                  model=OpenAIChatCompletionsModel(model="osmosis-rollout", openai_client=client))
    result = await Runner.run(agent, "What is 2 + 3?", max_turns=5)

    assert result.final_output == "The answer is 5."
    seen = requests_for(controller, "r-agents")
    assert len(seen) == 2
    assert seen[0].body["tools"][0]["function"]["strict"] is True  # P16: strict schemas are understood
    assert json.loads(seen[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}


async def test_openai_agents_streamed_run_over_sse(controller):
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    client = AsyncOpenAI(base_url=controller.url + "/v1", api_key=controller.controller_api_key, max_retries=0,
                         default_headers={**HEADERS, "x-rollout-id": "r-agents-stream"})
    agent = Agent(name="calc", tools=[add], model=OpenAIChatCompletionsModel(model="m", openai_client=client))
    result = Runner.run_streamed(agent, "What is 2 + 3?", max_turns=5)
    async for _ in result.stream_events():
        pass

    assert result.final_output == "The answer is 5."
    assert all(r.body.get("stream") is True for r in requests_for(controller, "r-agents-stream"))


async def test_openai_agents_litellm_model_round_trip(controller):
    from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
    from agents.extensions.models.litellm_model import LitellmModel

    set_tracing_disabled(True)

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    agent = Agent(
        name="calc", tools=[add],
        model=LitellmModel(model="openai/osmosis-rollout", base_url=controller.url + "/v1",
                           api_key=controller.controller_api_key),
        model_settings=ModelSettings(extra_headers={**HEADERS, "x-rollout-id": "r-agents-litellm"},
                                     extra_args={"num_retries": 0}),
    )
    result = await Runner.run(agent, "What is 2 + 3?", max_turns=5)

    assert result.final_output == "The answer is 5."
    assert len(requests_for(controller, "r-agents-litellm")) == 2
