"""Agents the CLI tests load with ``-m <this file>:<name>``."""

from __future__ import annotations

from osmosis_compat.legacy import RolloutAgentLoop, RolloutContext, RolloutRequest, RolloutResult


class RaisingLoop(RolloutAgentLoop):
    name = "raising"

    def get_tools(self, request: RolloutRequest) -> list:
        return []

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        raise RuntimeError("the agent broke")


class NoRewardLoop(RaisingLoop):
    name = "no_reward"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        result = await ctx.chat(list(ctx.request.messages))
        return ctx.complete([*ctx.request.messages, result.message])


class SyncRunLoop(RaisingLoop):
    name = "sync_run"

    def run(self, ctx: RolloutContext) -> RolloutResult:  # type: ignore[override]  # invalid on purpose
        return ctx.complete([])


raising_loop = RaisingLoop()
no_reward_loop = NoRewardLoop()
sync_run_loop = SyncRunLoop()
not_an_agent = 42


class BadToolsLoop(RaisingLoop):
    name = "bad_tools"

    def get_tools(self, request: RolloutRequest) -> list:
        raise RuntimeError("no tools today")


class SleepyLoop(RaisingLoop):
    name = "sleepy"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        import asyncio

        await asyncio.sleep(30)
        return ctx.complete([])


bad_tools_loop = BadToolsLoop()
sleepy_loop = SleepyLoop()


class PrintingLoop(RaisingLoop):
    """Prints while it runs (its own debugging output), then answers with one model call."""

    name = "printing"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        print("AGENT SAYS: starting", ctx.request.rollout_id)
        result = await ctx.chat(list(ctx.request.messages))
        print("AGENT SAYS: done")
        return ctx.complete([*ctx.request.messages, result.message], reward=1.0)


class SlowLoop(RaisingLoop):
    """Takes 1.5 s before answering."""

    name = "slow"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        import asyncio

        await asyncio.sleep(1.5)
        return ctx.complete(list(ctx.request.messages), reward=1.0)


printing_loop = PrintingLoop()
slow_loop = SlowLoop()
