"""Framework-free workflows and graders for the protocol tests, steered by the request's ``metadata``.

The workflow calls the controller's chat endpoint with plain httpx (as an integration would: bearer key,
``x-rollout-id`` / ``x-sample-id``) and registers a custom :class:`SampleSource` holding the conversation.
``metadata["mode"]`` picks a behaviour; the grader reads ``metadata["grader"]``.
"""

from __future__ import annotations

import asyncio
import datetime
import threading
from typing import Any

from osmosis_compat.runtime.http import ClientSettings, get_client
from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    Grader,
    GraderConfig,
    GraderContext,
    RolloutSample,
    SampleSource,
    get_rollout_context,
    last_assistant_text,
)

SAMPLE = "echo"


class Gate:
    """Holds workflows until the test releases them (the workflow runs in the server's thread)."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.entered = threading.Event()
        self.runs = 0
        self.grades = 0

    def reset(self) -> None:
        self.released.clear()
        self.entered.clear()
        self.runs = 0
        self.grades = 0

    async def wait(self) -> None:
        self.entered.set()
        while not self.released.is_set():
            await asyncio.sleep(0.005)


GATE = Gate()


class ConversationSource(SampleSource):
    """0.2.x-style source: the sample is whatever list the workflow filled."""

    def __init__(self, messages: list[dict[str, Any]], **extra: Any) -> None:
        self.messages = messages
        self.extra = extra

    async def get_sample(self, name: str) -> RolloutSample:
        return RolloutSample(id=name, messages=self.messages, **self.extra)


class SingleSampleSource(SampleSource):
    """0.3-style source: ``get_sample()`` takes no name."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages

    async def get_sample(self) -> RolloutSample:  # type: ignore[override]
        return RolloutSample(id="ignored", messages=self.messages)


class Agent:
    """What ``register_agent`` (0.2.18) wrapped: an object with ``.messages``."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages


async def ask_model(messages: list[dict[str, Any]], sample_id: str) -> dict[str, Any]:
    """One non-streaming chat call through the active RolloutContext, like an integration makes."""
    rollout = get_rollout_context()
    assert rollout is not None, "workflow runs without a RolloutContext"
    headers = {"x-rollout-id": rollout.rollout_id, "x-sample-id": sample_id}
    if rollout.api_key:
        headers["Authorization"] = f"Bearer {rollout.api_key}"
    client = get_client(ClientSettings(timeout_seconds=10.0))  # the runtime's pool: no TLS setup per call
    response = await client.post(
        f"{rollout.chat_completions_url}/chat/completions",
        json={"model": "osmosis-rollout", "messages": messages},
        headers=headers,
    )
    response.raise_for_status()
    return response.json()["choices"][0]["message"]


class EchoWorkflow(AgentWorkflow[AgentWorkflowConfig]):
    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        GATE.runs += 1
        metadata = ctx.metadata or {}
        mode = metadata.get("mode", "chat")
        rollout = get_rollout_context()
        assert rollout is not None
        conversation = [dict(m) for m in ctx.prompt]
        if mode == "raise":
            raise RuntimeError("workflow boom")
        if mode == "raise_value":
            raise ValueError("bad workflow input")
        if mode == "block":
            await GATE.wait()
        if mode == "no_sample":
            return "ignored return value"
        if mode == "return_list":
            return conversation + [{"role": "assistant", "content": "returned"}]
        if mode == "set_sample_source":
            rollout.set_sample_source(SingleSampleSource(conversation + [{"role": "assistant", "content": "single"}]))
            return None
        if mode == "register_agent":
            rollout.register_agent("legacy-agent", Agent(conversation + [{"role": "assistant", "content": "agent"}]))
            return None
        if mode == "two_samples":
            rollout.register_sample_source("a", ConversationSource(conversation + [{"role": "assistant", "content": "A"}]))
            rollout.register_sample_source("b", ConversationSource(conversation + [{"role": "assistant", "content": "B"}]))
            return None
        if mode == "dup_source":
            rollout.register_sample_source(SAMPLE, ConversationSource(conversation))
            rollout.register_sample_source(SAMPLE, ConversationSource(conversation))
            return None
        extra: dict[str, Any] = {}
        if mode == "bytes":
            conversation.append({"role": "assistant", "content": [{"image": {"source": {"bytes": b"\x89PNG"}}}]})
        if mode == "datetime_metric":
            extra["metrics"] = {"finished": datetime.datetime(2026, 1, 1)}
        rollout.register_sample_source(SAMPLE, ConversationSource(conversation, **extra))
        if mode == "chat":
            conversation.append(await ask_model(ctx.prompt, SAMPLE))
        return "ignored"


class LabelGrader(Grader):
    """Reward 1.0 when the label appears in the last assistant text; ``metadata["grader"]`` picks a failure."""

    async def grade(self, ctx: GraderContext) -> None:
        GATE.grades += 1
        mode = (ctx.metadata or {}).get("grader", "ok")
        if mode == "raise":
            raise RuntimeError("grader boom")
        if mode == "skip_reward":
            return
        if mode == "block":
            await GATE.wait()
        if mode == "nan":
            for sample_id in ctx.samples:
                ctx.set_sample_reward(sample_id, float("nan"))
            return
        if mode == "single":
            sample = ctx.sample
            assert sample is not None
            ctx.set_reward(1.0 if last_assistant_text(sample.messages) else 0.0)
            return
        for sample_id, sample in ctx.get_samples().items():
            text = last_assistant_text(sample.messages)
            ctx.set_sample_reward(sample_id, 1.0 if ctx.label and ctx.label in text else 0.0)


echo_config = AgentWorkflowConfig(name="echo-workflow")
grader_config = GraderConfig(name="label-grader")
