"""A framework-free calculator workflow entrypoint (one AgentWorkflow, one Grader, one config), loadable with
``-m tests/server/calc_workflow.py``. It calls the controller's chat endpoint with plain httpx, as an integration
would (bearer key, ``x-rollout-id`` / ``x-sample-id``, tools in every request), and executes the tools itself.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowConfig,
    Grader,
    RolloutSample,
    SampleSource,
    get_rollout_context,
    last_assistant_text,
)


def _tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} two numbers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }


TOOLS = [_tool("add"), _tool("subtract"), _tool("multiply"), _tool("divide")]
OPERATIONS = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
              "multiply": lambda a, b: a * b, "divide": lambda a, b: a / b}


class Conversation(SampleSource):
    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages

    async def get_sample(self, name: str | None = None) -> RolloutSample:
        return RolloutSample(id=name or "calc", messages=list(self.messages))


class CalcWorkflow(AgentWorkflow):
    async def run(self, ctx: Any) -> None:
        rollout = get_rollout_context()
        messages = [dict(m) for m in ctx.prompt]
        if (ctx.metadata or {}).get("fail"):
            raise RuntimeError("workflow asked to fail")
        rollout.register_sample_source("calc", Conversation(messages))
        headers = {"x-rollout-id": rollout.rollout_id, "x-sample-id": "calc"}
        if rollout.api_key:
            headers["Authorization"] = f"Bearer {rollout.api_key}"
        async with httpx.AsyncClient(timeout=10) as client:
            for _ in range(10):
                response = await client.post(
                    rollout.chat_completions_url.rstrip("/") + "/chat/completions",
                    json={"model": "osmosis-rollout", "messages": messages, "tools": TOOLS},
                    headers=headers,
                )
                response.raise_for_status()
                message = response.json()["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    return
                for call in message["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    value = OPERATIONS[call["function"]["name"]](args["a"], args["b"])
                    value = int(value) if float(value).is_integer() else value
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})


class CalcGrader(Grader):
    async def grade(self, ctx: Any) -> None:
        for sample_id, sample in ctx.samples.items():
            answer = last_assistant_text(sample.messages)
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label and ctx.label in answer else 0.0)


config = AgentWorkflowConfig(name="calc-workflow", tools=TOOLS)
