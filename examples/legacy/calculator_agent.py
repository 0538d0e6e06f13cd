"""A tool-using calculator agent written against the legacy osmosis-ai (≤ 0.2.17) API.

Nothing here imports osmosis-compat: with osmosis-compat installed, the ``osmosis_ai`` imports resolve to it.
Serve it with any of:

    osmosis-compat serve -m calculator_agent:agent_loop --local      (from this directory)
    uvicorn calculator_agent:app --port 9000
    python calculator_agent.py
"""

import time
from typing import Any, Dict, List, Optional

from osmosis_ai.rollout import (
    RolloutAgentLoop,
    RolloutContext,
    RolloutRequest,
    RolloutResult,
    create_app,
)
from osmosis_ai.rollout.tools import (
    create_tool_error_result,
    create_tool_result,
    execute_tool_calls,
    get_tool_call_info,
    serialize_tool_result,
)


async def add(a: float, b: float) -> float:
    return a + b


async def subtract(a: float, b: float) -> float:
    return a - b


async def multiply(a: float, b: float) -> float:
    return round(a * b, 4)


async def divide(a: float, b: float) -> float:
    if b == 0:
        raise ValueError("division by zero")
    return round(a / b, 4)


TOOL_REGISTRY = {"add": add, "subtract": subtract, "multiply": multiply, "divide": divide}


def _binary_tool(name: str, description: str) -> Dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "description": "First operand"},
                    "b": {"type": "number", "description": "Second operand"},
                },
                "required": ["a", "b"],
            },
        },
    }


TOOLS = [
    _binary_tool("add", "Add two numbers"),
    _binary_tool("subtract", "Subtract b from a"),
    _binary_tool("multiply", "Multiply two numbers"),
    _binary_tool("divide", "Divide a by b"),
]


def _number(value: float) -> Any:
    return int(value) if float(value).is_integer() else value


async def execute_tool(tool_call: Dict[str, Any]) -> Dict[str, str]:
    """Execute a single tool call."""
    try:
        tool_call_id, name, args = get_tool_call_info(tool_call)
    except Exception as e:
        return create_tool_error_result(tool_call.get("id", "unknown"), str(e))
    tool_fn = TOOL_REGISTRY.get(name)
    if not tool_fn:
        return create_tool_error_result(tool_call_id, f"Unknown tool: {name}")
    try:
        result = await tool_fn(**args)
        return create_tool_result(tool_call_id, serialize_tool_result(_number(result)))
    except Exception as e:
        return create_tool_error_result(tool_call_id, str(e))


def get_last_assistant_content(messages: List[Dict[str, Any]]) -> Optional[str]:
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return message.get("content") or ""
    return None


def compute_reward(messages: List[Dict[str, Any]], metadata: Dict[str, Any]) -> Optional[float]:
    """1.0 when the final answer contains the ground truth, 0.0 otherwise (None without ground truth)."""
    ground_truth = metadata.get("ground_truth")
    if not ground_truth:
        return None
    answer = get_last_assistant_content(messages) or ""
    return 1.0 if str(ground_truth).strip() in answer else 0.0


class CalculatorAgent(RolloutAgentLoop):
    """Calculator agent with add/subtract/multiply/divide tools."""

    name = "calculator"

    def get_tools(self, request: RolloutRequest) -> list:
        return TOOLS

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        messages = list(ctx.request.messages)
        finish_reason = "stop"
        total_tokens = 0

        for turn in range(ctx.request.max_turns):
            ctx.log_event("pre_llm", turn=turn, num_messages=len(messages))
            result = await ctx.chat(messages, **ctx.request.completion_params)
            messages.append(result.message)

            usage = result.usage or {}
            total_tokens += usage.get("completion_tokens", 0)
            if total_tokens >= ctx.request.max_tokens_total:
                finish_reason = "max_tokens"
                break

            if not result.has_tool_calls:
                finish_reason = result.finish_reason or "stop"
                break

            tool_start = time.monotonic()
            tool_results = await execute_tool_calls(result.tool_calls, execute_tool)
            latency_ms = (time.monotonic() - tool_start) * 1000
            for _ in result.tool_calls:
                ctx.record_tool_call(latency_ms=latency_ms / len(result.tool_calls))
            messages.extend(tool_results)
            ctx.log_event("tools_executed", turn=turn, num_tools=len(result.tool_calls))
        else:
            finish_reason = "max_turns"

        reward = compute_reward(messages, ctx.request.metadata)
        return ctx.complete(messages, finish_reason=finish_reason, reward=reward)


agent_loop = CalculatorAgent()
app = create_app(agent_loop)


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=9000)
