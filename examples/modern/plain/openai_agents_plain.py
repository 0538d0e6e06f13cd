"""A plain OpenAI Agents SDK calculator agent — the code a team has *before* adopting Osmosis.

It runs against any OpenAI-compatible chat-completions endpoint, configured the usual way::

    export OPENAI_API_KEY=sk-...                       # required
    export OPENAI_BASE_URL=http://localhost:8000/v1    # optional: a vLLM / proxy / other compatible server
    python openai_agents_plain.py "What is 12 + 30?"

``osmosis-migrate openai_agents_plain.py`` turns it into an ``AgentWorkflow`` (see ``docs/migrate.md`` and
``examples/modern/README.md``, "Plain examples").
"""

import asyncio
import sys

from agents import (
    Agent,
    ModelSettings,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

INSTRUCTIONS = "You are a calculator. Use the add and multiply tools for every arithmetic step, then state the result."


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def use_openai_compatible_endpoint() -> None:
    """Send the SDK's model calls to OPENAI_BASE_URL (default: api.openai.com) with OPENAI_API_KEY, over the
    chat-completions API that every OpenAI-compatible server speaks."""
    set_default_openai_client(AsyncOpenAI(), use_for_tracing=False)  # AsyncOpenAI() reads both variables
    set_default_openai_api("chat_completions")
    set_tracing_disabled(True)


async def solve(prompt: str) -> str:
    """Answer one arithmetic question; returns the agent's final answer."""
    agent = Agent(
        name="calculator",
        instructions=INSTRUCTIONS,
        model="gpt-4o-mini",
        model_settings=ModelSettings(temperature=0.0, max_tokens=256),
        tools=[add, multiply],
    )
    result = await Runner.run(agent, prompt)
    return str(result.final_output).strip()


if __name__ == "__main__":
    use_openai_compatible_endpoint()
    print(asyncio.run(solve(" ".join(sys.argv[1:]) or "What is 12 + 30?")))
