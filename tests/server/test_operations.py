"""What an operator sees (issue 20 items 1, 2 and 6): ``/metrics`` on every app, liveness and readiness probes,
and the mixed server's ``/health`` with a key — real uvicorn servers on 127.0.0.1, real httpx."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from osmosis_compat.runtime.store import open_store
from osmosis_compat.server.agents import AgentSpec
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.server.mixed_app import create_mixed_app
from osmosis_compat.testing import FakePollingController, FakeTrainGate, FakeWorkflowController, ScriptedPolicy, serve_app_async
from osmosis_compat.workflow import LocalBackend
from tests.redis_server import RedisServer
from tests.server import calc_workflow
from tests.server.mixed_agents import QUESTION, calculator_loop
from tests.server.polling_agents import SleepyLoop, steered_app

KEY = "operator-test-key-0123456789"
PROMPT = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is 2 + 2?"}]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(sample name, sorted labels): value}`` of an exposition."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


async def scrape(client: httpx.AsyncClient, url: str, **headers: str) -> str:
    response = await client.get(f"{url}/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


def workflow_backend() -> LocalBackend:
    return LocalBackend(workflow=calc_workflow.CalcWorkflow, workflow_config=calc_workflow.config, grader=calc_workflow.CalcGrader)


async def test_metrics_count_every_protocols_rollouts_on_the_legacy_and_workflow_apps() -> None:
    gate, polling, callbacks = FakeTrainGate(ScriptedPolicy()), FakePollingController(ScriptedPolicy()), FakeWorkflowController(ScriptedPolicy())
    legacy = await serve_app_async(create_app(SleepyLoop()))
    workflow = await serve_app_async(steered_app(unlimited=True))
    try:
        async with gate.serve_async(), polling.serve_async(), callbacks.serve_async(), httpx.AsyncClient() as client:
            before = await scrape(client, legacy.url)
            record = await gate.run_rollout(legacy.url, rollout_id="m-legacy", messages=QUESTION, metadata={})
            assert record.status == "COMPLETED"
            polled = await polling.run_rollout(legacy.url, rollout_id="m-poll", initial_messages=PROMPT, label="4")
            assert polled.status == "success"
            called = await callbacks.run_rollout(workflow.url, rollout_id="m-wf", initial_messages=PROMPT, label="4")
            assert called.completion["status"] == "success"
            after = await scrape(client, workflow.url)  # one process: every app shows the same figures
            bad = await client.post(f"{workflow.url}/rollout", json=callbacks.rollout_body(rollout_id="m-poll-wf", initial_messages=PROMPT))
            await callbacks.wait_for_callbacks("m-poll-wf")
            again = await polling.admit(workflow.url, rollout_id="m-poll-wf-2", initial_messages=PROMPT, label="4")
            await polling.wait_for_result(workflow.url, again)
            with pytest.raises(Exception):
                await polling.admit(workflow.url, rollout_id="m-poll-wf-2", initial_messages=PROMPT)
            last = await scrape(client, legacy.url)
    finally:
        await polling.aclose()
        await legacy.close()
        await workflow.close()
    assert bad.status_code == 200

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("osmosis_rollouts_admitted_total", protocol="legacy", agent="sleepy") == 1
    assert grew("osmosis_rollouts_admitted_total", protocol="polling", agent="sleepy") == 1
    assert grew("osmosis_rollouts_admitted_total", protocol="workflow", agent="steered") == 1
    assert grew("osmosis_rollouts_finished_total", protocol="legacy", agent="sleepy", outcome="success") == 1
    assert grew("osmosis_rollouts_finished_total", protocol="polling", agent="sleepy", outcome="success") == 1
    assert grew("osmosis_rollout_duration_seconds_count", protocol="legacy", agent="sleepy", outcome="success") == 1
    assert grew("osmosis_model_call_duration_seconds_count", protocol="legacy", agent="sleepy", outcome="ok") == 1
    assert grew("osmosis_model_call_duration_seconds_count", protocol="polling", agent="sleepy", outcome="ok") == 1
    assert grew("osmosis_callback_attempts_total", kind="completed", outcome="delivered") == 1
    assert grew("osmosis_callback_attempts_total", kind="completion", outcome="delivered") >= 1
    assert value(after, "osmosis_rollouts_running", protocol="legacy", agent="sleepy") == 0
    assert value(last, "osmosis_admissions_refused_total", protocol="polling", agent="steered", reason="duplicate") >= 1
    assert "osmosis_long_polls_waiting" in last and "osmosis_lease_expiries_total" in last
    assert "osmosis_store_round_trip_seconds" in last and "osmosis_cancels_total" in last


async def test_metrics_need_the_servers_key_and_the_probes_never_do() -> None:
    legacy = await serve_app_async(create_app(SleepyLoop(), api_key=KEY))
    workflow = await serve_app_async(steered_app(api_key=KEY))
    mixed = await serve_app_async(create_mixed_app([AgentSpec("calc", loop=calculator_loop()), AgentSpec("wf", backend=workflow_backend())], api_key=KEY))
    try:
        async with httpx.AsyncClient() as client:
            for server in (legacy, workflow, mixed):
                assert (await client.get(f"{server.url}/metrics")).status_code == 401
                await scrape(client, server.url, authorization=f"Bearer {KEY}")
                for probe, body in (("/livez", {"status": "alive"}), ("/readyz", {"status": "ready"})):
                    answer = await client.get(f"{server.url}{probe}")
                    assert (answer.status_code, answer.json()) == (200, body), (server.url, probe)
    finally:
        for server in (legacy, workflow, mixed):
            await server.close()


async def test_the_mixed_server_with_a_key_reports_its_keyed_workflow_healthy() -> None:
    """It reported a healthy keyed workflow as {"status": "unavailable", "http_status": 401}, even with the key."""
    app = create_mixed_app([AgentSpec("calc", loop=calculator_loop()), AgentSpec("wf", backend=workflow_backend())], api_key=KEY)
    server = await serve_app_async(app)
    try:
        async with httpx.AsyncClient() as client:
            for headers in ({}, {"authorization": f"Bearer {KEY}"}):
                health = (await client.get(f"{server.url}/health", headers=headers)).json()
                assert health["agents"]["wf"]["health"]["status"] == "ok", health["agents"]["wf"]
                assert health["agents"]["calc"]["health"]["status"] == "healthy"
    finally:
        await server.close()


async def test_readiness_is_503_before_start_up_and_while_draining() -> None:
    app = create_app(SleepyLoop(), drain_timeout_seconds=5.0)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as client:  # no lifespan
        answer = await client.get("/readyz")
        assert (answer.status_code, answer.json()) == (503, {"status": "not ready", "reasons": ["starting"]})
        assert (await client.get("/livez")).status_code == 200

    # Draining: the engine stops admitting first (shutdown, or stop_admitting() ahead of it) while in-flight
    # rollouts finish; the probe says so as long as the server still answers HTTP.
    app = create_app(SleepyLoop())
    server = await serve_app_async(app)
    try:
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{server.url}/readyz")).status_code == 200
            app.state.rollout_engines[0].stop_admitting()
            answer = await client.get(f"{server.url}/readyz")
            assert (answer.status_code, answer.json()) == (503, {"status": "not ready", "reasons": ["shutting down"]})
    finally:
        await server.close()


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


async def test_readiness_is_503_while_the_store_is_unreachable(redis: RedisServer) -> None:
    server = await serve_app_async(create_app(SleepyLoop(), store=open_store(redis.url).namespaced("ready:")))
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            assert (await client.get(f"{server.url}/readyz")).status_code == 200
            redis.stop(save=False)
            try:
                answer = await client.get(f"{server.url}/readyz")
                assert answer.status_code == 503 and answer.json()["reasons"][0].startswith("rollout store unreachable")
                assert (await client.get(f"{server.url}/livez")).status_code == 200
            finally:
                redis.start()
            assert (await client.get(f"{server.url}/readyz")).status_code == 200
    finally:
        await server.close()


def test_the_serve_banner_labels_only_adapted_endpoints_adapted() -> None:
    """Every polling endpoint was labelled "(adapted)" (a protocol name compared with an agent kind)."""
    app = create_mixed_app([
        AgentSpec("calc", loop=calculator_loop()),
        AgentSpec("both", loop=calculator_loop(), expose="both"),
        AgentSpec("wf", backend=workflow_backend()),
    ], api_key=KEY)
    labels = {(name, protocol): app.adapted(name, protocol) for name in app.agents for protocol in app.endpoints(name)}
    assert labels == {
        ("calc", "legacy"): False, ("calc", "polling"): False,
        ("both", "legacy"): False, ("both", "workflow"): True, ("both", "polling"): True,
        ("wf", "workflow"): False, ("wf", "polling"): False,
    }


def test_serve_banner_shows_native_polling_endpoints_without_adapted(tmp_path: Any) -> None:
    import argparse

    from osmosis_compat.cli import serve

    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    args = parser.parse_args(["-m", f"calc={root}/examples/legacy/calculator_agent.py:agent_loop",
                              "-m", f"{root}/examples/modern/strands_calculator.py", "--no-validate", "--local"])
    banner = serve.plan_server(args).banner
    polling_lines = [line for line in banner.splitlines() if " polling " in line]
    assert len(polling_lines) == 2 and not any("(adapted)" in line for line in polling_lines), banner
