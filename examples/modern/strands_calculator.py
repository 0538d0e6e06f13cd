"""A Strands calculator workflow + grader for the AgentWorkflow API (osmosis-ai 0.2.x style), with its entrypoint.

The agent gets ``add`` and ``multiply`` tools and the dataset row's prompt (``data/calculator.jsonl``); the grader
rewards 1.0 when the final answer contains the row's ``ground_truth``. Nothing here imports osmosis-compat: with
osmosis-compat installed, the ``osmosis_ai`` imports resolve to it.

Serve it (from this directory) with any of:

    python strands_calculator.py                      (0.0.0.0:$_OSMOSIS_ROLLOUT_PORT, default 8000)
    uvicorn strands_calculator:app --port 9000
    osmosis-compat serve -m strands_calculator.py
"""

import os

from strands import tool

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowContext,
    Grader,
    GraderContext,
    LocalBackend,
    create_rollout_server,
)
from osmosis_ai.rollout.integrations.agents.strands import (
    OsmosisRolloutModel,
    OsmosisStrandsAgent,
)


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


class StrandsCalculatorWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> None:
        agent = OsmosisStrandsAgent(
            name="calculator",
            model=OsmosisRolloutModel(params={"temperature": 1.0}),
            tools=[add, multiply],
            messages=ctx.prompt,
            callback_handler=None,
        )
        await agent.invoke_async()


def _last_text(sample) -> str:
    for message in reversed(sample.messages):
        if message.get("role") != "assistant":
            continue
        content = message.get("content", "")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            text = next((b["text"] for b in content if isinstance(b, dict) and "text" in b), "")
            if text:
                return text
    return ""


class StrandsCalculatorGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.samples.items():
            answer = _last_text(sample)
            reward = 1.0 if ctx.label and ctx.label.strip() in answer else 0.0
            ctx.set_sample_reward(sample_id, reward)


backend = LocalBackend(workflow=StrandsCalculatorWorkflow, grader=StrandsCalculatorGrader)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", "8000")))
