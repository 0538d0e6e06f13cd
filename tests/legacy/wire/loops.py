"""Small legacy agent loops used by the wire tests (written exactly as users write them)."""

from __future__ import annotations

import asyncio
from typing import Any

from osmosis_ai.rollout import RolloutAgentLoop, RolloutContext, RolloutRequest, RolloutResult
from osmosis_ai.rollout.tools import create_tool_result, execute_tool_calls, get_tool_call_info

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}


async def _run_tool(call: dict[str, Any]) -> dict[str, Any]:
    call_id, name, args = get_tool_call_info(call)
    return create_tool_result(call_id, str(args["a"] + args["b"]))


class ToolLoop(RolloutAgentLoop):
    name = "tool_loop"
    tools: list[Any] = [ADD_TOOL]

    def get_tools(self, request: RolloutRequest) -> list:
        return self.tools

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        messages = list(ctx.request.messages)
        for _ in range(ctx.request.max_turns):
            result = await ctx.chat(messages, **ctx.request.completion_params)
            messages.append(result.message)
            if not result.has_tool_calls:
                break
            messages.extend(await execute_tool_calls(result.tool_calls, _run_tool))
            ctx.record_tool_call(latency_ms=1.0)
        truth = ctx.request.metadata.get("ground_truth")
        reward = None if truth is None else float(str(truth) in (messages[-1].get("content") or ""))
        return ctx.complete(messages, reward=reward)


class RaisingLoop(ToolLoop):
    name = "raising"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        raise RuntimeError("boom")


class JunkLoop(ToolLoop):
    name = "junk"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        return None  # type: ignore[return-value]


class WrongStatusLoop(ToolLoop):
    name = "wrong_status"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        result = ctx.complete([])
        result.status = "completed"
        return result


class ErrorLoop(ToolLoop):
    name = "error_loop"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        return ctx.error("could not do it", final_messages=[{"role": "assistant", "content": "sorry"}])


class SlowLoop(ToolLoop):
    name = "slow"
    delay = 60.0

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        await asyncio.sleep(self.delay)
        return ctx.complete([])


class KwargsLoop(ToolLoop):
    """Passes kwargs the legacy chat body cannot carry."""

    name = "kwargs_loop"

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        result = await ctx.chat(list(ctx.request.messages), seed=7, tools=[ADD_TOOL], stop="END", temperature=0.5)
        return ctx.complete(list(ctx.request.messages) + [result.message])


class RaisingTools(ToolLoop):
    name = "raising_tools"
    runs = 0

    def get_tools(self, request: RolloutRequest) -> list:
        raise RuntimeError("tool registry offline")

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        type(self).runs += 1
        return ctx.complete([])


class AsyncTools(ToolLoop):
    name = "async_tools"

    async def get_tools(self, request: RolloutRequest) -> list:  # type: ignore[override]
        await asyncio.sleep(0)
        return [ADD_TOOL]
