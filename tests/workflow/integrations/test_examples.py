"""examples/modern end to end over real HTTP: each entrypoint's own app served by uvicorn, driven by the fake
workflow controller (ScriptedPolicy, zero latency), with the real Strands / OpenAI Agents packages."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from tests.workflow.integrations.support import MODERN, dataset_rows, load_module, row_messages, serve_entrypoint

ROWS = dataset_rows()
EXAMPLES = {
    "strands": (MODERN / "strands_calculator.py", "AsyncOpenAI/Python"),
    "openai_agents": (MODERN / "openai_agents_calculator.py", "Agents/Python"),
}
SEEDS = {
    "strands": (MODERN / "seeds" / "strands_seed_example.py", "What is 12 + 30?", "42", "math-agent"),
    "openai_agents": (MODERN / "seeds" / "openai_agents_seed_example.py", "What is 6 * 7?", "42", "multiply-agent"),
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> Any:
    """Every entrypoint served once (an app's engine belongs to the loop that first served it)."""
    paths = {name: path for name, (path, _) in EXAMPLES.items()}
    paths.update({f"seed_{name}": spec[0] for name, spec in SEEDS.items()})
    with contextlib.ExitStack() as stack:
        yield {
            name: stack.enter_context(
                serve_entrypoint(load_module(path, f"modern_example_{name}"), tmp_path_factory.mktemp("osmosis"))
            )
            for name, path in paths.items()
        }


@pytest.fixture(params=sorted(EXAMPLES))
def example(request, servers) -> Any:
    return request.param, servers[request.param], EXAMPLES[request.param][1]


def _tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in body.get("tools") or [])


@pytest.mark.parametrize("row", ROWS, ids=[r["user_prompt"] for r in ROWS])
async def test_dataset_row_gets_reward_one(example, controller, row) -> None:
    name, server, user_agent = example
    rollout_id = f"{name}-{ROWS.index(row)}"
    record = await controller.run_rollout(
        server.url, rollout_id=rollout_id, initial_messages=row_messages(row), label=row["ground_truth"]
    )

    assert record.completion["status"] == "success", record.completion
    assert record.grader["status"] == "success", record.grader
    assert record.rewards == {"calculator": 1.0}
    # one model call per arithmetic step plus the final answer: the tools really ran
    operations = sum(row["user_prompt"].count(op) for op in "+*")
    assert len(record.chat_requests) == operations + 1
    for chat in record.chat_requests:
        assert chat.path == "/v1/chat/completions"
        assert chat.status_code == 200
        assert chat.headers["authorization"] == f"Bearer {controller.controller_api_key}"
        assert chat.headers["x-rollout-id"] == rollout_id
        assert chat.headers["x-sample-id"] == "calculator"
        assert chat.headers["user-agent"].startswith(user_agent)
        assert chat.body["model"] == "osmosis-rollout"
        assert chat.body["stream"] is True
        assert chat.body["temperature"] == 1.0
        assert _tool_names(chat.body) == ["add", "multiply"]
    last = record.chat_requests[-1].body["messages"]
    assert last[-1]["role"] == "tool"  # the final call carries the last tool result


async def test_strands_sample_is_native_strands_history(controller, servers) -> None:
    record = await controller.run_rollout(
        servers["strands"].url, rollout_id="strands-shape", initial_messages=row_messages(ROWS[0]), label="42"
    )
    # Strands 1.62 adds tracking_id (and metadata on assistant turns) to each message (frameworks.md P11)
    messages = [
        {k: v for k, v in m.items() if k not in ("tracking_id", "metadata")}
        for m in record.grader["samples"]["calculator"]["messages"]
    ]
    assert messages[0] == {"role": "system", "content": [{"text": ROWS[0]["system_prompt"]}]}
    assert messages[1] == {"role": "user", "content": [{"text": "What is 12 + 30?"}]}
    [tool_use] = [b["toolUse"] for b in messages[2]["content"] if "toolUse" in b]
    assert tool_use["name"] == "add" and tool_use["input"] == {"a": 12, "b": 30}
    assert messages[3]["content"][0]["toolResult"]["content"] == [{"text": "42"}]
    assert messages[-1]["content"][0]["text"] == "The answer is 42."


async def test_openai_agents_sample_is_responses_items(controller, servers) -> None:
    record = await controller.run_rollout(
        servers["openai_agents"].url, rollout_id="agents-shape", initial_messages=row_messages(ROWS[1]), label="42"
    )
    items = record.grader["samples"]["calculator"]["messages"]
    assert items[:2] == row_messages(ROWS[1])
    call, output, answer = items[2:]
    assert call["type"] == "function_call" and call["name"] == "multiply"
    assert json.loads(call["arguments"]) == {"a": 6, "b": 7}
    assert call["provider_data"]["model"] == "openai/osmosis-rollout"  # as upstream's litellm path recorded it
    assert output == {"call_id": call["call_id"], "output": "42", "type": "function_call_output"}
    assert answer["type"] == "message" and answer["role"] == "assistant"
    assert answer["content"][0]["text"] == "The answer is 42."


@pytest.mark.parametrize("name", sorted(SEEDS))
async def test_seed_complete_example_runs_unchanged(controller, servers, name: str) -> None:
    _, question, label, sample_id = SEEDS[name]
    record = await controller.run_rollout(
        servers[f"seed_{name}"].url,
        rollout_id=f"seed-{name}",
        initial_messages=[{"role": "system", "content": "Be exact."}, {"role": "user", "content": question}],
        label=label,
    )
    assert record.rewards == {sample_id: 1.0}, (record.completion, record.grader)
    assert len(record.chat_requests) == 2
    assert {c.sample_id for c in record.chat_requests} == {sample_id}


def test_upstream_import_names_resolve_to_the_integrations() -> None:
    import osmosis_ai.rollout as rollout
    import osmosis_ai.rollout.integrations as integrations
    import osmosis_ai.rollout.integrations.agents as agents_pkg
    from osmosis_ai.rollout.integrations.agents import openai_agents as upstream_agents
    from osmosis_ai.rollout.integrations.agents import strands as upstream_strands

    from osmosis_compat.workflow.integrations import openai_agents, strands

    # the top-level OsmosisRolloutModel is the Strands one (spec §1: the name clash)
    for module in (rollout, integrations, agents_pkg, upstream_strands):
        assert module.OsmosisRolloutModel is strands.OsmosisRolloutModel
        assert module.OsmosisStrandsAgent is strands.OsmosisStrandsAgent
    assert upstream_strands.StrandsAgentSampleSource is strands.StrandsAgentSampleSource
    for name in ("OsmosisAgent", "OsmosisLitellmModel", "OsmosisMemorySession", "OsmosisRolloutModel",
                 "SessionSampleSource", "current_sample_id"):
        assert getattr(upstream_agents, name) is getattr(openai_agents, name)
    assert upstream_agents.OsmosisRolloutModel is not strands.OsmosisRolloutModel
