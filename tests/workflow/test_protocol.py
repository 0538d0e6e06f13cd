"""The 0.2.x ``/rollout`` protocol over real HTTP (spec workflow-api §3): happy path, payloads, auth, ordering."""

from __future__ import annotations

from typing import Any

import httpx

from osmosis_compat.testing import FakeWorkflowController
from tests.workflow.conftest import make_backend, prompt, rollout_server
from tests.workflow.workflows import GATE, EchoWorkflow

SAMPLE_KEYS = {"id", "messages", "label", "reward", "remove_sample", "metrics", "extra_fields"}


async def test_graded_rollout_end_to_end(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(server.url, rollout_id="r1", initial_messages=prompt(), label="5")

    assert record.status_code == 200
    assert record.response_body == {}
    assert record.completion == {
        "rollout_id": "r1",
        "status": "success",
        "extra_fields": None,
        "err_message": None,
        "err_category": None,
    }
    grader = record.grader
    assert grader is not None
    assert set(grader) == {"rollout_id", "status", "samples", "err_message", "err_category"}
    assert grader["rollout_id"] == "r1"
    assert grader["status"] == "success"
    assert grader["err_message"] is None and grader["err_category"] is None
    sample = grader["samples"]["echo"]
    assert set(sample) == SAMPLE_KEYS  # trajectory_messages is not on the wire
    assert sample["id"] == "echo"
    assert sample["reward"] == 1.0
    assert sample["label"] is None  # the SDK does not copy the request label into samples
    assert sample["messages"][:2] == prompt()
    assert sample["messages"][-1]["role"] == "assistant"
    assert "5" in sample["messages"][-1]["content"]
    assert record.completions == [record.completion] and record.graders == [grader]


async def test_model_call_carries_rollout_identity_and_key(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(server.url, rollout_id="ident", initial_messages=prompt(), label="5")

    [chat] = record.chat_requests
    assert chat.path == "/v1/chat/completions"  # chat_completions_url is a base URL; clients add the path
    assert chat.headers["authorization"] == f"Bearer {controller.controller_api_key}"
    assert chat.headers["x-rollout-id"] == "ident"
    assert chat.headers["x-sample-id"] == "echo"
    assert chat.body["messages"] == prompt()


async def test_callbacks_carry_bearer_and_completion_precedes_grading(
    server: Any, controller: FakeWorkflowController
) -> None:
    await controller.run_rollout(server.url, rollout_id="order", initial_messages=prompt(), label="5")

    [completion] = [r for r in controller.completion_log.snapshot() if r.rollout_id == "order"]
    [grader] = [r for r in controller.grader_log.snapshot() if r.rollout_id == "order"]
    assert completion.headers["authorization"] == "Bearer ctrl-key"
    assert grader.headers["authorization"] == "Bearer ctrl-key"
    assert completion.received_at <= grader.received_at
    assert completion.headers["content-type"] == "application/json"


async def test_no_controller_key_means_no_authorization_header(
    server: Any, controller: FakeWorkflowController
) -> None:
    body = controller.rollout_body(rollout_id="nokey", initial_messages=prompt(), label="5")
    body["controller_api_key"] = None
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/rollout", json=body)
    assert response.status_code == 200
    # The fake insists on its key, so it answers 401 — what matters is what was sent.
    [first, *_] = await controller.wait_for_callbacks("nokey", "completion")
    received = [r for r in controller.completion_log.snapshot() if r.rollout_id == "nokey"]
    assert "authorization" not in received[0].headers
    assert first["rollout_id"] == "nokey"


async def test_health_reports_backend_concurrency(artifact_root: Any) -> None:
    with rollout_server(make_backend(artifact_root)) as server:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{server.url}/health")
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ("status", "concurrency")} == {
        "status": "ok",
        "concurrency": {"max_concurrent": None, "queued": 0, "running": 0},
    }
    # 0.3.8 adds the process identity and the admission state
    assert body["process_id"] == body["instance_id"] and len(body["process_id"]) == 36
    assert body["lifecycle"] == {"accepting_rollouts": True, "active_rollouts": 0}


async def test_health_default_limit_without_config(artifact_root: Any) -> None:
    backend = make_backend(artifact_root, workflow_config=None)
    with rollout_server(backend) as server:
        async with httpx.AsyncClient() as client:
            body = (await client.get(f"{server.url}/health")).json()
    assert {k: body[k] for k in ("status", "concurrency")} == {
        "status": "ok",
        "concurrency": {"max_concurrent": 4, "queued": 0, "running": 0},
    }


async def test_openapi_lists_both_protocols_routes(server: Any) -> None:
    async with httpx.AsyncClient() as client:
        spec = (await client.get(f"{server.url}/openapi.json")).json()
        missing = await client.get(f"{server.url}/rollout/r1/status")
    # 0.2.31's two routes and 0.3.8's four (POST /rollout is shared)
    assert set(spec["paths"]) == {"/health", "/rollout", "/rollout/{rollout_id}/result", "/rollout/cancel"}
    assert missing.status_code == 404


async def test_unknown_keys_are_ignored(server: Any, controller: FakeWorkflowController) -> None:
    body = controller.rollout_body(rollout_id="extra", initial_messages=prompt(), label="5")
    body.update({"future_field": {"x": 1}, "grade": True})
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/rollout", json=body)
    assert (response.status_code, response.json()) == (200, {})
    [grader] = await controller.wait_for_callbacks("extra", "grader")
    assert grader["status"] == "success"


async def test_metadata_alone_triggers_grading_and_reaches_both_contexts(
    server: Any, controller: FakeWorkflowController
) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="meta", initial_messages=prompt(), metadata={"mode": "chat", "grader": "single"}
    )
    assert record.grader is not None and record.grader["status"] == "success"
    assert record.rewards == {"echo": 1.0}


async def test_no_label_and_no_metadata_skips_grading(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(server.url, rollout_id="nolabel", initial_messages=prompt())
    assert record.completion is not None and record.completion["status"] == "success"
    assert record.grader == {
        "rollout_id": "nolabel",
        "status": "failure",
        "samples": {},
        "err_message": None,
        "err_category": None,
    }
    assert GATE.grades == 0


async def test_without_grader_url_only_the_completion_is_sent(
    server: Any, controller: FakeWorkflowController
) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="nograde", initial_messages=prompt(), label="5", grade=False
    )
    assert record.completion is not None and record.completion["status"] == "success"
    assert record.graders == []
    assert GATE.grades == 0


async def test_without_grader_class_grading_fails_plainly(artifact_root: Any, controller: FakeWorkflowController) -> None:
    with rollout_server(make_backend(artifact_root, grader=None, grader_config=None)) as server:
        record = await controller.run_rollout(server.url, rollout_id="nograder", initial_messages=prompt(), label="5")
    assert record.completion is not None and record.completion["status"] == "success"
    assert record.grader == {
        "rollout_id": "nograder",
        "status": "failure",
        "samples": {},
        "err_message": None,
        "err_category": None,
    }


async def test_string_references_and_module_level_config(artifact_root: Any, controller: FakeWorkflowController) -> None:
    backend = make_backend(
        artifact_root,
        workflow="tests.workflow.workflows:EchoWorkflow",
        workflow_config="tests.workflow.workflows:echo_config",
        grader="tests.workflow.workflows:LabelGrader",
        grader_config="tests.workflow.workflows:grader_config",
    )
    assert backend.workflow_cls is EchoWorkflow
    with rollout_server(backend) as server:
        record = await controller.run_rollout(server.url, rollout_id="strings", initial_messages=prompt(), label="5")
    assert record.rewards == {"echo": 1.0}


async def test_artifacts_dir_is_created_per_rollout(server: Any, controller: FakeWorkflowController) -> None:
    await controller.run_rollout(server.url, rollout_id="art", initial_messages=prompt(), label="5")
    artifact_root = server.artifact_root
    assert (artifact_root / "art" / "artifacts").is_dir()
    assert (artifact_root / "art" / ".osmosis-health-check").read_text() == "osmosis-health-check"


# -- sample registration styles of every era over the wire ------------------------------------------------------


async def test_03_run_returning_messages_becomes_the_sample(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url,
        rollout_id="ret",
        initial_messages=prompt(),
        metadata={"mode": "return_list", "grader": "single"},
    )
    assert record.grader is not None and record.grader["status"] == "success"
    [(sample_id, sample)] = record.grader["samples"].items()
    assert sample_id == "ret" and sample["id"] == "ret"  # named after the rollout
    assert sample["messages"][-1] == {"role": "assistant", "content": "returned"}
    assert sample["reward"] == 1.0


async def test_03_set_sample_source(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url,
        rollout_id="single",
        initial_messages=prompt(),
        metadata={"mode": "set_sample_source", "grader": "single"},
    )
    assert record.rewards == {"single": 1.0}


async def test_0218_register_agent(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="agent", initial_messages=prompt(), metadata={"mode": "register_agent"}
    )
    assert record.grader is not None
    assert record.grader["samples"]["legacy-agent"]["messages"][-1]["content"] == "agent"


async def test_several_named_samples(server: Any, controller: FakeWorkflowController) -> None:
    record = await controller.run_rollout(
        server.url, rollout_id="many", initial_messages=prompt(), label="A", metadata={"mode": "two_samples"}
    )
    assert record.rewards == {"a": 1.0, "b": 0.0}


# -- server options -------------------------------------------------------------------------------------------------


async def test_user_lifespan_runs_around_the_server(artifact_root: Any, controller: FakeWorkflowController) -> None:
    import contextlib

    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        events.append("start")
        yield
        events.append("stop")

    with rollout_server(make_backend(artifact_root), lifespan=lifespan) as server:
        assert events == ["start"]
        await controller.run_rollout(server.url, rollout_id="life", initial_messages=prompt(), label="5")
    assert events == ["start", "stop"]


async def test_async_generator_lifespan_is_accepted(artifact_root: Any) -> None:
    events: list[str] = []

    async def lifespan(app: Any) -> Any:
        events.append("start")
        yield
        events.append("stop")

    with rollout_server(make_backend(artifact_root), lifespan=lifespan):
        pass
    assert events == ["start", "stop"]


def test_configure_logging_only_without_handlers(monkeypatch: Any, artifact_root: Any) -> None:
    import logging

    from osmosis_compat.server.workflow_app import create_rollout_server

    root = logging.getLogger()
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: calls.append(kw))
    monkeypatch.setattr(root, "handlers", [])
    create_rollout_server(backend=make_backend(artifact_root))
    assert calls == [{"level": logging.INFO, "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}]
    create_rollout_server(backend=make_backend(artifact_root), configure_logging=False)
    assert len(calls) == 1
    monkeypatch.setattr(root, "handlers", [logging.NullHandler()])
    create_rollout_server(backend=make_backend(artifact_root))
    assert len(calls) == 1


async def test_custom_execution_backend(controller: FakeWorkflowController) -> None:
    from osmosis_compat.workflow import ExecutionBackend, ExecutionRequest, ExecutionResult, RolloutSample

    class Canned(ExecutionBackend):
        async def execute(self, request: ExecutionRequest, on_workflow_complete: Any, on_grader_complete: Any = None) -> None:
            await on_workflow_complete(ExecutionResult(status="success"))
            await on_workflow_complete(ExecutionResult(status="success"))  # a buggy backend reporting twice
            if on_grader_complete is not None:
                sample = RolloutSample(id="c", messages=[], reward=0.25)
                await on_grader_complete(ExecutionResult(status="success", samples={"c": sample}))

    with rollout_server(Canned()) as server:
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{server.url}/health")).json()["status"] == "ok"
        record = await controller.run_rollout(server.url, rollout_id="canned", initial_messages=prompt(), label="x")
    assert record.rewards == {"c": 0.25}
    assert len(record.completions) == 1  # each callback kind is delivered once
