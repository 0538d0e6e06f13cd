"""Agents served together by the mixed-server tests: legacy loops written as users write them."""

from __future__ import annotations

import asyncio
from typing import Any

from osmosis_compat.legacy import RolloutAgentLoop, RolloutContext, RolloutRequest, RolloutResult


class EchoLoop(RolloutAgentLoop):
    """One model call, no tools; reward 0.5 so its results are told apart from the calculator's."""

    name = "echo"

    def get_tools(self, request: RolloutRequest) -> list:
        return []

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        messages = list(ctx.request.messages)
        result = await ctx.chat(messages)
        messages.append(result.message)
        return ctx.complete(messages, reward=0.5)


class SlowLoop(EchoLoop):
    """Sleeps before answering, to be in flight when the server shuts down."""

    name = "slow"
    delay_s = 0.3

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        await asyncio.sleep(self.delay_s)
        return await super().run(ctx)


def calculator_loop() -> Any:
    """The repository's example legacy loop (examples/legacy/calculator_agent.py)."""
    from osmosis_compat.cli.demo import EXAMPLES_DIR
    from osmosis_compat.cli.loading import load_agent_loop

    return load_agent_loop(str(EXAMPLES_DIR / "legacy" / "calculator_agent.py") + ":agent_loop")


QUESTION = [
    {"role": "system", "content": "You are a calculator."},
    {"role": "user", "content": "What is 12 + 30?"},
]
