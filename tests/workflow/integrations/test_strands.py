"""The Strands integration (spec workflow-api §4.1) with the real strands package, over real HTTP where it matters."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from osmosis_compat.testing import FakeWorkflowController
from osmosis_compat.workflow import LocalBackend, RolloutContext
from osmosis_compat.workflow.integrations.strands import (
    OsmosisRolloutModel,
    OsmosisStrandsAgent,
    StrandsAgentSampleSource,
)
from strands.models.litellm import LiteLLMModel
from tests.workflow.conftest import prompt, rollout_server
from tests.workflow.integrations.flows import LabelInAnswerGrader, StrandsFlows, add, strands_flow_config


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Any]:
    backend = LocalBackend(workflow=StrandsFlows, workflow_config=strands_flow_config, grader=LabelInAnswerGrader)
    backend.artifact_root = tmp_path_factory.mktemp("osmosis")
    with rollout_server(backend) as served:
        yield served


async def run(controller: FakeWorkflowController, server: Any, rollout_id: str, mode: str, text: str = "What is 2 + 3?",
              label: str = "5") -> Any:
    return await controller.run_rollout(
        server.url, rollout_id=rollout_id, initial_messages=prompt(text), label=label, metadata={"mode": mode}
    )


async def test_streaming_round_trip_with_config_model(controller, server) -> None:
    record = await run(controller, server, "s-stream", "stream", "Compute (2 + 3) * 4", "20")

    assert record.rewards == {"calc": 1.0}
    assert len(record.chat_requests) == 3  # add, multiply, answer
    for chat in record.chat_requests:
        assert chat.headers["authorization"] == "Bearer ctrl-key"
        assert (chat.rollout_id, chat.sample_id) == ("s-stream", "calc")
        assert chat.body["stream"] is True and chat.body["stream_options"] == {"include_usage": True}
        assert chat.body["model"] == "osmosis-rollout"
        assert (chat.body["temperature"], chat.body["max_tokens"]) == (0.5, 256)  # from the placeholder's params
        # Strands sends block-list content, the system prompt from ctx.prompt included
        assert chat.body["messages"][0] == {"role": "system", "content": [{"type": "text", "text": "You are a calculator."}]}
    tool_results = [m for m in record.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_results] == ["5", "20"]


async def test_non_streaming_model(controller, server) -> None:
    record = await run(controller, server, "s-json", "no_stream")

    assert record.rewards == {"calc": 1.0}
    assert len(record.chat_requests) == 2
    assert all("stream" not in chat.body for chat in record.chat_requests)  # litellm leaves stream=False out
    assert all(chat.sample_id == "calc" for chat in record.chat_requests)


async def test_two_agents_are_two_samples(controller, server) -> None:
    record = await run(controller, server, "s-two", "two_agents")

    assert record.rewards == {"planner": 1.0, "solver": 1.0}
    assert record.sample_ids == ["planner", "solver"]


async def test_duplicate_agent_name_fails_the_rollout(controller, server) -> None:
    record = await run(controller, server, "s-dup", "duplicate")

    assert record.completion["status"] == "failure"
    assert record.completion["err_category"] == "validation_error"
    assert "already exists" in record.completion["err_message"]
    assert record.grader["status"] == "failure" and record.grader["samples"] == {}


async def test_sample_id_from_agent_id_then_uuid(controller, server) -> None:
    by_id = await run(controller, server, "s-agent-id", "agent_id")
    anonymous = await run(controller, server, "s-anon", "anonymous")

    assert by_id.rewards == {"by-id": 1.0}
    [sample_id] = anonymous.rewards
    assert re.fullmatch(r"[0-9a-f]{32}", sample_id)
    assert anonymous.sample_ids == [sample_id]


async def test_non_placeholder_model_registers_no_sample(controller, server) -> None:
    record = await run(controller, server, "s-bound", "bound_model")

    assert record.completion["status"] == "success"
    assert {c.sample_id for c in record.chat_requests} == {"manual"}
    assert record.grader["status"] == "failure"
    assert record.grader["err_message"] == "No samples after grading"


def test_construction_outside_a_rollout_is_a_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="active RolloutContext"):
        OsmosisStrandsAgent(name="x", model=OsmosisRolloutModel(), callback_handler=None)


async def test_placeholder_cannot_be_used_directly() -> None:
    model = OsmosisRolloutModel(params={"temperature": 1.0})
    assert isinstance(model, LiteLLMModel)
    assert model.config == {"params": {"temperature": 1.0}}
    with pytest.raises(NotImplementedError, match="placeholder"):
        async for _ in model.stream([{"role": "user", "content": [{"text": "hi"}]}]):
            pass
    with pytest.raises(NotImplementedError, match="placeholder"):
        async for _ in model.structured_output(dict, []):
            pass
    with pytest.raises(NotImplementedError, match="placeholder"):
        model.get_config()
    with pytest.raises(NotImplementedError, match="placeholder"):
        model.update_config(model_id="x")


def test_for_sample_binds_endpoint_key_and_headers() -> None:
    ctx = RolloutContext(chat_completions_url="http://127.0.0.1:1/v1", api_key="k", rollout_id="r")
    bound = OsmosisRolloutModel(params={"temperature": 1.0}, stream=False).for_sample("s", ctx)

    assert isinstance(bound, LiteLLMModel) and not isinstance(bound, OsmosisRolloutModel)
    assert bound.client_args == {
        "api_base": "http://127.0.0.1:1/v1",
        "api_key": "k",
        "extra_headers": {"x-sample-id": "s", "x-rollout-id": "r"},
    }
    assert bound.get_config() == {"model_id": "openai/osmosis-rollout", "params": {"temperature": 1.0}, "stream": False}
    with pytest.raises(TypeError, match="model_id"):
        OsmosisRolloutModel(model_id="gpt").for_sample("s", ctx)


def test_prompt_strings_become_content_blocks_and_registration_happens() -> None:
    with RolloutContext(chat_completions_url="http://127.0.0.1:1/v1", api_key="k", rollout_id="r") as ctx:
        agent = OsmosisStrandsAgent(
            name="calc", model=OsmosisRolloutModel(), messages=prompt(), tools=[add], callback_handler=None
        )
    assert [m["content"] for m in agent.messages] == [[{"text": "You are a calculator."}], [{"text": "What is 2 + 3?"}]]
    assert isinstance(ctx.sample_sources["calc"], StrandsAgentSampleSource)
    assert ctx.sample_sources["calc"].agent is agent


async def test_sample_keeps_native_messages_and_chat_trajectory(caplog) -> None:
    class Holder:
        messages = [{"role": "user", "content": [{"text": "hi"}]}, {"role": "assistant", "content": [{"text": "yo"}]}]

    sample = await StrandsAgentSampleSource(Holder()).get_sample("n")  # type: ignore[arg-type]
    assert sample.id == "n" and sample.messages == Holder.messages
    assert sample.trajectory_messages == [
        {"role": "user", "content": [{"text": "hi", "type": "text"}]},
        {"role": "assistant", "content": [{"text": "yo", "type": "text"}]},
    ]

    class Broken:
        messages = [{"role": "user", "content": None}]

    with caplog.at_level(logging.WARNING):
        sample = await StrandsAgentSampleSource(Broken()).get_sample("b")  # type: ignore[arg-type]
    assert sample.trajectory_messages is None
    assert "Failed to convert Strands" in caplog.text


async def test_null_controller_key_sends_no_authorization(controller) -> None:
    with RolloutContext(chat_completions_url=controller.chat_completions_url, api_key=None, rollout_id="s-nokey"):
        agent = OsmosisStrandsAgent(name="calc", model=OsmosisRolloutModel(), callback_handler=None, retry_strategy=None)
        with pytest.raises(Exception):
            await agent.invoke_async("What is 2 + 3?")
    [chat] = controller.chat_requests("s-nokey")  # 401 is not retried
    assert chat.status_code == 401
    assert "authorization" not in chat.headers
    assert chat.sample_id == "calc"
