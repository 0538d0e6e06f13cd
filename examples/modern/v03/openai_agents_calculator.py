"""An OpenAI Agents calculator workflow + grader written for osmosis-ai 0.3 (today's API), with its entrypoint.

0.3 style: ``OsmosisMemorySession()`` without a name (one session = the rollout's one sample), ``ctx.sample`` +
``ctx.set_reward``, ``create_rollout_server`` from ``osmosis_ai.rollout.server``. Runs unchanged on the real
osmosis-ai 0.3.8 and on osmosis-compat.

    python openai_agents_calculator.py                (0.0.0.0:$_OSMOSIS_ROLLOUT_PORT, default 8000)
    osmosis-compat serve -m openai_agents_calculator.py
"""

import os

from agents import ModelSettings, Runner, function_tool

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, Grader, GraderContext, LocalBackend
from osmosis_ai.rollout.integrations.agents.openai_agents import (
    OsmosisAgent,
    OsmosisMemorySession,
    OsmosisRolloutModel,
)
from osmosis_ai.rollout.server import create_rollout_server


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class OpenAIAgentsCalculatorWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> None:
        agent = OsmosisAgent(
            name="calculator",
            instructions="Use the add and multiply tools for every arithmetic step.",
            model=OsmosisRolloutModel(),
            model_settings=ModelSettings(temperature=1.0, max_tokens=4096),
            tools=[add, multiply],
        )
        await Runner.run(agent, ctx.prompt, session=OsmosisMemorySession())


def last_text(items) -> str:
    """The last assistant text of a Responses-API item list (``output_text`` blocks) or a chat conversation."""
    for item in reversed(items):
        if item.get("role") != "assistant":
            continue
        content = item.get("content", "")
        if isinstance(content, str):
            return content
        for block in content or []:
            if isinstance(block, dict) and (block.get("text") or block.get("content")):
                return block.get("text") or block.get("content")
    return ""


class OpenAIAgentsCalculatorGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        answer = last_text(ctx.sample.messages)
        ctx.set_reward(1.0 if ctx.label and ctx.label.strip() in answer else 0.0)


backend = LocalBackend(workflow=OpenAIAgentsCalculatorWorkflow, grader=OpenAIAgentsCalculatorGrader)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", "8000")))
