"""Workflows for the integration tests, steered by ``metadata["mode"]`` so one served backend covers many cases.

A shared grader rewards each sample 1.0 when the request label appears in its last assistant text.
"""

from __future__ import annotations

from typing import Any

from agents import ModelSettings, Runner, function_tool
from strands import tool

from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    Grader,
    GraderContext,
    get_rollout_context,
    last_assistant_text,
)
from osmosis_compat.workflow.integrations import openai_agents as oa
from osmosis_compat.workflow.integrations import strands as st


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a * b


class StrandsFlowConfig(AgentWorkflowConfig):
    """The seed's config pattern: the placeholder model and tools live in the (deep-copied) workflow config."""

    name: str = "strands-flows"
    model: Any = st.OsmosisRolloutModel(params={"temperature": 0.5, "max_tokens": 256})
    tools: Any = [add, multiply]


strands_flow_config = StrandsFlowConfig()


def _user_messages(ctx: AgentWorkflowContext) -> list[dict[str, Any]]:
    return [m for m in ctx.prompt if m.get("role") != "system"]


class StrandsFlows(AgentWorkflow[StrandsFlowConfig]):
    async def run(self, ctx: AgentWorkflowContext[StrandsFlowConfig]) -> None:
        config = ctx.config or StrandsFlowConfig()
        mode = (ctx.metadata or {}).get("mode", "stream")

        def agent(name: str | None = "calc", **kwargs: Any) -> st.OsmosisStrandsAgent:
            kwargs.setdefault("model", config.model)
            if name is not None:
                kwargs["name"] = name
            return st.OsmosisStrandsAgent(
                tools=config.tools, messages=ctx.prompt, callback_handler=None, retry_strategy=None, **kwargs
            )

        if mode == "stream":
            await agent().invoke_async()
        elif mode == "no_stream":
            await agent(model=st.OsmosisRolloutModel(params={"temperature": 0.5}, stream=False)).invoke_async()
        elif mode == "two_agents":
            await agent("planner").invoke_async()
            await agent("solver").invoke_async()
        elif mode == "duplicate":
            agent("calc")
            agent("calc")
        elif mode == "agent_id":
            await agent(None, agent_id="by-id").invoke_async()
        elif mode == "anonymous":
            await agent(None).invoke_async()
        elif mode == "bound_model":
            # A model that is not the placeholder: a plain Strands agent, no sample registered.
            ctx_ = get_rollout_context()
            await agent(model=st.OsmosisRolloutModel().for_sample("manual", ctx_)).invoke_async()
        else:
            raise ValueError(f"unknown mode {mode!r}")


@function_tool
def oa_add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
def oa_multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class AgentsFlows(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> None:
        mode = (ctx.metadata or {}).get("mode", "run")

        def agent(**settings: Any) -> oa.OsmosisAgent:
            return oa.OsmosisAgent(
                name="calc",
                instructions="Use the tools.",
                model=oa.OsmosisRolloutModel(),
                model_settings=ModelSettings(temperature=0.5, max_tokens=256, **settings),
                tools=[oa_add, oa_multiply],
            )

        if mode == "run":
            await Runner.run(agent(), ctx.prompt, session=oa.OsmosisMemorySession(name="calc"))
        elif mode == "streamed":
            result = Runner.run_streamed(agent(), ctx.prompt, session=oa.OsmosisMemorySession(name="calc"))
            async for _ in result.stream_events():
                pass
        elif mode == "two_sessions":
            await Runner.run(agent(), ctx.prompt, session=oa.OsmosisMemorySession(name="planner"))
            await Runner.run(agent(), ctx.prompt, session=oa.OsmosisMemorySession(name="executor"))
        elif mode == "two_turns":
            session = oa.OsmosisMemorySession(name="calc")
            await Runner.run(agent(), ctx.prompt, session=session)
            await Runner.run(agent(), "What is 1 + 1?", session=session)
        elif mode == "duplicate":
            oa.OsmosisMemorySession(name="calc")
            oa.OsmosisMemorySession(name="calc")
        elif mode == "no_session":
            await Runner.run(agent(), ctx.prompt)
        elif mode == "anonymous_session":
            await Runner.run(agent(), ctx.prompt, session=oa.OsmosisMemorySession())
        else:
            raise ValueError(f"unknown mode {mode!r}")


class LabelInAnswerGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.samples.items():
            answer = last_assistant_text(sample.messages)
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label and ctx.label in answer else 0.0)
