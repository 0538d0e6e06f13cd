"""loop_as_workflow at the HTTP level: a legacy loop served by create_rollout_server, driven by
FakeWorkflowController (0.2.x workflow protocol)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from osmosis_compat.adapters import LegacyLoopGrader, LegacyLoopWorkflow, loop_as_workflow
from osmosis_compat.legacy.config import RolloutClientSettings
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.testing import FakeWorkflowController, serve_app_async
from osmosis_compat.workflow import Grader, LocalBackend
from tests.adapters.loops import AsyncToolsLoop, BadToolsLoop, CatchingLoop, ScriptLoop

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "legacy"
QUESTION = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is (2 + 3) * 4?"}]
FAST = RolloutClientSettings(max_retries=1, retry_base_delay=0.1, retry_max_delay=1.0)


def calculator_loop() -> Any:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import calculator_agent

    return calculator_agent.agent_loop


async def _drive(workflow: type, grader: type | None, *, controller: FakeWorkflowController | None = None,
                 **kwargs: Any) -> Any:
    controller = controller or FakeWorkflowController()
    backend = LocalBackend(workflow=workflow, grader=grader)
    async with controller.serve_async() as served, await serve_app_async(
        create_rollout_server(backend=backend, configure_logging=False)
    ) as server:
        kwargs.setdefault("initial_messages", QUESTION)
        return await served.run_rollout(server.url, **kwargs)


async def test_calculator_loop_over_the_workflow_protocol() -> None:
    workflow, grader = loop_as_workflow(calculator_loop(), max_turns=6)
    assert issubclass(workflow, LegacyLoopWorkflow) and issubclass(grader, LegacyLoopGrader)
    assert workflow.__name__ == "CalculatorAgentWorkflow"
    record = await _drive(workflow, grader, rollout_id="calc-1", label="20")
    assert record.completion["status"] == "success", record.completion
    assert record.grader["status"] == "success", record.grader
    assert record.rewards == {"calculator": 1.0}  # the label reached the loop as metadata["ground_truth"]
    sample = record.grader["samples"]["calculator"]
    assert [m["role"] for m in sample["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                                       "assistant"]
    assert sample["messages"][-1]["content"] == "The answer is 20."
    assert sample["extra_fields"] == {"legacy_finish_reason": "stop", "legacy_reward": 1.0}
    assert sample["metrics"]["num_llm_calls"] == 3 and sample["metrics"]["num_tool_calls"] == 2
    # every model call: the workflow dialect, identity headers, the loop's four tools in the body
    assert len(record.chat_requests) == 3
    for request in record.chat_requests:
        assert request.headers["x-rollout-id"] == "calc-1"
        assert request.headers["x-sample-id"] == "calculator"
        assert request.headers["authorization"] == "Bearer ctrl-key"
        assert [t["function"]["name"] for t in request.body["tools"]] == ["add", "subtract", "multiply", "divide"]
        assert "rollout_id" not in request.body and "stream" not in request.body
        assert request.path == "/v1/chat/completions"


async def test_completion_params_max_turns_and_label_key() -> None:
    class Probe(ScriptLoop):
        name = "probe"
        seen: list[Any] = []

        async def run(self, ctx: Any) -> Any:
            type(self).seen.append(ctx.request)
            return await super().run(ctx)

    workflow, grader = loop_as_workflow(Probe, completion_params={"temperature": 0.2, "seed": 7}, max_turns=3,
                                        max_tokens_total=100, label_key="answer")
    record = await _drive(workflow, grader, rollout_id="p-1", label="L", metadata={"k": "v", "reward": 0.25})
    request = Probe.seen[-1]
    assert request.rollout_id == "p-1" and request.max_turns == 3 and request.max_tokens_total == 100
    assert request.metadata == {"k": "v", "reward": 0.25, "answer": "L"}
    assert request.completion_params == {"temperature": 0.2, "seed": 7}
    assert request.messages == QUESTION
    body = record.chat_requests[0].body
    assert body["temperature"] == 0.2 and body["seed"] == 7  # OpenAI-compatible: extra params travel
    assert body["max_tokens"] == 512 and body["model"] == "default"
    assert record.rewards == {"probe": 0.25}


async def test_label_does_not_override_metadata() -> None:
    seen: list[Any] = []

    class Probe(ScriptLoop):
        name = "probe2"

        async def run(self, ctx: Any) -> Any:
            seen.append(dict(ctx.request.metadata))
            return await super().run(ctx)

    workflow, grader = loop_as_workflow(Probe)
    await _drive(workflow, grader, rollout_id="p-2", label="from-label", metadata={"ground_truth": "from-meta"})
    assert seen == [{"ground_truth": "from-meta"}]


async def test_explicit_grader_overrides_the_loop_reward() -> None:
    class Constant(Grader):
        async def grade(self, ctx: Any) -> None:
            for sample_id in ctx.samples:
                ctx.set_sample_reward(sample_id, 0.75)

    workflow, _ = loop_as_workflow(ScriptLoop)
    record = await _drive(workflow, Constant, rollout_id="g-1", label="x")
    assert record.rewards == {"script": 0.75}


@pytest.mark.parametrize(
    "mode, category, message",
    [
        ("error", "agent_error", "loop gave up"),
        ("raise", "agent_error", "loop boom"),
        ("raise-value", "validation_error", "bad value in loop"),
        ("timeout", "timeout", "model call timed out"),
        ("none", "validation_error", "must return a RolloutResult"),
        ("bad-status", "validation_error", "'completed' is not a valid RolloutStatus"),
    ],
)
async def test_failure_mapping(mode: str, category: str, message: str) -> None:
    workflow, grader = loop_as_workflow(ScriptLoop)
    record = await _drive(workflow, grader, rollout_id=f"f-{mode}", label="x", metadata={"mode": mode})
    assert record.completion["status"] == "failure"
    assert record.completion["err_category"] == category
    assert message in record.completion["err_message"]
    assert record.grader["status"] == "failure" and record.grader["samples"] == {}


async def test_missing_reward_fails_grading_with_a_clear_message() -> None:
    workflow, grader = loop_as_workflow(ScriptLoop)
    record = await _drive(workflow, grader, rollout_id="nr", label="x", metadata={"mode": "no-reward"})
    assert record.completion["status"] == "success"
    assert record.grader["status"] == "failure"
    assert record.grader["err_category"] == "validation_error"
    assert "passed no reward to ctx.complete()" in record.grader["err_message"]


async def test_controller_errors_map_to_http_error_and_timeouts() -> None:
    controller = FakeWorkflowController(chat_script=[503, 503])
    workflow, grader = loop_as_workflow(ScriptLoop, client_settings=FAST)
    record = await _drive(workflow, grader, controller=controller, rollout_id="h-1", label="x")
    assert record.completion["status"] == "failure"
    assert record.completion["err_category"] == "http_error"
    assert "scripted failure (HTTP 503)" in record.completion["err_message"]
    assert len(record.chat_requests) == 2  # max_retries=1 → two attempts

    controller = FakeWorkflowController(chat_script=[400])
    record = await _drive(workflow, grader, controller=controller, rollout_id="h-2", label="x")
    assert record.completion["err_category"] == "http_error" and len(record.chat_requests) == 1


async def test_loop_catching_the_controller_error_reports_agent_error() -> None:
    controller = FakeWorkflowController(chat_script=[500, 500])
    workflow, grader = loop_as_workflow(CatchingLoop, client_settings=FAST)
    record = await _drive(workflow, grader, controller=controller, rollout_id="c-1", label="x")
    assert record.completion["err_category"] == "agent_error"
    assert record.completion["err_message"] == "controller failed: 500"


async def test_async_get_tools_and_bad_tools() -> None:
    workflow, grader = loop_as_workflow(AsyncToolsLoop)
    record = await _drive(workflow, grader, rollout_id="t-1", label="x")
    assert record.completion["status"] == "success"
    assert record.chat_requests[0].body["tools"][0]["function"]["name"] == "add"

    workflow, grader = loop_as_workflow(BadToolsLoop)
    record = await _drive(workflow, grader, rollout_id="t-2", label="x")
    assert record.completion["err_category"] == "validation_error"
    assert "get_tools()" in record.completion["err_message"] and "description" in record.completion["err_message"]


def test_rejects_non_loops() -> None:
    with pytest.raises(TypeError, match="not a RolloutAgentLoop subclass"):
        loop_as_workflow(dict)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RolloutAgentLoop instance"):
        loop_as_workflow(object())  # type: ignore[arg-type]
