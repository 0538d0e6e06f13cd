"""Workflows and loops used by the adapter tests (framework-free ones; Strands/Agents ones live in examples)."""

from __future__ import annotations

import json
from typing import Any

from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowConfig,
    Grader,
    RolloutSample,
    SampleSource,
    get_rollout_context,
)

ADD_TOOL: dict[str, Any] = {
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


class MessagesSource(SampleSource):
    """A sample whose messages are a list the workflow keeps appending to."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages

    async def get_sample(self, name: str | None = None) -> RolloutSample:
        return RolloutSample(id=name or "main", messages=list(self.messages))


class ClientConfig(AgentWorkflowConfig):
    stream: bool = True
    parts: bool = False  # send list-of-parts content, like Strands
    fail: str | None = None


class OpenAIClientWorkflow(AgentWorkflow[ClientConfig]):
    """Talks to ``chat_completions_url`` with the plain ``openai`` client, executing ``add`` itself."""

    async def run(self, ctx: Any) -> None:
        from openai import AsyncOpenAI

        config = ctx.config or ClientConfig(name="client")
        if config.fail == "raise":
            raise RuntimeError("workflow boom")
        rollout = get_rollout_context()
        messages = [dict(m) for m in ctx.prompt]
        if config.parts:
            messages = [{**m, "content": [{"type": "text", "text": m["content"]}]} for m in messages]
        if config.fail != "no-sample":
            rollout.register_sample_source("main", MessagesSource(messages))
        client = AsyncOpenAI(base_url=rollout.chat_completions_url, api_key=rollout.api_key, max_retries=0)
        try:
            for _ in range(6):
                message = await self._turn(client, messages, config.stream)
                messages.append(message)
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    result = args["a"] + args["b"]
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
        finally:
            await client.close()

    async def _turn(self, client: Any, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
        kwargs = {"model": "osmosis-rollout", "messages": messages, "tools": [ADD_TOOL], "temperature": 0.5}
        if not stream:
            reply = await client.chat.completions.create(**kwargs)
            return reply.choices[0].message.model_dump(exclude_none=True)
        chunks = await client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
        content, calls = "", {}
        async for chunk in chunks:
            for choice in chunk.choices:
                content += choice.delta.content or ""
                for call in choice.delta.tool_calls or []:
                    slot = calls.setdefault(call.index, {"id": None, "type": "function",
                                                         "function": {"name": "", "arguments": ""}})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["function"]["name"] += call.function.name or ""
                        slot["function"]["arguments"] += call.function.arguments or ""
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return message


class LabelInAnswerGrader(Grader):
    """1.0 when the label appears in the last message's text, else 0.0."""

    async def grade(self, ctx: Any) -> None:
        for sample_id, sample in ctx.samples.items():
            content = sample.messages[-1].get("content") if sample.messages else None
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label and ctx.label in (content or "") else 0.0)


class BrokenGrader(Grader):
    async def grade(self, ctx: Any) -> None:
        raise ValueError("grader boom")


class TwoSamplesWorkflow(AgentWorkflow):
    """Registers two samples without calling the model (a legacy rollout can carry only the first)."""

    async def run(self, ctx: Any) -> None:
        rollout = get_rollout_context()
        rollout.register_sample_source("first", MessagesSource([*ctx.prompt, {"role": "assistant", "content": "1"}]))
        rollout.register_sample_source("second", MessagesSource([*ctx.prompt, {"role": "assistant", "content": "2"}]))
