"""A 0.3-API workflow whose tool burns CPU, for bench/scale_out.py: two model calls (the controller's policy asks for
``add``, then answers) and one ``add`` that spends ``$BENCH_TOOL_CPU_MS`` (default 40) of pure-Python CPU, as real
agents do in code execution, retrieval or parsing. The grader awaits ``$BENCH_GRADER_WAIT_MS`` (default 0) before
scoring, as a grader that calls anything does. No framework: plain httpx to the rollout's chat URL."""

import asyncio
import json
import os
import time

import httpx

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowConfig, ConcurrencyConfig, Grader, LocalBackend, RolloutSample, SampleSource, get_rollout_context
from osmosis_ai.rollout.server import create_rollout_server

CPU_MS = float(os.environ.get("BENCH_TOOL_CPU_MS", "40"))
GRADER_WAIT_MS = float(os.environ.get("BENCH_GRADER_WAIT_MS", "0"))
ADD = {"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}
_client: httpx.AsyncClient | None = None


def burn(ms: float) -> None:
    end = time.process_time() + ms / 1000
    x = 0
    while time.process_time() < end:
        for i in range(1000):
            x += i * i


class Conversation(SampleSource):
    def __init__(self, messages):
        self.messages = messages

    async def get_sample(self):
        return RolloutSample(messages=list(self.messages))


class CpuToolWorkflow(AgentWorkflow):
    async def run(self, ctx):
        global _client
        if _client is None:
            _client = httpx.AsyncClient(timeout=30)
        rollout = get_rollout_context()
        messages = [dict(m) for m in ctx.prompt]
        rollout.set_sample_source(Conversation(messages))
        headers = {"Authorization": f"Bearer {rollout.api_key}"}
        for _ in range(4):
            reply = await _client.post(rollout.chat_completions_url.rstrip("/") + "/chat/completions",
                                       json={"model": "osmosis-rollout", "messages": messages, "tools": [ADD]}, headers=headers)
            reply.raise_for_status()
            message = reply.json()["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                return
            for call in message["tool_calls"]:
                args = json.loads(call["function"]["arguments"])
                burn(CPU_MS)
                total = args["a"] + args["b"]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(int(total) if float(total).is_integer() else total)})


class AnswerGrader(Grader):
    async def grade(self, ctx):
        if GRADER_WAIT_MS:
            await asyncio.sleep(GRADER_WAIT_MS / 1000)
        text = ctx.sample.messages[-1].get("content") or ""
        ctx.set_reward(1.0 if ctx.label and ctx.label in text else 0.0)


config = AgentWorkflowConfig(name="cpu-tool", concurrency=ConcurrencyConfig(max_concurrent=None))
backend = LocalBackend(workflow=CpuToolWorkflow, workflow_config=config, grader=AnswerGrader)
app = create_rollout_server(backend=backend, configure_logging=False)
