"""Bad input and failures with exact outcomes (issue 3 item 8; spec workflow-api §3.11 plus our deliberate fixes)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from osmosis_compat.server.workflow_app import INTERNAL_ERROR_MESSAGE, SHUTDOWN_ERROR_MESSAGE
from osmosis_compat.testing import FakeWorkflowController
from tests.workflow.conftest import make_backend, prompt, rollout_server
from tests.workflow.workflows import GATE

PLAIN_GRADER_FAILURE = {"status": "failure", "samples": {}, "err_message": None, "err_category": None}


def grader_failure(rollout_id: str, **overrides: Any) -> dict[str, Any]:
    return {"rollout_id": rollout_id, **PLAIN_GRADER_FAILURE, **overrides}


async def post(url: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(f"{url}/rollout", json=body)


# -- 422: the request never starts a rollout ----------------------------------------------------------------------


# (a body without completion_callback_url is a 0.3.8 polling admission: tests/server/test_polling_*.py)
@pytest.mark.parametrize("field", ["rollout_id", "initial_messages", "chat_completions_url"])
async def test_missing_required_field_is_422(server: Any, controller: FakeWorkflowController, field: str) -> None:
    body = controller.rollout_body(rollout_id="missing", initial_messages=prompt(), label="5")
    del body[field]
    response = await post(server.url, body)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["type"] == "missing"
    assert error["loc"] == ["body", field]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("initial_messages", "What is 2 + 3?"),
        ("initial_messages", ["not a dict"]),
        ("label", 5),
        ("metadata", ["a", "b"]),
        ("agent_timeout_sec", "soon"),
        ("grader_timeout_sec", {"s": 1}),
        ("rollout_id", 12),
        ("controller_api_key", 1234),
        ("extra_fields", "x"),
    ],
)
async def test_wrong_type_is_422(server: Any, controller: FakeWorkflowController, field: str, value: Any) -> None:
    body = controller.rollout_body(rollout_id="types", initial_messages=prompt(), label="5")
    body[field] = value
    response = await post(server.url, body)
    assert response.status_code == 422
    locs = [tuple(e["loc"][:2]) for e in response.json()["detail"]]
    assert ("body", field) in locs


async def test_non_json_body_is_422(server: Any) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{server.url}/rollout", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_invalid"


@pytest.mark.parametrize("rollout_id", ["a/b", "..", ".", "", "a\x00b", "a\\b", "/abs", "trailing/"])
async def test_unsafe_rollout_id_is_422_and_starts_nothing(
    server: Any, controller: FakeWorkflowController, rollout_id: str
) -> None:
    body = controller.rollout_body(rollout_id="placeholder", initial_messages=prompt(), label="5")
    body["rollout_id"] = rollout_id
    response = await post(server.url, body)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "rollout_id"]
    assert "rollout_id must be a single path segment" in error["msg"]
    await asyncio.sleep(0.05)
    assert GATE.runs == 0
    assert controller.completion_callbacks("placeholder") == []


# -- failures inside the rollout: 200 {}, then failure callbacks ---------------------------------------------------


async def test_workflow_raising(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="raise", initial_messages=prompt(), label="5", metadata={"mode": "raise"}
    )
    assert record.completion == {
        "rollout_id": "raise",
        "status": "failure",
        "extra_fields": None,
        "err_message": "workflow boom",
        "err_category": "agent_error",
    }
    assert record.grader == grader_failure("raise")
    assert GATE.grades == 0


async def test_workflow_value_error_is_validation_error(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="val", initial_messages=prompt(), label="5", metadata={"mode": "raise_value"}
    )
    assert record.completion is not None
    assert (record.completion["err_message"], record.completion["err_category"]) == (
        "bad workflow input",
        "validation_error",
    )


async def test_duplicate_sample_source_names(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="dup-src", initial_messages=prompt(), label="5", metadata={"mode": "dup_source"}
    )
    assert record.completion is not None
    assert record.completion["status"] == "failure"
    assert record.completion["err_category"] == "validation_error"
    assert "'echo' already exists" in record.completion["err_message"]


async def test_no_samples(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="nosample", initial_messages=prompt(), label="5", metadata={"mode": "no_sample"}
    )
    assert record.completion is not None and record.completion["status"] == "success"
    assert record.grader == grader_failure(
        "nosample", err_message="No samples after grading", err_category="validation_error"
    )


async def test_reward_missing(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url,
        rollout_id="noreward",
        initial_messages=prompt(),
        label="5",
        metadata={"mode": "chat", "grader": "skip_reward"},
    )
    grader = record.grader
    assert grader is not None
    assert grader["status"] == "failure"
    assert grader["err_message"] == "Sample echo has no reward after grading"
    assert grader["err_category"] == "validation_error"
    assert list(grader["samples"]) == ["echo"] and grader["samples"]["echo"]["reward"] is None


async def test_grader_raising_keeps_samples(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="graderboom", initial_messages=prompt(), label="5", metadata={"grader": "raise"}
    )
    assert record.completion is not None and record.completion["status"] == "success"
    grader = record.grader
    assert grader is not None
    assert (grader["status"], grader["err_message"], grader["err_category"]) == ("failure", "grader boom", "agent_error")
    assert list(grader["samples"]) == ["echo"]


async def test_single_sample_view_with_two_samples_fails_clearly(
    server: Any, controller: FakeWorkflowController
) -> None:
    record = await controller.run_rollout(
        server.url,
        rollout_id="two",
        initial_messages=prompt(),
        label="5",
        metadata={"mode": "two_samples", "grader": "single"},
    )
    grader = record.grader
    assert grader is not None and grader["status"] == "failure"
    assert grader["err_category"] == "validation_error"
    assert "single-sample view" in grader["err_message"] and "'a', 'b'" in grader["err_message"]


# -- non-JSON values in samples (deliberate fix) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "path"),
    [
        ({"mode": "bytes"}, "$.samples.echo.messages[2].content[0].image.source.bytes"),
        ({"mode": "datetime_metric"}, "$.samples.echo.metrics.finished"),
        ({"mode": "plain", "grader": "nan"}, "$.samples.echo.reward"),
    ],
)
async def test_non_json_sample_values_give_a_clear_failure(
    server: Any, controller: FakeWorkflowController, metadata: dict[str, Any], path: str
) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="nonjson", initial_messages=prompt(), label="5", metadata=metadata
    )
    assert record.completion is not None and record.completion["status"] == "success"
    grader = record.grader
    assert grader is not None
    assert grader["status"] == "failure"
    assert grader["samples"] == {}
    assert grader["err_category"] == "validation_error"
    assert path in grader["err_message"]
    assert len(record.graders) == 1


# -- timeouts (deliberate fix: enforced) --------------------------------------------------------------------------


async def test_agent_timeout_is_enforced(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url,
        rollout_id="slow",
        initial_messages=prompt(),
        label="5",
        metadata={"mode": "block"},
        agent_timeout_sec=0.05,
    )
    assert record.completion == {
        "rollout_id": "slow",
        "status": "failure",
        "extra_fields": None,
        "err_message": "workflow exceeded its 0.05s deadline",  # 0.3.8's text
        "err_category": "timeout",
    }
    assert record.grader == grader_failure("slow")


async def test_grader_timeout_is_enforced(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url,
        rollout_id="slowgrade",
        initial_messages=prompt(),
        label="5",
        metadata={"grader": "block"},
        grader_timeout_sec=0.05,
    )
    assert record.completion is not None and record.completion["status"] == "success"
    grader = record.grader
    assert grader is not None
    assert grader["status"] == "failure"
    assert grader["err_category"] == "timeout"
    assert grader["err_message"] == "grader exceeded its 0.05s deadline"
    assert list(grader["samples"]) == ["echo"]


async def test_generous_timeouts_do_not_interfere(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="fast", initial_messages=prompt(), label="5", agent_timeout_sec=30, grader_timeout_sec=30
    )
    assert record.rewards == {"echo": 1.0}


async def test_queue_time_counts_against_the_agent_budget(artifact_root: Any, controller: FakeWorkflowController) -> None:
    from osmosis_compat.workflow import AgentWorkflowConfig, ConcurrencyConfig

    config = AgentWorkflowConfig(name="one-at-a-time", concurrency=ConcurrencyConfig(max_concurrent=1))
    with rollout_server(make_backend(artifact_root, workflow_config=config)) as server:
        blocker = controller.rollout_body(rollout_id="holder", initial_messages=prompt(), metadata={"mode": "block"})
        assert (await post(server.url, blocker)).status_code == 200
        await asyncio.to_thread(GATE.entered.wait, 5)
        queued = controller.rollout_body(
            rollout_id="queued", initial_messages=prompt(), label="5", agent_timeout_sec=0.1
        )
        assert (await post(server.url, queued)).status_code == 200
        await asyncio.sleep(0.15)
        GATE.released.set()
        [completion] = await controller.wait_for_callbacks("queued", "completion")
    assert completion["err_category"] == "timeout"


# -- callback endpoint failing ------------------------------------------------------------------------------------


async def test_callback_retried_on_5xx_then_delivered(server: Any, controller: FakeWorkflowController) -> None:
    controller.completion_script = [500, 503]
    controller.grader_script = [429]
    record = await controller.run_rollout(server.url, rollout_id="retry", initial_messages=prompt(), label="5")
    assert len(record.completions) == 3 and record.completion is not None
    assert record.completion["status"] == "success"
    assert len(record.graders) == 2 and record.rewards == {"echo": 1.0}


async def test_completion_endpoint_always_failing_takes_the_error_path(
    server: Any, controller: FakeWorkflowController
) -> None:
    controller.completion_script = 503
    body = controller.rollout_body(rollout_id="down", initial_messages=prompt(), label="5")
    assert (await post(server.url, body)).status_code == 200
    [grader] = await controller.wait_for_callbacks("down", "grader")
    completions = controller.completion_callbacks("down")
    # 5 attempts with the real status, then 5 with the fallback "Internal server error" (spec §3.8).
    assert len(completions) == 10
    assert all(c["status"] == "success" for c in completions[:5])
    assert completions[5:] == [
        {
            "rollout_id": "down",
            "status": "failure",
            "extra_fields": None,
            "err_message": INTERNAL_ERROR_MESSAGE,
            "err_category": None,
        }
    ] * 5
    assert grader == grader_failure("down")
    assert GATE.grades == 0  # the grader never ran: completion must be delivered before grading


async def test_completion_rejected_with_4xx_is_not_retried(server: Any, controller: FakeWorkflowController) -> None:
    controller.completion_script = 401
    body = controller.rollout_body(rollout_id="denied", initial_messages=prompt(), label="5")
    assert (await post(server.url, body)).status_code == 200
    [grader] = await controller.wait_for_callbacks("denied", "grader")
    completions = controller.completion_callbacks("denied")
    assert [c["status"] for c in completions] == ["success", "failure"]
    assert grader == grader_failure("denied")


async def test_no_second_completion_after_a_delivered_one(server: Any, controller: FakeWorkflowController) -> None:
    controller.grader_script = 500
    body = controller.rollout_body(rollout_id="graderdown", initial_messages=prompt(), label="5")
    assert (await post(server.url, body)).status_code == 200
    graders = await controller.wait_for_callbacks("graderdown", "grader", count=10)
    await asyncio.sleep(0.05)
    assert controller.completion_callbacks("graderdown") == [
        {"rollout_id": "graderdown", "status": "success", "extra_fields": None, "err_message": None, "err_category": None}
    ]
    assert all(g["status"] == "success" for g in graders[:5])
    assert graders[5:] == [grader_failure("graderdown")] * 5


# -- duplicates (deliberate fix) ------------------------------------------------------------------------------------


async def test_running_rollout_id_is_not_started_twice(server: Any, controller: FakeWorkflowController) -> None:
    body = controller.rollout_body(rollout_id="twice", initial_messages=prompt(), label="5", metadata={"mode": "block"})
    first = await post(server.url, body)
    await asyncio.to_thread(GATE.entered.wait, 5)
    second = await post(server.url, body)
    assert (first.status_code, first.json()) == (200, {})
    assert (second.status_code, second.json()) == (200, {})
    GATE.released.set()
    await controller.wait_for_callbacks("twice", "grader")
    await asyncio.sleep(0.05)
    assert GATE.runs == 1
    assert len(controller.completion_callbacks("twice")) == 1
    assert len(controller.grader_callbacks("twice")) == 1


async def test_finished_rollout_id_may_run_again(server: Any, controller: FakeWorkflowController) -> None:
    first = await controller.run_rollout(server.url, rollout_id="again", initial_messages=prompt(), label="5")
    second = await controller.run_rollout(server.url, rollout_id="again", initial_messages=prompt(), label="5")
    assert first.rewards == second.rewards == {"echo": 1.0}
    assert GATE.runs == 2


# -- graceful shutdown (deliberate fix) -----------------------------------------------------------------------------


async def test_shutdown_sends_failure_callbacks_for_in_flight_rollouts(
    artifact_root: Any, controller: FakeWorkflowController
) -> None:
    with rollout_server(make_backend(artifact_root)) as server:
        body = controller.rollout_body(rollout_id="inflight", initial_messages=prompt(), label="5", metadata={"mode": "block"})
        assert (await post(server.url, body)).status_code == 200
        await asyncio.to_thread(GATE.entered.wait, 5)
    # The server is closed: drained for 0.1 s, then aborted.
    assert controller.completion_callbacks("inflight") == [
        {
            "rollout_id": "inflight",
            "status": "failure",
            "extra_fields": None,
            "err_message": SHUTDOWN_ERROR_MESSAGE,
            "err_category": None,
        }
    ]
    assert controller.grader_callbacks("inflight") == [grader_failure("inflight")]


async def test_shutdown_during_grading_sends_only_the_grader_failure(
    artifact_root: Any, controller: FakeWorkflowController
) -> None:
    with rollout_server(make_backend(artifact_root)) as server:
        body = controller.rollout_body(rollout_id="grading", initial_messages=prompt(), label="5", metadata={"grader": "block"})
        assert (await post(server.url, body)).status_code == 200
        await asyncio.to_thread(GATE.entered.wait, 5)
    [completion] = controller.completion_callbacks("grading")
    assert completion["status"] == "success"
    assert controller.grader_callbacks("grading") == [grader_failure("grading")]


async def test_rollout_that_finishes_within_the_drain_is_not_aborted(
    artifact_root: Any, controller: FakeWorkflowController
) -> None:
    with rollout_server(make_backend(artifact_root), drain_timeout_seconds=5.0) as server:
        body = controller.rollout_body(rollout_id="drained", initial_messages=prompt(), label="5", metadata={"mode": "block"})
        assert (await post(server.url, body)).status_code == 200
        await asyncio.to_thread(GATE.entered.wait, 5)
        # Released while the server is already shutting down (close() blocks this thread).
        threading.Timer(0.1, GATE.released.set).start()
    assert [c["status"] for c in controller.completion_callbacks("drained")] == ["success"]
    [grader] = controller.grader_callbacks("drained")
    assert grader["status"] == "success" and grader["samples"]["echo"]["reward"] == 0.0  # no model call: no "5"

