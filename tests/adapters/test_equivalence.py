"""Equivalence (issue 4, item 5): with the deterministic ScriptedPolicy, an agent run natively on its own protocol
and run through the adapter on the other protocol produces the same conversation (modulo message shape) and the
same rewards."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from osmosis_compat.adapters import loop_as_workflow, to_chat_messages, workflow_as_loop
from osmosis_compat.runtime.bridge import get_bridge
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.testing import FakeTrainGate, FakeWorkflowController, serve_app_async
from osmosis_compat.workflow import LocalBackend
from tests.adapters.workflows import ADD_TOOL, ClientConfig, LabelInAnswerGrader, OpenAIClientWorkflow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "legacy"
ROWS = [
    ("What is 12 + 30?", "42"),
    ("Compute (2 + 3) * 4", "20"),
    ("What is 100 / 8 - 2?", "10.5"),
    ("What is 7 * 6?", "41"),  # wrong ground truth: reward 0.0 on both sides
]


def _calculator() -> Any:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import calculator_agent

    return calculator_agent.agent_loop


def _prompt(question: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a calculator. Use the tools."}, {"role": "user", "content": question}]


def _shape(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages modulo shape: chat form, text parts flattened, ``content: null`` ≡ absent, key order ignored."""
    out = []
    for message in to_chat_messages(copy.deepcopy(messages)):
        message = {k: v for k, v in message.items() if v is not None}
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        out.append(message)
    return out


async def test_calculator_loop_native_legacy_vs_adapted_workflow() -> None:
    loop = _calculator()
    workflow, grader = loop_as_workflow(loop)
    native: list[tuple[Any, Any]] = []
    adapted: list[tuple[Any, Any]] = []
    async with FakeTrainGate().serve_async() as gate, await serve_app_async(create_app(loop)) as legacy_server:
        for i, (question, truth) in enumerate(ROWS):
            record = await gate.run_rollout(legacy_server.url, rollout_id=f"n-{i}", messages=_prompt(question),
                                            metadata={"ground_truth": truth})
            assert record.status == "COMPLETED"
            native.append((record.final_messages, record.reward))
    backend = LocalBackend(workflow=workflow, grader=grader)
    async with FakeWorkflowController().serve_async() as controller, await serve_app_async(
        create_rollout_server(backend=backend, configure_logging=False)
    ) as workflow_server:
        for i, (question, truth) in enumerate(ROWS):
            record = await controller.run_rollout(workflow_server.url, rollout_id=f"a-{i}",
                                                  initial_messages=_prompt(question), label=truth)
            assert record.completion["status"] == "success"
            sample = record.grader["samples"]["calculator"]
            adapted.append((sample["messages"], record.rewards["calculator"]))
    assert [reward for _, reward in native] == [1.0, 1.0, 1.0, 0.0]
    assert [reward for _, reward in adapted] == [reward for _, reward in native]
    for (native_messages, _), (adapted_messages, _) in zip(native, adapted):
        assert _shape(adapted_messages) == _shape(native_messages)
        assert len(native_messages) >= 4  # tool round-trips really happened


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_workflow_native_vs_adapted_loop(stream: bool) -> None:
    config = ClientConfig(name="adder", stream=stream, parts=True)
    native: list[tuple[Any, Any]] = []
    adapted: list[tuple[Any, Any]] = []
    backend = LocalBackend(workflow=OpenAIClientWorkflow, workflow_config=config, grader=LabelInAnswerGrader)
    async with FakeWorkflowController().serve_async() as controller, await serve_app_async(
        create_rollout_server(backend=backend, configure_logging=False)
    ) as workflow_server:
        for i, (question, truth) in enumerate(ROWS[:1] + ROWS[3:]):
            record = await controller.run_rollout(workflow_server.url, rollout_id=f"w-{i}",
                                                  initial_messages=_prompt(question), label=truth)
            native.append((record.grader["samples"]["main"]["messages"], record.rewards["main"]))
    loop = workflow_as_loop(OpenAIClientWorkflow, workflow_config=config, grader=LabelInAnswerGrader,
                            tools=[ADD_TOOL])
    async with FakeTrainGate().serve_async() as gate, await serve_app_async(create_app(loop)) as legacy_server:
        for i, (question, truth) in enumerate(ROWS[:1] + ROWS[3:]):
            record = await gate.run_rollout(legacy_server.url, rollout_id=f"l-{i}", messages=_prompt(question),
                                            metadata={"ground_truth": truth})
            assert record.status == "COMPLETED", record.callback
            adapted.append((record.final_messages, record.reward))
    assert [reward for _, reward in native] == [1.0, 0.0]
    assert [reward for _, reward in adapted] == [reward for _, reward in native]
    for (native_messages, _), (adapted_messages, _) in zip(native, adapted):
        assert _shape(adapted_messages) == _shape(native_messages)


MODERN = Path(__file__).resolve().parents[2] / "examples" / "modern"


def _modern(module_name: str) -> Any:
    # By path, not by name: examples/modern/v03/ has files of the same names, which other tests load too.
    from osmosis_compat.cli.loading import _import_file

    return _import_file(str(MODERN / f"{module_name}.py"))


@pytest.mark.parametrize(
    "module_name, workflow_name, grader_name, explicit_tools",
    [
        # tools found next to the workflow class (module level) …
        ("strands_calculator", "StrandsCalculatorWorkflow", "StrandsCalculatorGrader", False),
        # … or given explicitly
        ("openai_agents_calculator", "OpenAIAgentsCalculatorWorkflow", "OpenAIAgentsCalculatorGrader", True),
    ],
)
async def test_modern_example_native_vs_adapted_loop(
    module_name: str, workflow_name: str, grader_name: str, explicit_tools: bool
) -> None:
    module = _modern(module_name)
    workflow, grader = getattr(module, workflow_name), getattr(module, grader_name)
    rows = [("Compute (2 + 3) * 4", "20"), ("What is 6 * 7?", "41")]
    backend = LocalBackend(workflow=workflow, grader=grader)
    native = []
    async with FakeWorkflowController().serve_async() as controller, await serve_app_async(
        create_rollout_server(backend=backend, configure_logging=False)
    ) as server:
        for i, (question, truth) in enumerate(rows):
            record = await controller.run_rollout(server.url, rollout_id=f"m-{i}", initial_messages=_prompt(question),
                                                  label=truth, timeout=30)
            assert record.grader["status"] == "success", record.grader
            native.append((record.chat_requests[-1].body["messages"], record.rewards["calculator"]))
    tools = [module.add, module.multiply] if explicit_tools else None
    loop = workflow_as_loop(workflow, grader=grader, tools=tools, name="calculator")
    adapted = []
    calls = 0
    async with FakeTrainGate().serve_async() as gate, await serve_app_async(create_app(loop)) as server:
        for i, (question, truth) in enumerate(rows):
            record = await gate.run_rollout(server.url, rollout_id=f"l-{i}", messages=_prompt(question),
                                            metadata={"ground_truth": truth}, timeout=30)
            assert record.status == "COMPLETED", record.callback
            assert [t["function"]["name"] for t in record.tools] == ["add", "multiply"]
            # final messages are chat-shaped (the integration's trajectory copy), string content
            assert record.final_messages[-1]["role"] == "assistant"
            assert record.final_messages[-1]["content"].startswith("The answer is")
            assert any(m["role"] == "tool" for m in record.final_messages)
            adapted.append((record.chat_requests[-1].body["messages"], record.reward))
            calls += len(record.chat_requests)
        # the Osmosis integrations use the runtime's pooled clients: every call reached the bridge in process
        bridge = await get_bridge()
        assert calls > 0 and bridge.in_process_requests == calls and bridge.tcp_requests == 0
    assert [reward for _, reward in native] == [1.0, 0.0]
    assert [reward for _, reward in adapted] == [reward for _, reward in native]
    for (native_messages, _), (adapted_messages, _) in zip(native, adapted):
        # the conversation the model saw on its last turn, native vs through the bridge
        assert _shape(adapted_messages) == _shape(native_messages)
