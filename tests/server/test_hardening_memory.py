"""Issue 12 item 4: a legacy server's memory does not grow with history. A finished rollout keeps only what
idempotency needs — its key, the init answer, its final status — and the init answers of an agent whose tool list
never changes share that one list. The RSS figure itself is bench/legacy_memory.py's (3 × 1,000 rollouts)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app_async
from tests.legacy.wire.conftest import fast_settings, prompt

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "legacy"
CONTEXT = "x" * 2048  # metadata a record must not keep


def calculator_loop() -> Any:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from calculator_agent import agent_loop
    finally:
        sys.path.remove(str(EXAMPLES))
    return agent_loop


async def run_many(gate: FakeTrainGate, url: str, tag: str, n: int) -> None:
    semaphore = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with semaphore:
            record = await gate.run_rollout(url, rollout_id=f"{tag}-{i}", messages=prompt("What is 2 + 3?"),
                                            metadata={"ground_truth": "5", "context": CONTEXT}, timeout=30)
            assert record.status == "COMPLETED"

    await asyncio.gather(*(one(i) for i in range(n)))


async def test_finished_rollouts_keep_only_key_answer_and_status_and_share_the_tools():
    app = create_app(calculator_loop(), settings=fast_settings())
    store = app.state.rollout_state.engine.store
    with FakeTrainGate(ScriptedPolicy()).serve() as gate:
        server = await serve_app_async(app)
        try:
            await run_many(gate, server.url, "kept", 40)
            engine = app.state.rollout_state.engine
            deadline = time.monotonic() + 10
            while engine.active_count and time.monotonic() < deadline:  # callbacks arrive just before tasks end
                await asyncio.sleep(0.01)
            records = [store.peek(f"kept-{i}") for i in range(40)]
            assert all(r is not None and r.finished for r in records)
            # Nothing else per rollout is left in the engine: no task, no admission, no request.
            assert engine.active_count == 0 and engine.get("kept-0") is None
            # What a record holds: the init answer, no request (messages, metadata) and no result.
            assert {tuple(sorted(r.answer)) for r in records} == {("rollout_id", "tools")}
            assert all(r.result is None for r in records)
            assert all(CONTEXT not in repr(r.to_dict()) for r in records)
            # normalize_tools builds a new list for every init; the kept answers share one.
            assert len({id(r.answer["tools"]) for r in records}) == 1
            # Idempotency still works from what is kept: a duplicate init gets the leader's answer.
            async with httpx.AsyncClient(timeout=10) as client:  # the server runs in this event loop
                duplicate = await client.post(server.url + "/v1/rollout/init",
                                              json=gate.init_body(rollout_id="kept-3", messages=prompt()))
            assert duplicate.status_code == 202 and duplicate.json() == records[3].answer
        finally:
            await server.close()
