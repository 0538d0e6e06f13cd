"""One server, both protocols: legacy loops and a workflow side by side, each natively and through the adapters."""

from __future__ import annotations

import httpx

from osmosis_compat.server.agents import AgentSpec
from osmosis_compat.server.mixed_app import create_mixed_app
from osmosis_compat.testing import FakeTrainGate, FakeWorkflowController, ScriptedPolicy, serve_app_async
from osmosis_compat.workflow import LocalBackend
from tests.server import calc_workflow
from tests.server.mixed_agents import QUESTION, EchoLoop, calculator_loop


def workflow_backend() -> LocalBackend:
    return LocalBackend(workflow=calc_workflow.CalcWorkflow, workflow_config=calc_workflow.config,
                        grader=calc_workflow.CalcGrader)


def mixed(expose: str = "native", **kwargs) -> object:
    return create_mixed_app(
        [
            AgentSpec("calc", loop=calculator_loop(), expose=expose),
            AgentSpec("echo", loop=EchoLoop()),
            AgentSpec("wf", backend=workflow_backend(), expose=expose),
        ],
        **kwargs,
    )


async def test_two_legacy_loops_and_a_workflow_in_one_server() -> None:
    gate, controller = FakeTrainGate(ScriptedPolicy()), FakeWorkflowController(ScriptedPolicy())
    async with gate.serve_async(), controller.serve_async():
        server = await serve_app_async(mixed())
        try:
            calc = await gate.run_rollout(f"{server.url}/agents/calc", rollout_id="c", messages=QUESTION,
                                          metadata={"ground_truth": "42"})
            echo = await gate.run_rollout(f"{server.url}/agents/echo", rollout_id="e", messages=QUESTION)
            wf = await controller.run_rollout(f"{server.url}/agents/wf", rollout_id="w", initial_messages=QUESTION,
                                              label="42")
            async with httpx.AsyncClient() as client:
                health = (await client.get(f"{server.url}/health")).json()
                wf_health = (await client.get(f"{server.url}/agents/wf/health")).json()
        finally:
            await server.close()
    assert (calc.status, calc.reward) == ("COMPLETED", 1.0)
    assert (echo.status, echo.reward) == ("COMPLETED", 0.5)
    assert wf.status_code == 200 and wf.completion["status"] == "success" and wf.rewards == {"calc": 1.0}
    assert [r.headers["x-rollout-id"] for r in wf.chat_requests] == ["w", "w"]
    assert health["agents"]["wf"] == {
        "kind": "workflow",
        "protocols": ["workflow"],
        "endpoints": {"workflow": "/agents/wf/rollout", "polling": "/agents/wf/rollout"},
        "health": wf_health,
    }
    assert wf_health["status"] == "ok"


async def test_each_agent_reached_on_the_other_protocol_through_the_adapters() -> None:
    gate, controller = FakeTrainGate(ScriptedPolicy()), FakeWorkflowController(ScriptedPolicy())
    async with gate.serve_async(), controller.serve_async():
        server = await serve_app_async(mixed(expose="both"))
        try:
            # The workflow, driven by a legacy TrainGate.
            wf_legacy = await gate.run_rollout(f"{server.url}/agents/wf", rollout_id="wl", messages=QUESTION,
                                               metadata={"ground_truth": "42"})
            # The legacy loop, driven by a workflow controller.
            calc_workflow_side = await controller.run_rollout(f"{server.url}/agents/calc", rollout_id="cw",
                                                              initial_messages=QUESTION, label="42")
            # And both natively, on the same server.
            wf_native = await controller.run_rollout(f"{server.url}/agents/wf", rollout_id="wn",
                                                     initial_messages=QUESTION, label="42")
            calc_native = await gate.run_rollout(f"{server.url}/agents/calc", rollout_id="cn", messages=QUESTION,
                                                 metadata={"ground_truth": "42"})
            async with httpx.AsyncClient() as client:
                health = (await client.get(f"{server.url}/health")).json()
        finally:
            await server.close()
    assert (wf_legacy.status, wf_legacy.reward) == ("COMPLETED", 1.0)
    assert [t["function"]["name"] for t in wf_legacy.tools] == ["add", "subtract", "multiply", "divide"]
    assert all("rollout_id" in r.body for r in wf_legacy.chat_requests)  # legacy dialect on the wire
    assert wf_legacy.final_messages[-1]["content"] == "The answer is 42."
    assert calc_workflow_side.completion["status"] == "success" and calc_workflow_side.rewards == {"calculator": 1.0}
    # The adapted loop sends its get_tools() tools in every workflow-dialect request.
    assert all(len(r.body["tools"]) == 4 for r in calc_workflow_side.chat_requests)
    assert wf_native.rewards == {"calc": 1.0} and (calc_native.status, calc_native.reward) == ("COMPLETED", 1.0)
    assert health["agents"]["calc"]["endpoints"] == {
        "legacy": "/agents/calc/v1/rollout/init", "workflow": "/agents/calc/rollout", "polling": "/agents/calc/rollout",
    }
    assert health["agents"]["wf"]["protocols"] == ["workflow", "legacy"]


async def test_a_workflow_exposed_only_on_the_legacy_protocol_is_the_default_at_the_root() -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    async with gate.serve_async():
        server = await serve_app_async(create_mixed_app([AgentSpec("wf", backend=workflow_backend(), expose="legacy")]))
        try:
            record = await gate.run_rollout(server.url, rollout_id="root", messages=QUESTION,
                                            metadata={"ground_truth": "42"})
            async with httpx.AsyncClient() as client:
                native = await client.post(f"{server.url}/rollout", json={})
                health = (await client.get(f"{server.url}/health")).json()
        finally:
            await server.close()
    assert (record.status, record.reward) == ("COMPLETED", 1.0)
    assert native.status_code == 404 and "not served on the workflow protocol" in native.json()["detail"]
    assert health["default_agent"] == "wf" and health["agent_loop"] == "wf"  # the adapted loop is named after the agent
