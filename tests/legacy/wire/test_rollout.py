"""A rollout's life: chat calls, the completion callback, retries, fallbacks, shutdown (spec §1.3, §1.4)."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from osmosis_compat.testing import serve_app
from tests.legacy.wire.conftest import fast_settings, prompt, serving
from tests.legacy.wire.loops import (
    ErrorLoop,
    JunkLoop,
    KwargsLoop,
    RaisingLoop,
    SlowLoop,
    ToolLoop,
    WrongStatusLoop,
)


async def test_tool_rollout_completes_with_reward_and_metrics(gate):
    with serving(ToolLoop()) as server:
        record = await gate.run_rollout(
            server.url, rollout_id="calc", messages=prompt("What is 2 + 3?"), metadata={"ground_truth": "5"}
        )
    callback = record.callback
    assert list(callback) == [
        "rollout_id", "status", "final_messages", "finish_reason", "reward", "metrics", "extra_fields"
    ]
    assert callback["status"] == "COMPLETED" and callback["reward"] == 1.0
    assert callback["finish_reason"] == "stop" and callback["extra_fields"] == {}
    assert callback["final_messages"][-1]["content"] == "The answer is 5."
    metrics = callback["metrics"]
    assert metrics["num_llm_calls"] == 2 and metrics["num_tool_calls"] == 1
    assert metrics["tool_latency_ms"] == 1.0 and metrics["max_context_tokens"] == 0
    assert metrics["prompt_tokens"] > 0 and metrics["total_latency_ms"] >= metrics["llm_latency_ms"] > 0
    assert len(record.callbacks) == 1


async def test_chat_body_keys_and_defaults(gate):
    with serving(ToolLoop()) as server:
        record = await gate.run_rollout(server.url, rollout_id="body", messages=prompt(), callback_api_key="cb-key")
    first = record.chat_requests[0]
    assert list(first.body) == ["model", "messages", "rollout_id", "temperature", "top_p", "max_tokens", "logprobs"]
    assert first.body["model"] == "default" and first.body["rollout_id"] == "body"
    assert (first.body["temperature"], first.body["top_p"], first.body["max_tokens"], first.body["logprobs"]) == (
        1.0, 1.0, 512, True
    )
    assert first.body["messages"] == prompt()
    assert "tools" not in first.body
    assert first.headers["authorization"] == "Bearer cb-key"
    assert not any(h.startswith("x-") for h in first.headers)
    # the conversation is append-only: the second call starts with the first call's messages
    second = record.chat_requests[1].body["messages"]
    assert second[:2] == prompt() and second[2]["tool_calls"] and second[3]["role"] == "tool"


async def test_dropped_chat_kwargs_are_logged_once_per_name(gate, caplog):
    caplog.set_level(logging.WARNING, logger="osmosis_ai.rollout.client")
    with serving(KwargsLoop()) as server:
        for n in range(2):
            record = await gate.run_rollout(server.url, rollout_id=f"kw{n}", messages=prompt())
            body = record.chat_requests[0].body
            assert body["stop"] == ["END"] and body["temperature"] == 0.5
            assert "seed" not in body and "tools" not in body
    dropped = [r.getMessage() for r in caplog.records if "was not sent" in r.getMessage()]
    assert len([m for m in dropped if "seed=" in m]) == 1
    assert len([m for m in dropped if "tools=" in m]) == 1


@pytest.mark.parametrize(
    ("loop", "error_message"),
    [
        (RaisingLoop(), "boom"),
        (JunkLoop(), "'NoneType' object has no attribute 'status'"),
        (WrongStatusLoop(), "'completed' is not a valid RolloutStatus"),
    ],
)
async def test_agent_failures_send_one_error_callback(gate, loop, error_message):
    with serving(loop) as server:
        record = await gate.run_rollout(server.url, rollout_id="fail", messages=prompt())
    assert len(record.callbacks) == 1
    callback = record.callback
    assert callback["status"] == "ERROR" and callback["finish_reason"] == "error"
    assert callback["final_messages"] == [] and error_message in callback["error_message"]


async def test_ctx_error_is_reported_as_given(gate):
    with serving(ErrorLoop()) as server:
        record = await gate.run_rollout(server.url, rollout_id="err", messages=prompt())
    assert record.callback["status"] == "ERROR"
    assert record.callback["error_message"] == "could not do it"
    assert record.callback["final_messages"] == [{"role": "assistant", "content": "sorry"}]


async def test_callback_failing_then_recovering_is_delivered_once(gate):
    gate.callback_script = [500, 502, 200]
    with serving(ToolLoop()) as server:
        record = await gate.run_rollout(server.url, rollout_id="recover", messages=prompt(), expect_callbacks=3)
    assert [c["status"] for c in record.callbacks] == ["COMPLETED"] * 3


async def test_callback_always_failing_ends_in_fallback_error(gate):
    gate.callback_script = 500
    with serving(ToolLoop()) as server:
        record = await gate.run_rollout(server.url, rollout_id="down", messages=prompt(), expect_callbacks=6)
        await asyncio.sleep(0.3)
    statuses = [c["status"] for c in gate.callbacks("down")]
    assert statuses == ["COMPLETED"] * 3 + ["ERROR"] * 3  # then only a log line
    assert record.callbacks[-1]["final_messages"] == []


async def test_callback_answering_204_is_not_success(gate):
    gate.callback_script = [204, 204, 204, 200]
    with serving(ToolLoop()) as server:
        record = await gate.run_rollout(server.url, rollout_id="nocontent", messages=prompt(), expect_callbacks=4)
    assert [c["status"] for c in record.callbacks] == ["COMPLETED"] * 3 + ["ERROR"]
    assert record.callbacks[-1]["error_message"] == "No attempts made"


async def test_create_app_settings_reach_the_rollout_client():
    """max_retries=0 given to create_app(settings=...) means one chat attempt (upstream ignored it)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    chat_calls, callbacks = [], []

    async def chat(request):
        chat_calls.append(await request.json())
        return JSONResponse({"error": "overloaded"}, status_code=503)

    async def completed(request):
        callbacks.append(await request.json())
        return JSONResponse({"status": "ok"})

    controller = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]),
                                   Route("/v1/rollout/completed", completed, methods=["POST"])])
    with serve_app(controller) as gate, serving(ToolLoop(), settings=fast_settings(max_retries=0)) as server:
        body = {"rollout_id": "settings", "server_url": gate.url, "messages": prompt(), "completion_params": {}}
        assert httpx.post(server.url + "/v1/rollout/init", json=body).status_code == 202
        for _ in range(100):
            if callbacks:
                break
            await asyncio.sleep(0.05)
    assert len(chat_calls) == 1
    assert callbacks[0]["status"] == "ERROR" and "overloaded" in callbacks[0]["error_message"]


async def test_shutdown_sends_in_flight_rollouts_an_error_callback(gate):
    server_cm = serving(SlowLoop(), drain_timeout_seconds=0.1)
    server = server_cm.__enter__()
    try:
        response = httpx.post(
            server.url + "/v1/rollout/init",
            json={"rollout_id": "inflight", "server_url": gate.url, "messages": prompt(), "completion_params": {}},
        )
        assert response.status_code == 202
    finally:
        await asyncio.to_thread(server_cm.__exit__, None, None, None)
    callbacks = await gate.wait_for_callbacks("inflight", timeout=5)
    assert len(callbacks) == 1
    assert callbacks[0]["status"] == "ERROR" and "shut down" in callbacks[0]["error_message"]


async def test_every_accepted_init_gets_exactly_one_final_callback(gate):
    """Invariant: N accepted inits (duplicates included) → one final callback per distinct key."""
    with serving(ToolLoop(), max_concurrent=3) as server:
        async with httpx.AsyncClient(timeout=10) as client:
            async def init(rid, key=None):
                body = {"rollout_id": rid, "server_url": gate.url, "messages": prompt("What is 4 + 4?"),
                        "completion_params": {}}
                if key:
                    body["idempotency_key"] = key
                return await client.post(server.url + "/v1/rollout/init", json=body)

            replies = await asyncio.gather(*[init(f"inv-{i % 8}") for i in range(24)])
        assert {r.status_code for r in replies} == {202}
        for i in range(8):
            callbacks = await gate.wait_for_callbacks(f"inv-{i}", timeout=10)
            assert len(callbacks) == 1 and callbacks[0]["status"] == "COMPLETED"
        await asyncio.sleep(0.2)
        assert all(len(gate.callbacks(f"inv-{i}")) == 1 for i in range(8))
