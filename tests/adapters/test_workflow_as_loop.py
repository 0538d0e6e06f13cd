"""workflow_as_loop at the HTTP level: a workflow served by the legacy create_app, driven by FakeTrainGate.

The workflow's own OpenAI-compatible calls (streaming or not, tools in the body, list-of-parts content) go
through the runtime bridge and reach TrainGate as legacy non-streaming chat calls with rollout_id in the body.
"""

from __future__ import annotations

from typing import Any

import pytest

from osmosis_compat.adapters import WorkflowAgentLoop, workflow_as_loop
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import FakeTrainGate, serve_app_async
from tests.adapters.workflows import (
    ADD_TOOL,
    BrokenGrader,
    ClientConfig,
    LabelInAnswerGrader,
    OpenAIClientWorkflow,
)

QUESTION = [{"role": "system", "content": "You add."}, {"role": "user", "content": "What is 12 + 30?"}]
LEGACY_BODY_KEYS = {"model", "messages", "rollout_id", "temperature", "top_p", "max_tokens", "logprobs"}


async def _run(loop: WorkflowAgentLoop, *, rollout_id: str = "r-1", metadata: dict[str, Any] | None = None,
               gate: FakeTrainGate | None = None) -> Any:
    gate = gate or FakeTrainGate()
    async with gate.serve_async() as served, await serve_app_async(create_app(loop)) as server:
        return await served.run_rollout(server.url, rollout_id=rollout_id, messages=QUESTION,
                                        metadata={"ground_truth": "42"} if metadata is None else metadata)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_workflow_served_to_traingate(stream: bool) -> None:
    loop = workflow_as_loop(OpenAIClientWorkflow, grader=LabelInAnswerGrader,
                            workflow_config=ClientConfig(name="adder", stream=stream), tools=[ADD_TOOL])
    assert loop.name == "adder"
    record = await _run(loop, rollout_id="r/with/slashes")
    assert record.init_status_code == 202
    assert [t["function"]["name"] for t in record.tools] == ["add"]
    assert record.status == "COMPLETED", record.callback
    assert record.reward == 1.0
    assert [m["role"] for m in record.final_messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert record.final_messages[-1]["content"] == "The answer is 42."
    assert record.callback["metrics"]["num_llm_calls"] == 2
    assert record.callback["metrics"]["num_tool_calls"] == 1
    # what TrainGate saw: legacy bodies, no tools, no stream flag, rollout_id in the body, no x-headers
    assert len(record.chat_requests) == 2
    for request in record.chat_requests:
        assert set(request.body) == LEGACY_BODY_KEYS
        assert request.body["rollout_id"] == "r/with/slashes"
        assert request.body["temperature"] == 0.5
        assert request.body["model"] == "osmosis-rollout"
        assert not any(h.startswith("x-rollout") or h.startswith("x-sample") for h in request.headers)
    second = record.chat_requests[1].body["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": second[-2]["tool_calls"][0]["id"], "content": "42"}


async def test_list_of_parts_content_reaches_traingate_as_strings() -> None:
    loop = workflow_as_loop(OpenAIClientWorkflow, workflow_config=ClientConfig(name="parts", parts=True),
                            tools=[ADD_TOOL])
    record = await _run(loop)
    assert record.status == "COMPLETED"
    assert record.reward is None  # no grader: TrainGate computes rewards itself
    first = record.chat_requests[0].body["messages"]
    assert first == QUESTION
    assert record.final_messages[:2] == QUESTION


async def test_tools_found_in_the_workflow_config() -> None:
    config = ClientConfig(name="cfg", tools=[ADD_TOOL])
    loop = workflow_as_loop(OpenAIClientWorkflow, workflow_config=config)
    assert loop.get_tools(None) == [ADD_TOOL]  # type: ignore[arg-type]
    record = await _run(loop)
    assert record.tools[0]["function"]["parameters"]["properties"]["a"]["type"] == "number"
    assert record.status == "COMPLETED"


async def test_workflow_failure_is_an_error_callback() -> None:
    loop = workflow_as_loop(OpenAIClientWorkflow, workflow_config=ClientConfig(name="x", fail="raise"))
    record = await _run(loop)
    assert record.status == "ERROR"
    assert record.callback["error_message"] == "workflow boom"
    assert record.callback["finish_reason"] == "error"
    assert record.final_messages == []


async def test_no_sample_is_an_error_callback() -> None:
    loop = workflow_as_loop(OpenAIClientWorkflow, workflow_config=ClientConfig(name="x", fail="no-sample"),
                            tools=[ADD_TOOL])
    record = await _run(loop)
    assert record.status == "ERROR"
    assert "registered no sample" in record.callback["error_message"]


async def test_grader_failure_keeps_the_conversation() -> None:
    loop = workflow_as_loop(OpenAIClientWorkflow, grader=BrokenGrader, workflow_config=ClientConfig(name="x"),
                            tools=[ADD_TOOL])
    record = await _run(loop)
    assert record.status == "ERROR"
    assert record.callback["error_message"] == "grading failed: grader boom"
    assert record.final_messages[-1]["content"] == "The answer is 42."
    assert "reward" not in record.callback


async def test_label_key_and_grader_reward_zero() -> None:
    loop = workflow_as_loop(OpenAIClientWorkflow, grader=LabelInAnswerGrader, workflow_config=ClientConfig(name="x"),
                            tools=[ADD_TOOL], label_key="answer")
    record = await _run(loop, metadata={"answer": 41})
    assert record.status == "COMPLETED"
    assert record.reward == 0.0


async def test_traingate_refusing_a_chat_call_fails_the_rollout_without_client_retries() -> None:
    from osmosis_compat.testing.policy import ScriptedPolicy

    def refuse(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
        raise RuntimeError("policy down")

    gate = FakeTrainGate(ScriptedPolicy(override=refuse))
    loop = workflow_as_loop(OpenAIClientWorkflow, workflow_config=ClientConfig(name="x", stream=True),
                            tools=[ADD_TOOL])
    from osmosis_compat.legacy.config import RolloutClientSettings, RolloutSettings, configure, get_settings, reset_settings

    configure(RolloutSettings(client=RolloutClientSettings(max_retries=0)))
    try:
        record = await _run(loop, gate=gate)
    finally:
        reset_settings()
    assert record.status == "ERROR"
    assert "policy down" in record.callback["error_message"]
    assert len(record.chat_requests) == 1  # neither the bridge client nor the legacy client retried


def test_bad_tools_are_rejected_at_construction() -> None:
    from osmosis_compat.adapters import ToolSchemaError

    with pytest.raises(ToolSchemaError):
        workflow_as_loop(OpenAIClientWorkflow, tools=[{"name": ""}])
    with pytest.raises(TypeError):
        workflow_as_loop("tests.adapters.workflows:ADD_TOOL")


async def test_several_samples_send_the_first(caplog: pytest.LogCaptureFixture) -> None:
    from tests.adapters.workflows import TwoSamplesWorkflow

    loop = workflow_as_loop(TwoSamplesWorkflow, tools=[])
    record = await _run(loop)
    assert record.status == "COMPLETED"
    assert record.final_messages[-1] == {"role": "assistant", "content": "1"}
    assert any("only the first ('first')" in r.getMessage() for r in caplog.records)
