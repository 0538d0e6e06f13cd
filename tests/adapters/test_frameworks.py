"""Strands and OpenAI Agents workflows through workflow_as_loop, at the HTTP level: their own model calls
(streamed SSE by Strands/LiteLLM and Agents run_streamed, JSON by Agents Runner.run, tools in the body) cross the
runtime bridge to FakeTrainGate as legacy calls; tools declared at init come from the workflow config. Native
(workflow protocol) and adapted (legacy protocol) runs give the same conversation and reward."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import osmosis_compat.runtime.bridge as bridge_module
from osmosis_compat.adapters import to_chat_messages, workflow_as_loop
from osmosis_compat.runtime.bridge import get_bridge
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.testing import FakeTrainGate, FakeWorkflowController, serve_app_async
from osmosis_compat.workflow import AgentWorkflowConfig, LocalBackend
from tests.adapters.framework_workflows import AgentsCalcWorkflow, StrandsCalcWorkflow, agents_add, strands_add
from tests.adapters.workflows import LabelInAnswerGrader

PROMPT = [{"role": "system", "content": "You add numbers with the add tool."},
          {"role": "user", "content": "What is 12 + 30?"}]
CASES = {
    "strands-stream": (StrandsCalcWorkflow, strands_add, {}, True),
    "agents-json": (AgentsCalcWorkflow, agents_add, {}, False),
    "agents-stream": (AgentsCalcWorkflow, agents_add, {"stream": True}, True),
}


def _config(case: str) -> tuple[Any, AgentWorkflowConfig, bool]:
    workflow, tool, extra, streams = CASES[case]
    return workflow, AgentWorkflowConfig(name=case, tools=[tool()], **extra), streams


def _comparable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in to_chat_messages(copy.deepcopy(messages)):
        message = {k: v for k, v in message.items() if v is not None}
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        out.append(message)
    return out


@pytest.mark.parametrize("case", list(CASES))
async def test_framework_workflow_served_to_traingate(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    streamed: list[int] = []
    encode = bridge_module.encode_sse
    monkeypatch.setattr(bridge_module, "encode_sse", lambda chunks: streamed.append(1) or encode(chunks))
    workflow, config, streams = _config(case)
    loop = workflow_as_loop(workflow, grader=LabelInAnswerGrader, workflow_config=config)
    async with FakeTrainGate().serve_async() as gate, await serve_app_async(create_app(loop)) as server:
        record = await gate.run_rollout(server.url, rollout_id=f"{case}-1", messages=PROMPT,
                                        metadata={"ground_truth": "42"}, timeout=30)
        # these workflows bring their own HTTP clients, so their calls reach the bridge over loopback TCP
        bridge = await get_bridge()
        assert (bridge.tcp_requests, bridge.in_process_requests) == (2, 0)
    assert record.tools[0]["function"]["name"] == "add"
    assert record.tools[0]["function"]["parameters"]["required"] == ["a", "b"]
    assert record.status == "COMPLETED", record.callback
    assert record.reward == 1.0
    assert record.final_messages[-1] == {"role": "assistant", "content": "The answer is 42."}
    assert [m["role"] for m in record.final_messages][-3:] == ["assistant", "tool", "assistant"]
    assert len(record.chat_requests) == 2
    for request in record.chat_requests:
        assert set(request.body) == {"model", "messages", "rollout_id", "temperature", "top_p", "max_tokens",
                                     "logprobs"}
        assert all(isinstance(m.get("content"), (str, type(None))) for m in request.body["messages"])
    assert bool(streamed) == streams


@pytest.mark.parametrize("case", list(CASES))
async def test_framework_workflow_native_vs_adapted(case: str) -> None:
    workflow, config, _ = _config(case)
    backend = LocalBackend(workflow=workflow, workflow_config=config, grader=LabelInAnswerGrader)
    async with FakeWorkflowController().serve_async() as controller, await serve_app_async(
        create_rollout_server(backend=backend, configure_logging=False)
    ) as server:
        native = await controller.run_rollout(server.url, rollout_id=f"{case}-n", initial_messages=PROMPT,
                                              label="42", timeout=30)
    (sample_id, native_sample), = native.grader["samples"].items()
    loop = workflow_as_loop(workflow, grader=LabelInAnswerGrader, workflow_config=config)
    async with FakeTrainGate().serve_async() as gate, await serve_app_async(create_app(loop)) as server:
        adapted = await gate.run_rollout(server.url, rollout_id=f"{case}-a", messages=PROMPT,
                                         metadata={"ground_truth": "42"}, timeout=30)
    assert native.rewards[sample_id] == adapted.reward == 1.0
    # the adapted conversation is the native sample's chat-shaped trajectory
    native_chat = [m for m in native.chat_requests[-1].body["messages"]]
    assert _comparable(adapted.final_messages)[-3:-1] == _comparable(native_chat)[-2:]
    assert _comparable(adapted.chat_requests[-1].body["messages"]) == _comparable(native_chat)
