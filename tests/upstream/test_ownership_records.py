"""0.3.8's OTLP "rollout.ownership" log records (issue 19, item 5): the same 0.3-API entrypoint served by the real
osmosis-ai 0.3.8 (side venv) and by osmosis-compat, each sending to a local OTLP/HTTP receiver this test starts;
the same rollouts must produce the same records, field for field. A legacy loop served over polling sends them
too."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response

from osmosis_compat.testing import FakePollingController, ScriptedPolicy, serve_app
from tests.upstream.servers import ServerProcess, UpstreamServer

pytest.importorskip("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (  # noqa: E402
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

pytestmark = pytest.mark.upstream

ROOT = Path(__file__).resolve().parents[2]
STEERED = Path(__file__).parent / "entrypoints" / "steered_03.py"
PROMPT = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is 2 + 2?"}]
OWNER = {"OSMOSIS_ROLLOUT_SERVER_ID": "server-7", "OSMOSIS_ROLLOUT_NAMESPACE": "team-a", "_OSMOSIS_ROLLOUT_NAME": "calc",
         "STEERED_WAIT": "0.5", "STEERED_LEASE": "1.0", "STEERED_RETENTION": "60"}
RUN = {"osmosis_observability": {"run_id": "run-42", "run_name": "nightly", "other": "dropped"}}


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver:
    """A local OTLP/HTTP logs receiver: every record posted to ``/v1/logs``, flattened."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.content_types: set[str] = set()
        self._lock = threading.Lock()
        app = FastAPI()

        @app.post("/v1/logs")
        async def logs(request: Request) -> Response:
            message = ExportLogsServiceRequest()
            message.ParseFromString(await request.body())
            self.content_types.add(request.headers.get("content-type", ""))
            with self._lock:
                for resource_logs in message.resource_logs:
                    resource = {a.key: _value(a.value) for a in resource_logs.resource.attributes}
                    for scope_logs in resource_logs.scope_logs:
                        for record in scope_logs.log_records:
                            self.records.append({
                                "resource": resource, "scope": scope_logs.scope.name, "body": _value(record.body),
                                "severity_text": record.severity_text, "has_time": record.time_unix_nano > 0,
                                "attributes": {a.key: _value(a.value) for a in record.attributes},
                            })
            return Response(ExportLogsServiceResponse().SerializeToString(), media_type="application/x-protobuf")

        self.app = app


async def _scenarios(url: str) -> None:
    controller = FakePollingController(ScriptedPolicy())
    async with controller.serve_async():
        await controller.run_rollout(url, rollout_id="o-graded", initial_messages=PROMPT, label="4",
                                     metadata={"chat": True, "reward": 0.5, **RUN})
        await controller.run_rollout(url, rollout_id="o-fail", initial_messages=PROMPT, label="4",
                                     metadata={"fail": True})
        await controller.run_rollout(url, rollout_id="o-ungraded", initial_messages=PROMPT, label="4", grade=False)
        admission = await controller.admit(url, rollout_id="o-cancel", initial_messages=PROMPT, metadata={"sleep": 10})
        await asyncio.sleep(0.3)
        await controller.cancel(url, ids=["o-cancel"])
        await controller.poll(url, admission)
    await controller.aclose()


def _collect(server_cls: type, *args: Any) -> list[dict[str, Any]]:
    receiver = Receiver()
    with serve_app(receiver.app) as otlp:
        env = {**OWNER, "OSMOSIS_ROLLOUT_OTLP_ENDPOINT": otlp.url + "/"}
        with server_cls(STEERED, *args, env=env) as server:
            asyncio.run(_scenarios(server.url))
        # the server flushed its batch when it stopped
    assert receiver.content_types == {"application/x-protobuf"}
    return receiver.records


def _by_rollout(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in sorted(records, key=lambda r: r["attributes"]["event_sequence"]):
        attributes = dict(record["attributes"])
        attributes.pop("event_sequence")  # one counter per server: the interleaving of rollouts may differ
        grouped.setdefault(attributes["rollout_id"], []).append({**record, "attributes": attributes})
    return grouped


def test_ownership_records_match_the_real_0_3_8_server_field_for_field():
    theirs = _collect(UpstreamServer, "0.3.8")
    ours = _collect(ServerProcess)
    assert _by_rollout(ours) == _by_rollout(theirs)
    graded = _by_rollout(ours)["o-graded"]
    assert [r["attributes"]["status"] for r in graded][0] == "queued"
    assert graded[-1]["attributes"] == {
        "event": "rollout.ownership", "rollout_id": "o-graded", "server_id": "server-7", "server_name": "calc",
        "namespace": "team-a", "run_id": "run-42", "run_name": "nightly", "status": "success"}
    assert graded[0]["resource"]["service.name"] == "osmosis-rollout-server"
    assert graded[0]["body"] == "Rollout ownership" and graded[0]["severity_text"] == "INFO"
    assert sorted(r["attributes"]["event_sequence"] for r in ours) == list(range(1, len(ours) + 1))


def test_a_legacy_loop_over_polling_sends_them_too(monkeypatch):
    receiver = Receiver()
    with serve_app(receiver.app) as otlp:
        env = {"OSMOSIS_ROLLOUT_OTLP_ENDPOINT": otlp.url, "_OSMOSIS_ROLLOUT_INSTANCE_ID": "inst-1"}
        with ServerProcess(ROOT / "examples" / "legacy" / "calculator_agent.py", env=env) as server:
            async def one() -> None:
                controller = FakePollingController(ScriptedPolicy())
                async with controller.serve_async():
                    record = await controller.run_rollout(server.url, rollout_id="legacy-1", initial_messages=PROMPT,
                                                          label="4", metadata=RUN)
                    assert record.result["status"] == "success"
                await controller.aclose()

            asyncio.run(one())
    statuses = [(r["attributes"]["status"], r["attributes"]["server_id"], r["attributes"].get("run_name"))
                for r in sorted(receiver.records, key=lambda r: r["attributes"]["event_sequence"])]
    assert statuses[0] == ("queued", "inst-1", "nightly") and statuses[-1] == ("success", "inst-1", "nightly")
    assert ("running", "inst-1", "nightly") in statuses
