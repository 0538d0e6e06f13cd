"""Controllable agents for the polling-protocol tests, written against the 0.3 API (``osmosis_ai`` names).

``metadata`` steers them: ``sleep`` (seconds before finishing), ``fail`` (raise), ``samples`` (register that many
0.2.x named sources), ``chat`` (make one model call first), ``reward`` (what the grader gives), ``grader_sleep``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowOutput, Grader, RolloutSample, SampleSource, get_rollout_context
from osmosis_ai.rollout.server import create_rollout_server
from osmosis_ai.rollout import AgentWorkflowConfig, ConcurrencyConfig, LocalBackend, RolloutAgentLoop

started: list[str] = []
"""Rollout ids whose workflow started (tests read it to know a run began)."""
cancelled: list[str] = []
"""Rollout ids whose workflow saw CancelledError."""


class ListSource(SampleSource):
    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages

    async def get_sample(self) -> RolloutSample:  # 0.3 shape: no name, no id
        return RolloutSample(messages=list(self.messages))


class SteeredWorkflow(AgentWorkflow):
    async def run(self, ctx: Any) -> Any:
        rollout = get_rollout_context()
        meta = ctx.metadata or {}
        started.append(rollout.rollout_id)
        messages = [dict(m) for m in ctx.prompt]
        try:
            if meta.get("chat"):
                async with httpx.AsyncClient(timeout=10) as client:
                    reply = await client.post(
                        rollout.chat_completions_url.rstrip("/") + "/chat/completions",
                        json={"model": "osmosis-rollout", "messages": messages},
                        headers={"Authorization": f"Bearer {rollout.api_key}"},
                    )
                    reply.raise_for_status()
                    messages.append(reply.json()["choices"][0]["message"])
            if meta.get("sleep"):
                await asyncio.sleep(float(meta["sleep"]))
        except asyncio.CancelledError:
            cancelled.append(rollout.rollout_id)
            raise
        if meta.get("fail"):
            raise RuntimeError("asked to fail")
        count = int(meta.get("samples", 0))
        if count:
            for i in range(count):
                rollout.register_sample_source(f"agent_{i}", ListSource(messages))
            return None
        if meta.get("output"):
            return AgentWorkflowOutput(messages=messages + [{"role": "assistant", "content": "done"}], metrics={"turns": 1.0})
        rollout.set_sample_source(ListSource(messages + [{"role": "assistant", "content": "The answer is 4."}]))
        return None


class SteeredGrader(Grader):
    async def grade(self, ctx: Any) -> None:
        meta = ctx.metadata or {}
        if meta.get("grader_sleep"):
            await asyncio.sleep(float(meta["grader_sleep"]))
        ctx.set_reward(float(meta.get("reward", 1.0)))


def steered_app(*, unlimited: bool = False, **kwargs: Any) -> Any:
    """A fresh 0.3-style server for the steered workflow (``create_rollout_server`` keyword arguments).
    ``unlimited`` lifts LocalBackend's default of 4 concurrent rollouts."""
    config = AgentWorkflowConfig(name="steered", concurrency=ConcurrencyConfig(max_concurrent=None)) if unlimited else None
    backend = LocalBackend(workflow=SteeredWorkflow, workflow_config=config, grader=SteeredGrader)
    return create_rollout_server(backend=backend, configure_logging=False, **kwargs)


class SleepyLoop(RolloutAgentLoop):
    """A legacy loop: one model call (with a tool declared), optional sleep, reward from metadata."""

    name = "sleepy"

    def get_tools(self, request: Any) -> list:
        return [
            {
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
        ]

    async def run(self, ctx: Any) -> Any:
        meta = ctx.request.metadata
        messages = list(ctx.request.messages)
        started.append(ctx.request.rollout_id)
        if meta.get("sleep"):
            try:
                await asyncio.sleep(float(meta["sleep"]))
            except asyncio.CancelledError:
                cancelled.append(ctx.request.rollout_id)
                raise
        result = await ctx.chat(messages)
        messages.append(result.message)
        if meta.get("error"):
            return ctx.error("loop gave up", messages)
        reward = meta.get("reward", 1.0)
        return ctx.complete(messages, reward=None if reward == "none" else reward)
