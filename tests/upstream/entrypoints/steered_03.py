"""A 0.3-API entrypoint that runs unchanged on the real osmosis-ai 0.3.8 and on osmosis-compat (the differential
conformance tests serve this one file with both). ``metadata`` steers the workflow: ``sleep`` (seconds), ``fail``,
``chat`` (one model call through the rollout's URL and key), ``reward`` (the grader's), ``grader_sleep``.
Server settings come from the environment: ``STEERED_WAIT``, ``STEERED_LEASE``, ``STEERED_RETENTION``.
"""

import asyncio
import os

import httpx

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    ConcurrencyConfig,
    Grader,
    LocalBackend,
    RolloutSample,
    SampleSource,
    get_rollout_context,
)
from osmosis_ai.rollout.server import create_rollout_server


class ListSource(SampleSource):
    def __init__(self, messages):
        self.messages = messages

    async def get_sample(self):
        return RolloutSample(messages=list(self.messages))


class SteeredWorkflow(AgentWorkflow):
    async def run(self, ctx):
        rollout = get_rollout_context()
        meta = ctx.metadata or {}
        messages = [dict(m) for m in ctx.prompt]
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
        if meta.get("fail"):
            raise RuntimeError("asked to fail")
        rollout.set_sample_source(ListSource(messages + [{"role": "assistant", "content": "The answer is 4."}]))


class SteeredGrader(Grader):
    async def grade(self, ctx):
        meta = ctx.metadata or {}
        if meta.get("grader_sleep"):
            await asyncio.sleep(float(meta["grader_sleep"]))
        ctx.set_reward(float(meta.get("reward", 1.0)))


config = AgentWorkflowConfig(name="steered", concurrency=ConcurrencyConfig(max_concurrent=None))
backend = LocalBackend(workflow=SteeredWorkflow, workflow_config=config, grader=SteeredGrader)
app = create_rollout_server(
    backend=backend,
    configure_logging=False,
    result_wait_timeout_sec=float(os.environ.get("STEERED_WAIT", "30")),
    polling_lease_timeout_sec=float(os.environ.get("STEERED_LEASE", "120")),
    result_retention_sec=float(os.environ.get("STEERED_RETENTION", "900")),
)
