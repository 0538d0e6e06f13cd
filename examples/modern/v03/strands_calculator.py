"""A Strands calculator workflow + grader written for osmosis-ai 0.3 (today's API), with its entrypoint.

0.3 style: one sample per rollout (``ctx.sample`` + ``ctx.set_reward``), ``create_rollout_server`` from
``osmosis_ai.rollout.server``. The same file runs on the real osmosis-ai 0.3.8 and, unchanged, on osmosis-compat;
served either way it answers today's polling controller (``POST /rollout`` → 202, ``GET /rollout/{id}/result``).

    python strands_calculator.py                      (0.0.0.0:$_OSMOSIS_ROLLOUT_PORT, default 8000)
    uvicorn strands_calculator:app --port 9000
    osmosis-compat serve -m strands_calculator.py
"""

import os

from strands import tool

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, Grader, GraderContext, LocalBackend
from osmosis_ai.rollout.integrations.agents.strands import OsmosisRolloutModel, OsmosisStrandsAgent
from osmosis_ai.rollout.server import create_rollout_server


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
            model=OsmosisRolloutModel(params={"temperature": 1.0}),
            tools=[add, multiply],
            messages=ctx.prompt,
            callback_handler=None,
        )
        await agent.invoke_async()


def last_text(messages) -> str:
    """The last assistant text of a Strands conversation (content blocks) or a chat one (strings)."""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        content = message.get("content", "")
        if isinstance(content, str):
            return content
        for block in content or []:
            if isinstance(block, dict) and block.get("text"):
                return block["text"]
    return ""


class StrandsCalculatorGrader(Grader):
    async def grade(self, ctx: GraderContext) -> None:
        answer = last_text(ctx.sample.messages)
        ctx.set_reward(1.0 if ctx.label and ctx.label.strip() in answer else 0.0)


backend = LocalBackend(workflow=StrandsCalculatorWorkflow, grader=StrandsCalculatorGrader)
app = create_rollout_server(backend=backend)

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", "8000")))
