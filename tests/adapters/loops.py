"""Legacy agent loops used by the adapter tests."""

from __future__ import annotations

from typing import Any

from osmosis_compat.legacy.base import RolloutAgentLoop, RolloutContext, RolloutResult
from osmosis_compat.legacy.exceptions import OsmosisServerError, OsmosisTimeoutError

from tests.adapters.workflows import ADD_TOOL


class ScriptLoop(RolloutAgentLoop):
    """One chat turn, then whatever ``mode`` (from metadata) asks for."""

    name = "script"

    def get_tools(self, request: Any) -> list:
        return [ADD_TOOL]

    async def run(self, ctx: RolloutContext) -> Any:
        mode = ctx.request.metadata.get("mode", "complete")
        if mode == "raise":
            raise RuntimeError("loop boom")
        if mode == "raise-value":
            raise ValueError("bad value in loop")
        if mode == "timeout":
            raise OsmosisTimeoutError("model call timed out")
        if mode == "none":
            return None
        if mode == "bad-status":
            return RolloutResult(status="completed", final_messages=[], finish_reason="stop")
        messages = list(ctx.request.messages)
        result = await ctx.chat(messages, **ctx.request.completion_params)
        messages.append(result.message)
        if mode == "error":
            return ctx.error("loop gave up", messages)
        if mode == "no-reward":
            return ctx.complete(messages)
        return ctx.complete(messages, finish_reason="stop", reward=ctx.request.metadata.get("reward", 0.5))


class CatchingLoop(RolloutAgentLoop):
    """Catches the controller's 5xx itself and reports ctx.error (an agent-declared failure)."""

    name = "catching"

    def get_tools(self, request: Any) -> list:
        return []

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        try:
            await ctx.chat(list(ctx.request.messages))
        except OsmosisServerError as exc:
            return ctx.error(f"controller failed: {exc.status_code}")
        return ctx.complete(list(ctx.request.messages), reward=1.0)


class AsyncToolsLoop(ScriptLoop):
    name = "async-tools"

    async def get_tools(self, request: Any) -> list:  # type: ignore[override]
        return [ADD_TOOL]


class BadToolsLoop(ScriptLoop):
    name = "bad-tools"

    def get_tools(self, request: Any) -> list:
        return [{"type": "function", "function": {"name": "x"}}]  # no description
