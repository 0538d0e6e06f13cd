"""The 0.3.8 polling protocol (spec/polling-protocol.md) at the HTTP level: real uvicorn servers on 127.0.0.1, the
fake 0.3.8 controller (FakePollingController) driving them with real httpx.

The same protocol is driven by the real osmosis-ai 0.3.8 ``RolloutClient`` in tests/upstream/test_polling_conformance.py.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_compat.cli.loading import _import_file
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import FakePollingController, FakeWorkflowController, ScriptedPolicy, serve_app_async
from osmosis_compat.testing.recording import UnexpectedStatus

from tests.server import polling_agents
from tests.server.polling_agents import SleepyLoop, steered_app

ROOT = Path(__file__).resolve().parents[2]
PROMPT = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is 2 + 2?"}]
CALC_ROWS = [line for line in (ROOT / "examples/modern/data/calculator.jsonl").read_text().splitlines() if line]


def calc_prompt(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": row["system_prompt"]}, {"role": "user", "content": row["user_prompt"]}]


@asynccontextmanager
async def served(app: Any, policy: Any = None, **controller_options: Any):
    """``(server url, controller)`` for ``app`` driven by a fresh fake 0.3.8 controller."""
    controller = FakePollingController(policy or ScriptedPolicy(), **controller_options)
    handle = await serve_app_async(app)
    try:
        async with controller.serve_async():
            yield handle.url, controller
    finally:
        await controller.aclose()
        await handle.close()


def in_order(statuses: list[str]) -> bool:
    """Statuses a client sees only move forward (each poll reports the change after the one it found)."""
    order = ["queued", "running", "grading", "success"]
    return statuses[0] == "queued" and statuses[-1] == "success" and [order.index(s) for s in statuses] == sorted(
        order.index(s) for s in statuses
    )


def example_app(relative: str) -> Any:
    return _import_file(str(ROOT / relative)).app


# -- every kind of agent, files unchanged -------------------------------------------------------------------


async def test_unchanged_legacy_file_answers_the_polling_controller() -> None:
    """examples/legacy/calculator_agent.py, untouched: `app = create_app(agent_loop)` also speaks 0.3.8."""
    async with served(example_app("examples/legacy/calculator_agent.py")) as (url, controller):
        for index, line in enumerate(CALC_ROWS):
            row = json.loads(line)
            record = await controller.run_rollout(
                url, rollout_id=f"legacy-{index}", initial_messages=calc_prompt(row), label=row["ground_truth"]
            )
            assert record.status == "success", record.result
            assert record.reward == 1.0
            assert in_order(record.statuses)
            assert set(record.result) == {"rollout_id", "status", "sample", "err_message", "err_category"}
            assert set(record.sample) == {"messages", "label", "reward", "remove_sample", "metrics", "extra_fields"}
            assert record.sample["messages"][-1]["role"] == "assistant"
            # the loop's non-streaming calls go to the per-rollout URL with the per-rollout bearer
            assert record.chat_requests, "the loop made no model call"
            for call in record.chat_requests:
                assert call.path == f"/v1/rollouts/legacy-{index}/chat/completions"
                assert call.headers["authorization"] == f"Bearer {record.admission.llm_api_key}"
                assert "x-rollout-id" not in call.headers and "x-sample-id" not in call.headers
                assert not call.body.get("stream")
                assert "rollout_id" not in call.body  # identity is in the URL
                # a polling controller never reads an init response: the tools travel in each body
                assert {t["function"]["name"] for t in call.body["tools"]} >= {"add", "multiply"}


@pytest.mark.parametrize(
    "entrypoint",
    [
        "examples/modern/strands_calculator.py",  # written for 0.2.31
        "examples/modern/openai_agents_calculator.py",  # written for 0.2.31
        "examples/modern/v03/strands_calculator.py",  # written for 0.3
        "examples/modern/v03/openai_agents_calculator.py",  # written for 0.3
    ],
)
async def test_workflows_of_both_eras_answer_the_polling_controller(entrypoint: str) -> None:
    async with served(example_app(entrypoint)) as (url, controller):
        row = json.loads(CALC_ROWS[2])
        record = await controller.run_rollout(
            url, rollout_id="wf-1", initial_messages=calc_prompt(row), label=row["ground_truth"]
        )
    assert record.status == "success", record.result
    assert record.reward == 1.0
    assert in_order(record.statuses)
    assert "id" not in record.sample and "trajectory_messages" not in record.sample
    for call in record.chat_requests:
        assert call.path == "/v1/rollouts/wf-1/chat/completions"
        assert call.headers["authorization"] == f"Bearer {record.admission.llm_api_key}"
        assert not any(h.startswith("x-rollout") or h == "x-sample-id" for h in call.headers)  # 0.3.8 sends none
        assert call.body["stream"] is True and call.body["model"] == "osmosis-rollout"


async def test_one_server_speaks_both_workflow_protocols() -> None:
    """A 0.2.31 controller (callback URLs in the body) and a 0.3.8 one (none) on the same create_rollout_server."""
    app = example_app("examples/modern/strands_calculator.py")
    row = json.loads(CALC_ROWS[0])
    async with served(app) as (url, polling):
        callbacks = FakeWorkflowController(ScriptedPolicy())
        async with callbacks.serve_async():
            old = await callbacks.run_rollout(url, rollout_id="cb-1", initial_messages=calc_prompt(row), label="42")
            new = await polling.run_rollout(url, rollout_id="poll-1", initial_messages=calc_prompt(row), label="42")
    assert old.status_code == 200 and old.response_body == {}
    assert old.completion["status"] == "success" and old.rewards == {"calculator": 1.0}
    assert new.status == "success" and new.reward == 1.0


async def test_a_02_body_on_a_legacy_server_gets_a_clear_422() -> None:
    async with served(create_app(SleepyLoop())) as (url, _):
        async with httpx.AsyncClient() as client:
            body = {
                "rollout_id": "x",
                "initial_messages": PROMPT,
                "chat_completions_url": "http://127.0.0.1:1/v1",
                "completion_callback_url": "http://127.0.0.1:1/cb",
            }
            response = await client.post(f"{url}/rollout", json=body)
    assert response.status_code == 422 and "--expose workflow" in response.json()["detail"]


# -- admission ------------------------------------------------------------------------------------------------


async def test_admission_answers_202_with_the_lease_and_server_timings() -> None:
    app = steered_app(result_wait_timeout_sec=2.0, polling_lease_timeout_sec=6.0)
    async with served(app) as (url, controller):
        admission = await controller.admit(url, rollout_id="a-1", initial_messages=PROMPT, label="4")
        assert admission.body["status"] == "queued" and admission.body["rollout_id"] == "a-1"
        assert len(admission.lease_token) == 43  # secrets.token_urlsafe(32)
        assert (admission.wait_seconds, admission.lease_seconds) == (2.0, 6.0)
        await controller.wait_for_result(url, admission)


async def test_defaults_are_upstreams() -> None:
    async with served(steered_app()) as (url, controller):
        admission = await controller.admit(url, rollout_id="d-1", initial_messages=PROMPT)
        assert (admission.wait_seconds, admission.lease_seconds) == (30.0, 120.0)


async def test_duplicate_rollout_id_is_409_while_running_and_while_retained() -> None:
    async with served(steered_app()) as (url, controller):
        admission = await controller.admit(url, rollout_id="dup", initial_messages=PROMPT, metadata={"sleep": 0.3})
        with pytest.raises(UnexpectedStatus) as running:
            await controller.admit(url, rollout_id="dup", initial_messages=PROMPT)
        assert running.value.status_code == 409 and running.value.body == {"detail": "rollout_id is already registered"}
        result, _, _ = await controller.wait_for_result(url, admission)
        assert result["status"] == "success"
        with pytest.raises(UnexpectedStatus) as retained:
            await controller.admit(url, rollout_id="dup", initial_messages=PROMPT)
        assert retained.value.status_code == 409
    assert polling_agents.started.count("dup") == 1


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"rollout_id": "a/b"}, "rollout_id"),
        ({"rollout_id": ".."}, "rollout_id"),
        ({"rollout_id": "x\u0001y"}, "rollout_id"),
        ({"llm_api_key": ""}, "llm_api_key"),
        ({"llm_api_key": "k\r\nX-Injected: 1"}, "llm_api_key"),
        ({"chat_completions_url": None}, "chat_completions_url"),
        ({"chat_completions_url": ""}, "chat_completions_url"),
        ({"chat_completions_url": "not a url"}, "chat_completions_url"),
        ({"agent_timeout_sec": "NaN"}, "agent_timeout_sec"),
        ({"grader_timeout_sec": "Infinity"}, "grader_timeout_sec"),
        ({"initial_messages": "hi"}, "initial_messages"),
    ],
)
async def test_bad_admission_bodies_are_422_and_start_nothing(change: dict[str, Any], where: str) -> None:
    async with served(steered_app()) as (url, controller):
        body = controller.rollout_body(rollout_id="bad-1", initial_messages=PROMPT, llm_api_key="k")
        body.update(change)
        if body["chat_completions_url"] is None:
            del body["chat_completions_url"]
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{url}/rollout", json=body)
            assert response.status_code == 422, response.text
            assert any(where in map(str, error["loc"]) for error in response.json()["detail"])
            assert (await client.get(f"{url}/health")).json()["lifecycle"]["active_rollouts"] == 0


async def test_llm_api_key_null_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_API_KEY", "from-env")
    async with served(steered_app(), check_keys=False) as (url, controller):
        body = controller.rollout_body(rollout_id="env-1", initial_messages=PROMPT, metadata={"chat": True})
        async with httpx.AsyncClient() as client:
            assert (await client.post(f"{url}/rollout", json=body)).status_code == 202
        await asyncio.sleep(0.3)
        calls = controller.chat_requests("env-1")
    assert calls and calls[0].headers["authorization"] == "Bearer from-env"


async def test_full_server_answers_429_with_retry_after() -> None:
    async with served(steered_app(max_pending=1)) as (url, controller):
        first = await controller.admit(url, rollout_id="full-1", initial_messages=PROMPT, metadata={"sleep": 0.5})
        async with httpx.AsyncClient() as client:
            body = controller.rollout_body(rollout_id="full-2", initial_messages=PROMPT)
            response = await client.post(f"{url}/rollout", json=body)
        assert response.status_code == 429 and response.headers["retry-after"] == "5"
        assert response.json() == {"detail": "rollout queue is full; retry later"}
        await controller.wait_for_result(url, first)


# -- the long poll ---------------------------------------------------------------------------------------------


async def test_poll_blocks_until_the_status_changes_then_returns_the_final_result() -> None:
    async with served(steered_app(result_wait_timeout_sec=5.0, polling_lease_timeout_sec=10.0)) as (url, controller):
        admission = await controller.admit(url, rollout_id="p-1", initial_messages=PROMPT, label="4", metadata={"sleep": 0.4})
        loop = asyncio.get_running_loop()
        started = loop.time()
        first = (await controller.poll(url, admission)).json()
        # queued/running -> grading: the poll answered on the change, well before the 5 s wait
        assert first["status"] in ("running", "grading", "success")
        assert loop.time() - started < 3.0
        result, statuses, _ = await controller.wait_for_result(url, admission)
        assert result == {
            "rollout_id": "p-1",
            "status": "success",
            "sample": {
                "messages": PROMPT + [{"role": "assistant", "content": "The answer is 4."}],
                "label": None,
                "reward": 1.0,
                "remove_sample": False,
                "metrics": {},
                "extra_fields": {},
            },
            "err_message": None,
            "err_category": None,
        }
        # retained: polled again, the same final body
        assert (await controller.poll(url, admission)).json() == result


async def test_poll_without_a_change_returns_the_status_after_the_wait() -> None:
    async with served(steered_app(result_wait_timeout_sec=0.3, polling_lease_timeout_sec=5.0)) as (url, controller):
        admission = await controller.admit(url, rollout_id="w-1", initial_messages=PROMPT, metadata={"sleep": 2})
        await asyncio.sleep(0.1)  # let it reach "running"
        loop = asyncio.get_running_loop()
        started = loop.time()
        body = (await controller.poll(url, admission)).json()
        assert body == {"rollout_id": "w-1", "status": "running", "sample": None, "err_message": None, "err_category": None}
        assert 0.25 <= loop.time() - started < 1.5
        await controller.cancel(url, ids=["w-1"])


async def test_wrong_lease_is_403_unknown_id_is_404_missing_header_is_422() -> None:
    async with served(steered_app()) as (url, controller):
        admission = await controller.admit(url, rollout_id="l-1", initial_messages=PROMPT)
        wrong = await controller.poll(url, admission, lease_token="not-the-token")
        assert (wrong.status_code, wrong.json()) == (403, {"detail": "invalid polling lease"})
        await controller.wait_for_result(url, admission)
        after = await controller.poll(url, admission, lease_token="not-the-token")
        assert after.status_code == 403  # also once finished
        async with httpx.AsyncClient() as client:
            unknown = await client.get(f"{url}/rollout/never/result", headers={"X-Osmosis-Rollout-Lease": "x"})
            assert (unknown.status_code, unknown.json()) == (404, {"detail": "unknown rollout_id"})
            missing = await client.get(f"{url}/rollout/l-1/result")
            assert missing.status_code == 422
            assert missing.json()["detail"][0]["loc"] == ["header", "X-Osmosis-Rollout-Lease"]


async def test_grade_false_gives_success_with_the_sample_and_no_reward() -> None:
    async with served(steered_app()) as (url, controller):
        record = await controller.run_rollout(url, rollout_id="g-1", initial_messages=PROMPT, label="4", grade=False)
    assert record.status == "success" and record.sample is not None and record.reward is None
    assert "grading" not in record.statuses


async def test_workflow_output_becomes_the_sample_with_the_label() -> None:
    async with served(steered_app()) as (url, controller):
        record = await controller.run_rollout(url, rollout_id="o-1", initial_messages=PROMPT, label="4", metadata={"output": True})
    assert record.status == "success" and record.reward == 1.0
    assert record.sample["label"] == "4" and record.sample["metrics"] == {"turns": 1.0}


async def test_no_grader_input_fails_and_says_why() -> None:
    async with served(steered_app()) as (url, controller):
        record = await controller.run_rollout(url, rollout_id="ng-1", initial_messages=PROMPT)
    assert record.status == "failure" and record.sample is None
    assert record.result["err_message"] == "grading needs a label or metadata, and the request had neither"


async def test_workflow_failure_is_agent_error() -> None:
    async with served(steered_app()) as (url, controller):
        record = await controller.run_rollout(url, rollout_id="f-1", initial_messages=PROMPT, metadata={"fail": True})
    assert (record.status, record.result["err_category"], record.result["err_message"]) == (
        "failure",
        "agent_error",
        "asked to fail",
    )


async def test_several_samples_fail_the_rollout_naming_them() -> None:
    """The rule for a 0.2.31 workflow with several samples (docs/serving.md): it has no 0.3 form."""
    async with served(steered_app()) as (url, controller):
        record = await controller.run_rollout(url, rollout_id="m-1", initial_messages=PROMPT, label="4", metadata={"samples": 2})
    assert record.status == "failure" and record.result["err_category"] == "validation_error"
    assert "2 samples ('agent_0', 'agent_1')" in record.result["err_message"]
    assert record.sample is None


# -- deadlines ------------------------------------------------------------------------------------------------


async def test_agent_timeout_is_enforced_and_the_workflow_cancelled() -> None:
    async with served(steered_app()) as (url, controller):
        record = await controller.run_rollout(
            url, rollout_id="t-1", initial_messages=PROMPT, label="4", metadata={"sleep": 5}, agent_timeout_sec=0.3
        )
    assert (record.status, record.result["err_category"]) == ("failure", "timeout")
    assert record.result["err_message"] == "workflow exceeded its 0.3s deadline"
    assert "t-1" in polling_agents.cancelled


async def test_grader_timeout_is_enforced() -> None:
    async with served(steered_app()) as (url, controller):
        record = await controller.run_rollout(
            url, rollout_id="t-2", initial_messages=PROMPT, label="4", metadata={"grader_sleep": 5}, grader_timeout_sec=0.2
        )
    assert (record.status, record.result["err_category"]) == ("failure", "timeout")
    assert record.result["err_message"] == "grader exceeded its 0.2s deadline"
    assert record.reward is None  # nulled on failure


async def test_legacy_loop_agent_timeout_is_enforced() -> None:
    async with served(create_app(SleepyLoop())) as (url, controller):
        record = await controller.run_rollout(
            url, rollout_id="t-3", initial_messages=PROMPT, metadata={"sleep": 5}, agent_timeout_sec=0.2
        )
    assert (record.status, record.result["err_category"]) == ("failure", "timeout")
    assert "t-3" in polling_agents.cancelled


# -- leases ---------------------------------------------------------------------------------------------------


async def test_unrenewed_lease_fails_the_rollout_and_cancels_it() -> None:
    async with served(steered_app(result_wait_timeout_sec=0.2, polling_lease_timeout_sec=0.5)) as (url, controller):
        admission = await controller.admit(url, rollout_id="le-1", initial_messages=PROMPT, metadata={"sleep": 5})
        await asyncio.sleep(1.0)  # nobody polls
        body = (await controller.poll(url, admission)).json()
    assert body == {
        "rollout_id": "le-1",
        "status": "failure",
        "sample": None,
        "err_message": "polling lease expired",
        "err_category": "lease_expired",
    }
    assert "le-1" in polling_agents.cancelled


async def test_polls_renew_the_lease() -> None:
    async with served(steered_app(result_wait_timeout_sec=0.2, polling_lease_timeout_sec=0.5)) as (url, controller):
        record = await controller.run_rollout(url, rollout_id="le-2", initial_messages=PROMPT, label="4", metadata={"sleep": 1.5})
    assert record.status == "success" and record.polls >= 5


async def test_a_rollout_finished_before_its_lease_keeps_its_result() -> None:
    async with served(steered_app(result_wait_timeout_sec=0.1, polling_lease_timeout_sec=0.3)) as (url, controller):
        admission = await controller.admit(url, rollout_id="le-3", initial_messages=PROMPT, label="4")
        await asyncio.sleep(0.8)  # never polled, lease long gone, but the rollout finished in time
        body = (await controller.poll(url, admission)).json()
    assert body["status"] == "success" and body["sample"]["reward"] == 1.0


async def test_results_are_dropped_after_the_retention() -> None:
    app = steered_app(result_wait_timeout_sec=0.1, polling_lease_timeout_sec=0.3, result_retention_sec=0.3)
    async with served(app) as (url, controller):
        admission = await controller.admit(url, rollout_id="r-1", initial_messages=PROMPT, label="4")
        result, _, _ = await controller.wait_for_result(url, admission)
        await asyncio.sleep(0.5)
        gone = await controller.poll(url, admission)
        assert gone.status_code == 404
        # the id is free again
        again = await controller.admit(url, rollout_id="r-1", initial_messages=PROMPT, label="4")
        assert (await controller.wait_for_result(url, again))[0]["status"] == "success"


# -- cancel ---------------------------------------------------------------------------------------------------


async def test_cancel_by_ids_prefix_and_all() -> None:
    async with served(steered_app()) as (url, controller):
        admissions = {
            rid: await controller.admit(url, rollout_id=rid, initial_messages=PROMPT, metadata={"sleep": 10})
            for rid in ("c-a1", "c-a2", "c-b1", "other")
        }
        await asyncio.sleep(0.1)
        by_ids = (await controller.cancel(url, ids=["c-a1", "nope"])).json()
        assert by_ids == {"dispositions": {"c-a1": "cancelled_running", "nope": "not_found"}}
        again = (await controller.cancel(url, ids=["c-a1"])).json()
        assert again == {"dispositions": {"c-a1": "not_found"}}
        # prefix and all select every retained rollout; finished ones are "not_found" (0.3.8)
        by_prefix = (await controller.cancel(url, prefix="c-")).json()
        assert by_prefix == {"dispositions": {"c-a1": "not_found", "c-a2": "cancelled_running", "c-b1": "cancelled_running"}}
        everything = (await controller.cancel(url, all=True)).json()["dispositions"]
        assert everything == {"c-a1": "not_found", "c-a2": "not_found", "c-b1": "not_found", "other": "cancelled_running"}
        for rid, admission in admissions.items():
            body = (await controller.poll(url, admission)).json()
            assert body == {"rollout_id": rid, "status": "cancelled", "sample": None, "err_message": "cancelled", "err_category": None}
        async with httpx.AsyncClient() as client:
            health = (await client.get(f"{url}/health")).json()
        assert health["lifecycle"]["active_rollouts"] == 0
    assert {"c-a1", "c-a2", "c-b1", "other"} <= set(polling_agents.cancelled)


@pytest.mark.parametrize("body", [{}, {"ids": ["a"], "prefix": "a"}, {"all": True, "ids": []}, {"prefix": "x", "all": True}])
async def test_cancel_needs_exactly_one_selector(body: dict[str, Any]) -> None:
    async with served(steered_app()) as (url, _):
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{url}/rollout/cancel", json=body)
    assert (response.status_code, response.json()) == (422, {"detail": "pass exactly one selector: ids, prefix, or all"})


async def test_cancel_of_a_queued_rollout() -> None:
    """A legacy server with one slot: the second rollout waits queued and is cancelled there."""
    async with served(create_app(SleepyLoop(), max_concurrent=1)) as (url, controller):
        await controller.admit(url, rollout_id="q-1", initial_messages=PROMPT, metadata={"sleep": 5})
        queued = await controller.admit(url, rollout_id="q-2", initial_messages=PROMPT)
        await asyncio.sleep(0.1)
        response = (await controller.cancel(url, ids=["q-2"])).json()
        assert response == {"dispositions": {"q-2": "cancelled_queued"}}
        assert (await controller.poll(url, queued)).json()["status"] == "cancelled"
        await controller.cancel(url, all=True)
    assert "q-2" not in polling_agents.started


async def test_cancel_racing_completion_ends_in_exactly_one_terminal_result() -> None:
    async with served(steered_app()) as (url, controller):
        admissions = [
            await controller.admit(url, rollout_id=f"race-{i}", initial_messages=PROMPT, label="4", metadata={"sleep": 0.05 + (i % 5) * 0.01})
            for i in range(30)
        ]
        await asyncio.sleep(0.07)
        dispositions = (await controller.cancel(url, prefix="race-")).json()["dispositions"]
        for admission in admissions:
            result, _, _ = await controller.wait_for_result(url, admission)
            cancelled = dispositions.get(admission.rollout_id, "not_found").startswith("cancelled")
            # the cancel won exactly when it said so; otherwise the completion stands
            assert result["status"] == ("cancelled" if cancelled else "success"), (admission.rollout_id, dispositions)
            assert (await controller.poll(url, admission)).json() == result  # and it never changes


# -- life cycle -----------------------------------------------------------------------------------------------


async def test_health_reports_identity_lifecycle_and_capacity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_OSMOSIS_ROLLOUT_INSTANCE_ID", "pod-7")
    for app in (steered_app(), create_app(SleepyLoop())):
        async with served(app) as (url, _):
            async with httpx.AsyncClient() as client:
                health = (await client.get(f"{url}/health")).json()
        assert health["instance_id"] == "pod-7" and len(health["process_id"]) == 36
        assert health["lifecycle"] == {"accepting_rollouts": True, "active_rollouts": 0}
        assert "max_concurrent" in health["concurrency"]


async def test_server_bearer_guards_every_route() -> None:
    app = steered_app(api_key="server-key")
    async with served(app, server_api_key="server-key") as (url, controller):
        async with httpx.AsyncClient() as client:
            for method, path in (("GET", "/health"), ("POST", "/rollout"), ("GET", "/rollout/x/result"), ("POST", "/rollout/cancel")):
                response = await client.request(method, url + path, json={})
                assert (response.status_code, response.json()) == (401, {"detail": "unauthorized"}), path
        record = await controller.run_rollout(url, rollout_id="auth-1", initial_messages=PROMPT, label="4")
    assert record.status == "success"


async def test_legacy_server_key_guards_the_polling_routes() -> None:
    app = create_app(SleepyLoop(), api_key="legacy-key")
    async with served(app, server_api_key="legacy-key") as (url, controller):
        async with httpx.AsyncClient() as client:
            body = controller.rollout_body(rollout_id="k-0", initial_messages=PROMPT)
            assert (await client.post(f"{url}/rollout", json=body)).status_code == 401
            assert (await client.post(f"{url}/rollout/cancel", json={"all": True})).status_code == 401
        record = await controller.run_rollout(url, rollout_id="k-1", initial_messages=PROMPT)
    assert record.status == "success" and record.reward == 1.0


async def test_shutdown_ends_in_flight_rollouts_in_failure_and_refuses_new_ones() -> None:
    app = steered_app(drain_timeout_seconds=0.2)
    engine = app.state.rollout_engine
    async with served(app) as (url, controller):
        admission = await controller.admit(url, rollout_id="s-1", initial_messages=PROMPT, metadata={"sleep": 10})
        poll = asyncio.create_task(controller.wait_for_result(url, admission, timeout=10))
        await asyncio.sleep(0.1)
        drain = asyncio.create_task(engine.shutdown())  # what the server's lifespan does on SIGTERM
        await asyncio.sleep(0.02)
        with pytest.raises(UnexpectedStatus) as refused:
            await controller.admit(url, rollout_id="s-2", initial_messages=PROMPT)
        assert refused.value.status_code == 503
        assert refused.value.body == {"detail": "rollout server is shutting down"}
        await drain
        result, _, _ = await poll
    assert result["status"] == "failure" and result["err_category"] == "internal_error"
    assert "shut down" in result["err_message"]


async def test_a_restarted_controller_polls_again_with_its_lease() -> None:
    """The lease token is all a controller needs: a new client (another connection pool) gets the result."""
    async with served(steered_app()) as (url, controller):
        admission = await controller.admit(url, rollout_id="rc-1", initial_messages=PROMPT, label="4", metadata={"sleep": 0.2})
        await controller.aclose()  # the controller "restarts": its connections are gone
        result, _, _ = await controller.wait_for_result(url, admission)
    assert result["status"] == "success"


async def test_a_thousand_concurrent_long_polls() -> None:
    """1,000 rollouts waiting in long-polls at once, all released by one change each, none lost."""
    count = 1000
    app = steered_app(unlimited=True, result_wait_timeout_sec=20.0, polling_lease_timeout_sec=40.0)
    async with served(app) as (url, controller):
        gate_ids = [f"lp-{i}" for i in range(count)]
        admissions = await asyncio.gather(
            *(controller.admit(url, rollout_id=rid, initial_messages=PROMPT, label="4", metadata={"sleep": 1.5}) for rid in gate_ids)
        )
        results = await asyncio.gather(*(controller.wait_for_result(url, a, timeout=60) for a in admissions))
    assert len(results) == count
    assert all(result["status"] == "success" and result["sample"]["reward"] == 1.0 for result, _, _ in results)


# -- one server, many agents --------------------------------------------------------------------------------


@pytest.mark.parametrize("expose", ["native", "both"])
async def test_mixed_server_serves_every_agent_to_the_polling_controller(expose: str) -> None:
    """A legacy loop and a 0.3 workflow side by side: each under /agents/<name>/rollout (docs/serving.md)."""
    from osmosis_compat.server.agents import AgentSpec
    from osmosis_compat.server.mixed_app import create_mixed_app

    legacy = _import_file(str(ROOT / "examples/legacy/calculator_agent.py")).agent_loop
    workflow = _import_file(str(ROOT / "examples/modern/v03/strands_calculator.py")).backend
    app = create_mixed_app(
        [AgentSpec("calc", loop=legacy, expose=expose), AgentSpec("strands", backend=workflow, expose=expose)],
        default="calc",
    )
    row = json.loads(CALC_ROWS[1])
    async with served(app) as (url, controller):
        records = {
            name: await controller.run_rollout(
                f"{url}/agents/{name}", rollout_id=f"mx-{name}", initial_messages=calc_prompt(row), label=row["ground_truth"]
            )
            for name in ("calc", "strands")
        }
        root = await controller.run_rollout(url, rollout_id="mx-root", initial_messages=calc_prompt(row), label=row["ground_truth"])
        cancel = (await controller.cancel(f"{url}/agents/strands", ids=["mx-strands"])).json()
    assert all(r.status == "success" and r.reward == 1.0 for r in records.values()), {n: r.result for n, r in records.items()}
    assert root.status == "success" and root.reward == 1.0  # the default agent at the root paths
    assert cancel == {"dispositions": {"mx-strands": "not_found"}}  # finished: routed to the agent that ran it
    # the loop's calls: non-streaming with tools in the body; the Strands agent's: streaming
    assert all(not r.body.get("stream") and r.body["tools"] for r in records["calc"].chat_requests)
    assert all(r.body.get("stream") for r in records["strands"].chat_requests)
