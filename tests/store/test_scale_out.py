"""Several server processes act as one rollout server on a real Redis (issue 13): osmosis-compat servers in child
processes (``ServerProcess``), a real ``redis-server`` per test, a round-robin proxy in front where a load balancer
would be.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_compat.testing import (
    FakePollingController,
    FakeTrainGate,
    FakeWorkflowController,
    ScriptedPolicy,
    serve_app,
)
from osmosis_compat.testing.recording import UnexpectedStatus
from tests.redis_server import RedisServer
from tests.store.proxy import RoundRobinProxy
from tests.upstream.servers import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
STEERED = ROOT / "tests/upstream/entrypoints/steered_03.py"
LEGACY = ROOT / "examples/legacy/calculator_agent.py"
PROMPT = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is 2 + 2?"}]
QUESTION = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "What is 12 + 30?"}]
SETTINGS = {"STEERED_WAIT": "0.5", "STEERED_LEASE": "1.0", "STEERED_RETENTION": "60"}


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@contextmanager
def processes(redis: RedisServer, path: Path = STEERED, count: int = 2, **env: str) -> Iterator[list[ServerProcess]]:
    with ExitStack() as stack:
        yield [
            stack.enter_context(ServerProcess(path, env={"OSMOSIS_COMPAT_STORE": redis.url, **SETTINGS, **env}))
            for _ in range(count)
        ]


@contextmanager
def behind_proxy(servers: list[ServerProcess]) -> Iterator[tuple[str, RoundRobinProxy]]:
    proxy = RoundRobinProxy([s.url for s in servers])
    with serve_app(proxy) as handle:
        yield handle.url, proxy


async def test_the_conformance_scenarios_hold_through_two_processes(redis: RedisServer) -> None:
    """The differential scenarios of tests/upstream/test_polling_conformance.py (proven there equal to the real
    0.3.8 server) observe the same through two processes behind a round-robin proxy as through one process."""
    from tests.upstream.test_polling_conformance import _observe

    with processes(redis, count=1) as [single]:
        alone = await _observe(single.url)
    redis.flush()  # a clean store for the second run: same ids
    with processes(redis) as servers, behind_proxy(servers) as (url, proxy):
        together = await _observe(url)
    assert min(proxy.hits) > 20  # both processes answered a fair share
    for scenario, observed in alone.items():
        assert together[scenario] == observed, scenario


async def test_any_process_answers_any_poll_cancel_and_duplicate(redis: RedisServer) -> None:
    controller = FakePollingController(ScriptedPolicy())
    with processes(redis) as (a, b):
        async with controller.serve_async():
            admission = await controller.admit(a.url, rollout_id="x-1", initial_messages=PROMPT, label="4", metadata={"sleep": 0.5})
            result, statuses, _ = await controller.wait_for_result(b.url, admission)  # polled on the other one
            assert result["status"] == "success" and result["sample"]["reward"] == 1.0
            with pytest.raises(UnexpectedStatus) as duplicate:
                await controller.admit(b.url, rollout_id="x-1", initial_messages=PROMPT)
            assert duplicate.value.status_code == 409
            running = await controller.admit(a.url, rollout_id="x-2", initial_messages=PROMPT, metadata={"sleep": 30})
            await asyncio.sleep(0.3)
            cancel = (await controller.cancel(b.url, ids=["x-2"])).json()
            assert cancel == {"dispositions": {"x-2": "cancelled_running"}}
            assert (await controller.poll(a.url, running)).json()["status"] == "cancelled"
            async with httpx.AsyncClient() as client:
                for _ in range(50):  # the task itself was cancelled in process a
                    if (await client.get(f"{a.url}/health")).json()["lifecycle"]["active_rollouts"] == 0:
                        break
                    await asyncio.sleep(0.05)
                assert (await client.get(f"{a.url}/health")).json()["lifecycle"]["active_rollouts"] == 0
            await controller.aclose()


async def test_duplicates_racing_on_two_processes_start_each_rollout_once(redis: RedisServer) -> None:
    controller = FakePollingController(ScriptedPolicy())
    with processes(redis, STEERED_LEASE="60", STEERED_WAIT="5") as (a, b):
        async with controller.serve_async():
            ids = [f"race-{i}" for i in range(40)]

            async def admit(url: str, rid: str) -> Any:
                try:
                    return await controller.admit(url, rollout_id=rid, initial_messages=PROMPT, label="4", metadata={"chat": True})
                except UnexpectedStatus as exc:
                    return exc.status_code

            answers = await asyncio.gather(*(admit(url, rid) for rid in ids for url in (a.url, b.url)))
            for i, rid in enumerate(ids):
                pair = answers[2 * i : 2 * i + 2]
                assert sorted(x if isinstance(x, int) else 202 for x in pair) == [202, 409], (rid, pair)
                winner = next(x for x in pair if not isinstance(x, int))
                final = (await controller.wait_for_result(a.url, winner))[0]
                assert final["status"] == "success", final
            calls = controller.chat_requests()
            await controller.aclose()
    assert sorted(r.rollout_id for r in calls) == sorted(ids)  # each rollout ran exactly once


async def test_kill_9_of_a_process_fails_its_rollouts_promptly(redis: RedisServer) -> None:
    controller = FakePollingController(ScriptedPolicy())
    with processes(redis, STEERED_LEASE="120", STEERED_WAIT="30") as (a, b):
        async with controller.serve_async():
            admissions = [
                await controller.admit(a.url, rollout_id=f"k-{i}", initial_messages=PROMPT, metadata={"sleep": 120})
                for i in range(5)
            ]
            await asyncio.sleep(0.5)
            polls = [asyncio.create_task(controller.wait_for_result(b.url, adm, timeout=60)) for adm in admissions]
            await asyncio.sleep(0.3)
            a.kill()
            started = time.monotonic()
            results = await asyncio.gather(*polls)
            elapsed = time.monotonic() - started
            await controller.aclose()
    for result, _, _ in results:
        assert result["status"] == "failure" and result["err_category"] == "internal_error"
        assert result["err_message"] == "server instance lost"
    # the heartbeat (every 2 s, 6 s TTL) and one sweep: far sooner than the 120 s lease
    assert elapsed < 15, elapsed


async def test_redis_restart_mid_run_loses_nothing(redis: RedisServer) -> None:
    controller = FakePollingController(ScriptedPolicy())
    with processes(redis, STEERED_LEASE="120", STEERED_WAIT="5") as (a, b):
        async with controller.serve_async():
            held = await controller.run_rollout(a.url, rollout_id="before", initial_messages=PROMPT, label="4")
            running = [
                await controller.admit(a.url, rollout_id=f"r-{i}", initial_messages=PROMPT, label="4", metadata={"sleep": 2.5})
                for i in range(4)
            ]
            redis.stop()  # SHUTDOWN SAVE: the dataset is kept
            async with httpx.AsyncClient() as client:
                body = controller.rollout_body(rollout_id="during", initial_messages=PROMPT)
                refused = await client.post(f"{b.url}/rollout", json=body)
            await asyncio.sleep(1.0)
            redis.start()
            assert refused.status_code == 503 and "store" in refused.json()["detail"]
            results = [await controller.wait_for_result(b.url, adm, timeout=60) for adm in running]
            again = await controller.poll(b.url, held.admission)
            after = await controller.run_rollout(b.url, rollout_id="during", initial_messages=PROMPT, label="4")
            await controller.aclose()
    assert all(result["status"] == "success" and result["sample"]["reward"] == 1.0 for result, _, _ in results)
    assert again.json() == held.result  # held across the restart
    assert after.status == "success"  # nothing half-admitted: the refused id is free


async def test_a_restarted_server_keeps_held_results(redis: RedisServer) -> None:
    controller = FakePollingController(ScriptedPolicy())
    async with controller.serve_async():
        with processes(redis, count=1) as [first]:
            record = await controller.run_rollout(first.url, rollout_id="kept", initial_messages=PROMPT, label="4")
            port = first.port
        with ServerProcess(STEERED, env={"OSMOSIS_COMPAT_STORE": redis.url, **SETTINGS}, port=port) as second:
            again = await controller.poll(second.url, record.admission)
        await controller.aclose()
    assert again.status_code == 200 and again.json() == record.result


def test_an_unreachable_store_at_start_up_is_a_clear_error() -> None:
    server = ServerProcess(STEERED, env={"OSMOSIS_COMPAT_STORE": "redis://127.0.0.1:1/0", **SETTINGS})
    with pytest.raises(AssertionError) as failed:
        with server:
            pass
    assert "cannot reach the rollout store at redis://127.0.0.1:1/0" in str(failed.value)


async def test_legacy_and_02_callback_idempotency_holds_across_processes(redis: RedisServer) -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    with processes(redis, LEGACY) as (a, b):
        async with gate.serve_async():
            records = await asyncio.gather(
                *(
                    gate.run_rollout(url, rollout_id="same", messages=QUESTION, metadata={"ground_truth": "42"}, timeout=30)
                    for url in (a.url, b.url)
                ),
                return_exceptions=True,
            )
    ok = [r for r in records if not isinstance(r, BaseException)]
    assert len(ok) == 2 and all(r.init_status_code == 202 for r in ok), records
    assert len({json.dumps(r.init_response, sort_keys=True) for r in ok}) == 1  # the leader's answer, from either one
    assert len(gate.callbacks("same")) == 1  # it ran once

    controller = FakeWorkflowController(ScriptedPolicy())
    with processes(redis) as (a, b):
        async with controller.serve_async():
            async with httpx.AsyncClient() as client:
                body = controller.rollout_body(rollout_id="wf-same", initial_messages=PROMPT, label="4", metadata={"sleep": 1})
                answers = await asyncio.gather(*(client.post(f"{url}/rollout", json=body) for url in (a.url, b.url)))
            assert [r.status_code for r in answers] == [200, 200]
            await controller.wait_for_callbacks("wf-same", "grader", timeout=30)
            await asyncio.sleep(0.5)
    assert len(controller.completion_callbacks("wf-same")) == 1


def test_serve_with_workers_shares_one_store(redis: RedisServer) -> None:
    """... and its /metrics, whichever worker answers, counts every worker's rollouts (issue 20 item 1); its log
    lines are JSON with --log-format json (item 3)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    command = [sys.executable, "-m", "osmosis_compat", "serve", "-m", f"{LEGACY}:agent_loop", "--local", "-H", "127.0.0.1",
               "-p", str(port), "--workers", "2", "--store", redis.url, "--no-validate", "--log-format", "json"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        process_ids = set()
        for _ in range(40):
            with httpx.Client() as fresh:  # new connections: the kernel spreads them over the workers
                process_ids.add(fresh.get(f"{url}/health").json()["process_id"])
        assert len(process_ids) == 2

        async def drive() -> list[Any]:
            controller = FakePollingController(ScriptedPolicy())
            async with controller.serve_async():
                records = await asyncio.gather(
                    *(controller.run_rollout(url, rollout_id=f"w-{i}", initial_messages=QUESTION, label="42") for i in range(20))
                )
                await controller.aclose()
            return records

        records = asyncio.run(drive())
        assert all(r.status == "success" and r.reward == 1.0 for r in records)
        admitted = set()
        for _ in range(20):
            with httpx.Client() as fresh:  # each scrape may reach either worker: all must count all 20
                text = fresh.get(f"{url}/metrics").text
            admitted.add(next(
                (line.rsplit(" ", 1)[1] for line in text.splitlines()
                 if line.startswith('osmosis_rollouts_admitted_total{agent="calculator",protocol="polling"}')), None))
        assert admitted == {"20.0"}, admitted
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0]
    assert "Workers:  2 processes" in output
    logged = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert logged and all({"timestamp", "level", "logger", "message"} <= set(entry) for entry in logged), output[-2000:]


def test_serve_refuses_several_workers_without_a_shared_store() -> None:
    command = [sys.executable, "-m", "osmosis_compat", "serve", "-m", f"{LEGACY}:agent_loop", "--local",
               "-p", str(free_port()), "--workers", "2"]
    env = {k: v for k, v in os.environ.items() if k != "OSMOSIS_COMPAT_STORE"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Error: --workers 2 needs a shared rollout store" in done.stderr and "--store redis://" in done.stderr


async def test_legacy_admission_while_the_store_is_down_is_503(redis: RedisServer) -> None:
    gate = FakeTrainGate(ScriptedPolicy())
    with processes(redis, LEGACY, count=1) as [server]:
        async with gate.serve_async():
            redis.stop()
            try:
                with pytest.raises(UnexpectedStatus) as refused:
                    await gate.run_rollout(server.url, rollout_id="down", messages=QUESTION, metadata={"ground_truth": "42"})
            finally:
                redis.start()
            assert refused.value.status_code == 503
            record = await gate.run_rollout(server.url, rollout_id="down", messages=QUESTION, metadata={"ground_truth": "42"})
    assert record.callback["status"] == "COMPLETED"  # nothing half-admitted: the id starts afresh
