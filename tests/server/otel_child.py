"""Run in a child process by test_traces.py (a process has one global tracer provider): serve the example legacy
calculator loop and the example Strands workflow, drive a polling rollout of each (the admission and polls carry a
W3C traceparent) and a legacy-protocol rollout, then flush the spans to $OTEL_EXPORTER_OTLP_ENDPOINT."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from osmosis_compat.cli.loading import _import_file  # noqa: E402
from osmosis_compat.observability import otel  # noqa: E402
from osmosis_compat.server.legacy_app import create_app  # noqa: E402
from osmosis_compat.testing import FakePollingController, FakeTrainGate, ScriptedPolicy, serve_app_async  # noqa: E402

QUESTION = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "What is 12 + 30?"}]
TRACEPARENT = os.environ["TEST_TRACEPARENT"]


async def main() -> None:
    loop = _import_file(str(ROOT / "examples/legacy/calculator_agent.py")).agent_loop
    strands_app = _import_file(str(ROOT / "examples/modern/strands_calculator.py")).app
    legacy = await serve_app_async(create_app(loop))
    strands = await serve_app_async(strands_app)
    controller = FakePollingController(ScriptedPolicy())
    controller._headers = lambda: {"traceparent": TRACEPARENT}  # what a traced controller sends
    gate = FakeTrainGate(ScriptedPolicy())
    try:
        async with controller.serve_async(), gate.serve_async():
            first = await controller.run_rollout(legacy.url, rollout_id="traced-loop", initial_messages=QUESTION, label="42")
            second = await controller.run_rollout(strands.url, rollout_id="traced-strands", initial_messages=QUESTION, label="42")
            third = await gate.run_rollout(legacy.url, rollout_id="traced-legacy", messages=QUESTION, metadata={"ground_truth": "42"})
            assert (first.status, second.status, third.status) == ("success", "success", "COMPLETED"), (first, second, third)
    finally:
        await controller.aclose()
        await legacy.close()
        await strands.close()
    otel.shutdown()


asyncio.run(main())
