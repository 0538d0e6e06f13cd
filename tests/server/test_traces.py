"""OpenTelemetry traces (issue 20 item 4), exported over OTLP/HTTP to a receiver this test starts on 127.0.0.1,
configured only by the standard ``OTEL_*`` variables. The servers run in a child process (one tracer provider per
process): ``otel_child.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response

from osmosis_compat.testing import serve_app

pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    spans: list[dict[str, Any]] = []
    app = FastAPI()

    @app.post("/v1/traces")
    async def traces(request: Request) -> Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.body())
        for resource in export.resource_spans:
            service = {a.key: _value(a.value) for a in resource.resource.attributes}.get("service.name")
            for scoped in resource.scope_spans:
                for span in scoped.spans:
                    spans.append({
                        "name": span.name, "scope": scoped.scope.name, "service": service,
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(),
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                    })
        return Response(status_code=200)

    with serve_app(app) as handle:
        yield handle.url, spans


def test_a_rollouts_spans_nest_under_the_controllers_trace(receiver: tuple[str, list[dict[str, Any]]]) -> None:
    url, spans = receiver
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=url,
        OTEL_SERVICE_NAME="rollouts-under-test",
        OTEL_BSP_SCHEDULE_DELAY="100",
        TEST_TRACEPARENT=TRACEPARENT,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OPENAI_AGENTS_DISABLE_TRACING="1",
    )
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("otel_child.py"))], env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]

    by_id = {s["span_id"]: s for s in spans}
    rollouts = {s["attributes"]["osmosis.rollout_id"]: s for s in spans if s["name"] == "rollout"}
    assert set(rollouts) == {"traced-loop", "traced-strands", "traced-legacy"}
    assert all(s["service"] == "rollouts-under-test" for s in spans)

    def under(root: dict[str, Any]) -> list[dict[str, Any]]:
        """Every span whose chain of parents reaches ``root``."""
        found = []
        for span in spans:
            parent = by_id.get(span["parent"])
            while parent is not None and parent is not root:
                parent = by_id.get(parent["parent"])
            if parent is root:
                found.append(span)
        return found

    loop = rollouts["traced-loop"]
    assert loop["trace_id"] == TRACE_ID and loop["parent"] == "00f067aa0ba902b7"  # the controller's trace continued
    assert loop["attributes"]["osmosis.protocol"] == "polling" and loop["attributes"]["osmosis.outcome"] == "success"
    names = sorted(s["name"] for s in under(loop))
    assert names.count("chat") == 2 and names.count("execute_tool add") == 1, names
    polls = [s for s in spans if s["name"] == "poll" and s["attributes"]["osmosis.rollout_id"] == "traced-loop"]
    assert polls and all(by_id.get(p["parent"]) is loop for p in polls)

    legacy = rollouts["traced-legacy"]
    assert [s["name"] for s in under(legacy)].count("callback completed") == 1

    strands = rollouts["traced-strands"]
    assert strands["trace_id"] == TRACE_ID
    inside = under(strands)
    framework = [s for s in inside if s["scope"] == "strands.telemetry.tracer"]
    assert framework, sorted({(s["scope"], s["name"]) for s in inside})  # Strands' own spans nest in the rollout
    assert not [s for s in inside if s["name"] == "chat" and s["scope"] == "osmosis_compat"]  # … and are not duplicated
