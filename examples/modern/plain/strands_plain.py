"""A plain Strands calculator agent — the code a team has *before* adopting Osmosis.

It runs against any OpenAI-compatible endpoint through LiteLLM, configured the usual way::

    export OPENAI_API_KEY=sk-...                       # required
    export OPENAI_BASE_URL=http://localhost:8000/v1    # optional: a vLLM / proxy / other compatible server
    python strands_plain.py "What is 12 + 30?"

``osmosis-migrate strands_plain.py`` turns it into an ``AgentWorkflow`` (see ``docs/migrate.md`` and
``examples/modern/README.md``, "Plain examples").
"""

import asyncio
import sys

from strands import Agent, tool
from strands.models.litellm import LiteLLMModel

SYSTEM_PROMPT = "You are a calculator. Use the add and multiply tools for every arithmetic step, then state the result."


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


# LiteLLM reads OPENAI_API_KEY and OPENAI_BASE_URL (or OPENAI_API_BASE) for "openai/..." models.
model = LiteLLMModel(
    model_id="openai/gpt-4o-mini",
    params={"temperature": 0.0, "max_tokens": 256},
)


async def solve(prompt: str) -> str:
    """Answer one arithmetic question; returns the agent's final answer."""
    agent = Agent(
        name="calculator",
        model=model,
        tools=[add, multiply],
        system_prompt=SYSTEM_PROMPT,
        callback_handler=None,
    )
    result = await agent.invoke_async(prompt)
    return str(result).strip()


if __name__ == "__main__":
    print(asyncio.run(solve(" ".join(sys.argv[1:]) or "What is 12 + 30?")))
