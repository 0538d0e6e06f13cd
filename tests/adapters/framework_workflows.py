"""Workflows built on the real frameworks (Strands through LiteLLM, OpenAI Agents through its chat-completions
model), pointed at the rollout's ``chat_completions_url`` the way the Osmosis integrations do."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from osmosis_compat.workflow import (  # noqa: E402
    AgentWorkflow,
    AgentWorkflowConfig,
    RolloutSample,
    SampleSource,
    get_rollout_context,
)


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first addend
        b: second addend
    """
    return a + b


def strands_add() -> Any:
    from strands import tool

    return tool(add)


def agents_add() -> Any:
    from agents import function_tool

    return function_tool(add)


def _split(prompt: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    system = next((m["content"] for m in prompt if m.get("role") == "system"), None)
    return system, [m for m in prompt if m.get("role") != "system"]


class StrandsSource(SampleSource):
    def __init__(self, agent: Any) -> None:
        self.agent = agent

    async def get_sample(self, name: str | None = None) -> RolloutSample:
        from strands.models.litellm import LiteLLMModel

        messages = list(self.agent.messages)
        return RolloutSample(id=name or "strands", messages=messages,
                             trajectory_messages=LiteLLMModel.format_request_messages(messages))


class StrandsCalcWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    """A Strands agent with the ``add`` tool found in the workflow config (``config.tools``)."""

    async def run(self, ctx: Any) -> None:
        from strands import Agent
        from strands.models.litellm import LiteLLMModel

        rollout = get_rollout_context()
        system, messages = _split(ctx.prompt)
        model = LiteLLMModel(
            client_args={"api_base": rollout.chat_completions_url, "api_key": rollout.api_key,
                         "extra_headers": {"x-sample-id": "strands", "x-rollout-id": rollout.rollout_id}},
            model_id="openai/osmosis-rollout",
            params={"temperature": 0.0, "max_tokens": 128},
        )
        agent = Agent(model=model, tools=list(ctx.config.tools), system_prompt=system, callback_handler=None,
                      messages=[{"role": m["role"], "content": [{"text": m["content"]}]} for m in messages],
                      retry_strategy=None)
        rollout.register_sample_source("strands", StrandsSource(agent))
        await agent.invoke_async()


class SessionSource(SampleSource):
    def __init__(self, items: list[Any], system: str | None) -> None:
        self.items = items
        self.system = system

    async def get_sample(self, name: str | None = None) -> RolloutSample:
        from agents.models.chatcmpl_converter import Converter

        chat = [dict(m) for m in Converter.items_to_messages(self.items)]
        if self.system:
            chat.insert(0, {"role": "system", "content": self.system})
        return RolloutSample(id=name or "agents", messages=list(self.items), trajectory_messages=chat)


class AgentsCalcWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    """An OpenAI Agents agent with the ``add`` FunctionTool found in the workflow config (``config.tools``)."""

    async def run(self, ctx: Any) -> None:
        from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
        from agents.memory import SQLiteSession  # noqa: F401  (import check: the session API exists)
        from openai import AsyncOpenAI

        rollout = get_rollout_context()
        system, messages = _split(ctx.prompt)
        client = AsyncOpenAI(base_url=rollout.chat_completions_url, api_key=rollout.api_key, max_retries=0,
                             default_headers={"x-sample-id": "agents", "x-rollout-id": rollout.rollout_id})
        agent = Agent(name="calc", instructions=system, tools=list(ctx.config.tools),
                      model=OpenAIChatCompletionsModel(model="osmosis-rollout", openai_client=client))
        items: list[Any] = []
        rollout.register_sample_source("agents", SessionSource(items, system))
        try:
            if ctx.config.model_extra.get("stream"):
                result = Runner.run_streamed(agent, messages, max_turns=6, run_config=RunConfig(tracing_disabled=True))
                async for _ in result.stream_events():
                    pass
            else:
                result = await Runner.run(agent, messages, max_turns=6, run_config=RunConfig(tracing_disabled=True))
            items.extend(result.to_input_list())
        finally:
            await client.close()
