"""The mixed server over real HTTP: several agents in one app, each addressed, lifespans run, bad sets refused."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from osmosis_compat.server.agents import AgentSpec, AgentSpecError
from osmosis_compat.server.mixed_app import MixedAppError, create_mixed_app
from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app_async
from tests.server.mixed_agents import QUESTION, EchoLoop, SlowLoop, calculator_loop


def two_legacy_loops(**kwargs) -> object:
    return create_mixed_app(
        [AgentSpec("calc", loop=calculator_loop()), AgentSpec("echo", loop=EchoLoop())], **kwargs
    )


async def test_each_legacy_loop_is_reached_under_its_prefix() -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    async with gate.serve_async():
        server = await serve_app_async(two_legacy_loops())
        try:
            calc = await gate.run_rollout(f"{server.url}/agents/calc", rollout_id="c1", messages=QUESTION,
                                          metadata={"ground_truth": "42"})
            echo = await gate.run_rollout(f"{server.url}/agents/echo", rollout_id="e1", messages=QUESTION)
        finally:
            await server.close()
    assert calc.status == "COMPLETED" and calc.reward == 1.0
    assert [t["function"]["name"] for t in calc.tools] == ["add", "subtract", "multiply", "divide"]
    assert calc.final_messages[-1]["content"] == "The answer is 42."
    assert echo.status == "COMPLETED" and echo.reward == 0.5 and echo.tools == []


async def test_root_paths_reach_the_default_agent_and_health_lists_all() -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    async with gate.serve_async():
        server = await serve_app_async(two_legacy_loops(default="echo"))
        try:
            record = await gate.run_rollout(server.url, rollout_id="root-1", messages=QUESTION)
            async with httpx.AsyncClient() as client:
                health = (await client.get(f"{server.url}/health")).json()
                agent_health = (await client.get(f"{server.url}/agents/calc/health")).json()
        finally:
            await server.close()
    assert record.reward == 0.5  # the echo loop answered
    assert health["status"] == "healthy" and health["default_agent"] == "echo"
    assert set(health["agents"]) == {"calc", "echo"}
    assert health["agents"]["calc"]["endpoints"] == {
        "legacy": "/agents/calc/v1/rollout/init", "polling": "/agents/calc/rollout",
    }
    assert health["agents"]["echo"]["health"]["completed_rollouts"] == 1
    assert health["agent_loop"] == "echo"  # single-agent health keys of the default agent
    assert agent_health["agent_loop"] == "calculator" and agent_health["status"] == "healthy"


async def test_without_default_root_paths_list_the_agents_and_unknown_names_404() -> None:
    server = await serve_app_async(two_legacy_loops())
    try:
        async with httpx.AsyncClient() as client:
            root = await client.post(f"{server.url}/v1/rollout/init", json={})
            unknown = await client.post(f"{server.url}/agents/nobody/v1/rollout/init", json={})
            not_exposed = await client.post(f"{server.url}/agents/calc/rollout", json={})
            invalid = await client.post(f"{server.url}/agents/calc/v1/rollout/init", json={"rollout_id": "x"})
    finally:
        await server.close()
    assert root.status_code == 404 and root.json()["agents"]["echo"] == {
        "legacy": "/agents/echo/v1/rollout/init", "polling": "/agents/echo/rollout",
    }
    assert unknown.status_code == 404 and unknown.json()["agents"] == ["calc", "echo"]
    # a legacy loop answers today's polling controller on /rollout itself: an empty body is a validation error
    assert not_exposed.status_code == 422 and not_exposed.json()["detail"][0]["loc"][0] == "body"
    assert invalid.status_code == 422  # the legacy app itself validated the body


async def test_api_key_protects_the_legacy_endpoints_of_every_agent() -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    async with gate.serve_async():
        server = await serve_app_async(two_legacy_loops(api_key="secret"))
        try:
            async with httpx.AsyncClient() as client:
                body = gate.init_body(rollout_id="k1", messages=QUESTION)
                refused = await client.post(f"{server.url}/agents/echo/v1/rollout/init", json=body)
                platform = await client.get(f"{server.url}/agents/echo/platform/health",
                                            headers={"Authorization": "Bearer secret"})
            accepted = await gate.run_rollout(f"{server.url}/agents/echo", rollout_id="k2", messages=QUESTION,
                                              api_key="secret")
        finally:
            await server.close()
    assert refused.status_code == 401
    assert platform.status_code == 200 and platform.json()["agent_loop"] == "echo"
    assert accepted.status == "COMPLETED"


async def test_shutdown_drains_every_agents_engine() -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    async with gate.serve_async():
        server = await serve_app_async(create_mixed_app([AgentSpec("slow", loop=SlowLoop()),
                                                         AgentSpec("echo", loop=EchoLoop())]))
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{server.url}/agents/slow/v1/rollout/init",
                                         json=gate.init_body(rollout_id="in-flight", messages=QUESTION))
        assert response.status_code == 202
        gate.set_tools("in-flight", None)
        await server.close()  # returns once the lifespans ran: the slow rollout was drained, not dropped
        callbacks = gate.callbacks("in-flight")
    assert [c["status"] for c in callbacks] == ["COMPLETED"]


def test_name_collisions_and_bad_names_are_refused_at_startup() -> None:
    with pytest.raises(MixedAppError, match="two agents are named 'echo'"):
        create_mixed_app([AgentSpec("echo", loop=EchoLoop()), AgentSpec("echo", loop=SlowLoop())])
    with pytest.raises(MixedAppError, match="default agent 'nobody'"):
        create_mixed_app([AgentSpec("echo", loop=EchoLoop())], default="nobody")
    with pytest.raises(MixedAppError, match="no agents"):
        create_mixed_app([])
    with pytest.raises(AgentSpecError, match="cannot be used in a URL path"):
        AgentSpec("my agent", loop=EchoLoop())
    with pytest.raises(AgentSpecError, match="exactly one of"):
        AgentSpec("x")
    with pytest.raises(AgentSpecError, match="expose must be one of"):
        AgentSpec("x", loop=EchoLoop(), expose="grpc")


async def test_one_agent_draining_first_does_not_cut_another_agents_model_call() -> None:
    # "a" has nothing in flight and finishes its shutdown at once; "b" is waiting on a 0.4 s model call. Each
    # sub-app closes the shared HTTP pool when done — the mixed app defers that until every agent has drained,
    # so b's call is not cut (and retried: a second, duplicate model call).
    gate = FakeTrainGate(ScriptedPolicy(latency_s=0.4))
    async with gate.serve_async():
        server = await serve_app_async(create_mixed_app([AgentSpec("a", loop=EchoLoop()),
                                                         AgentSpec("b", loop=EchoLoop())]))
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{server.url}/agents/b/v1/rollout/init",
                                         json=gate.init_body(rollout_id="busy", messages=QUESTION))
        assert response.status_code == 202
        gate.set_tools("busy", None)
        await asyncio.sleep(0.15)  # b's model call is now waiting on the policy
        await server.close()
    assert [c["status"] for c in gate.callbacks("busy")] == ["COMPLETED"]
    assert len(gate.chat_requests("busy")) == 1


def test_url_safe_name_turns_free_text_into_an_agent_name() -> None:
    from osmosis_compat.server.agents import url_safe_name

    assert url_safe_name("My calc workflow!") == "My-calc-workflow"
    assert url_safe_name("calc_v2.1") == "calc_v2.1"
    assert url_safe_name("  ???  ") == "agent"
    AgentSpec(url_safe_name("x" * 300 + " y"), loop=EchoLoop())  # always a valid name
