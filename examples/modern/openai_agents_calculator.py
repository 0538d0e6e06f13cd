"""An OpenAI Agents calculator workflow + grader for the AgentWorkflow API (osmosis-ai 0.2.x style), with its
entrypoint.

The agent gets ``add`` and ``multiply`` function tools; an ``OsmosisMemorySession`` records the run (its name is
the sample id) and the grader rewards 1.0 when the last assistant item contains the row's ``ground_truth``.
Nothing here imports osmosis-compat: with osmosis-compat installed, the ``osmosis_ai`` imports resolve to it.

Serve it (from this directory) with any of:

    python openai_agents_calculator.py                (0.0.0.0:$_OSMOSIS_ROLLOUT_PORT, default 8000)
    uvicorn openai_agents_calculator:app --port 9000
    osmosis-compat serve -m openai_agents_calculator.py
"""

import os

from agents import ModelSettings, Runner, function_tool

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowContext,
    Grader,
    GraderContext,
    LocalBackend,
    create_rollout_server,
)
from osmosis_ai.rollout.integrations.agents.openai_agents import (
    OsmosisAgent,
    OsmosisMemorySession,
    OsmosisRolloutModel,
)


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
        session = OsmosisMemorySession(name="calculator")
        await Runner.run(agent, ctx.prompt, session=session)


def _last_text(sample) -> str:
    for item in reversed(sample.messages):
        if item.get("role") != "assistant":
            continue
        content = item.get("content", "")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    text = block.get("text") or block.get("content")
                    if text:
                        return text
    return ""


class OpenAIAgentsCalculatorGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.samples.items():
            answer = _last_text(sample)
            reward = 1.0 if ctx.label and ctx.label.strip() in answer else 0.0
            ctx.set_sample_reward(sample_id, reward)


backend = LocalBackend(workflow=OpenAIAgentsCalculatorWorkflow, grader=OpenAIAgentsCalculatorGrader)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", "8000")))
