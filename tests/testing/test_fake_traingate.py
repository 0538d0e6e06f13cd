"""FakeTrainGate over real HTTP: legacy chat (rollout_id in body, tools from init), callbacks, the driver."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from osmosis_compat.testing import FakeTrainGate, RolloutTimeout, UnexpectedStatus, serve_app

ADD = {"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
    "strict": False}}
QUESTION = [{"role": "user", "content": "What is 2 + 3?"}]


@pytest.fixture
def gate():
    fake = FakeTrainGate()
    with fake.serve():
        yield fake


async def post(url: str, body, headers=None) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(url, json=body, headers=headers or {})


def tiny_agent_server(*, init_delay_s: float = 0.0, init_status: int = 202, server_key: str | None = None,
                      callback_retries: int = 1) -> FastAPI:
    """A legacy RolloutServer in miniature: 202 + tools, then an add-tool loop against
    {server_url}/v1/chat/completions (no tools in the body), then POST /v1/rollout/completed."""
    app = FastAPI()

    async def run(body: dict) -> None:
        headers = {"Authorization": f"Bearer {body['api_key']}"} if body.get("api_key") else {}
        messages = list(body["messages"])
        async with httpx.AsyncClient() as client:
            for _ in range(5):
                response = await client.post(f"{body['server_url']}/v1/chat/completions", headers=headers, json={
                    "model": "default", "messages": messages, "rollout_id": body["rollout_id"],
                    "temperature": 1.0, "top_p": 1.0, "max_tokens": 512, "logprobs": True})
                reply = response.json()["choices"][0]["message"]
                messages.append(reply)
                if not reply.get("tool_calls"):
                    break
                for call in reply["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(sum(args.values()))})
            for _ in range(callback_retries):
                done = await client.post(f"{body['server_url']}/v1/rollout/completed", headers=headers, json={
                    "rollout_id": body["rollout_id"], "status": "COMPLETED", "final_messages": messages,
                    "finish_reason": "stop", "reward": 1.0, "metrics": {}, "extra_fields": {}})
                if done.status_code == 200:
                    break

    @app.post("/v1/rollout/init")
    async def init(request: Request):
        if server_key and request.headers.get("authorization") != f"Bearer {server_key}":
            return JSONResponse({"detail": "Invalid or missing API key"}, status_code=401)
        body = await request.json()
        app.state.last_body = body
        if init_status != 202:
            return JSONResponse({"detail": "nope"}, status_code=init_status)
        asyncio.get_running_loop().create_task(run(body))
        await asyncio.sleep(init_delay_s)  # lets the agent's first chat call overtake the InitResponse
        return JSONResponse({"rollout_id": body["rollout_id"], "tools": [ADD]}, status_code=202)

    return app


async def test_run_rollout_drives_a_legacy_server(gate):
    app = tiny_agent_server(server_key="srv-key")
    with serve_app(app) as server:
        record = await gate.run_rollout(server.url, rollout_id="r-1", messages=QUESTION, api_key="srv-key",
                                        callback_api_key="cb-key", metadata={"m": 1}, timeout=5)
    sent = app.state.last_body
    assert sent == {"rollout_id": "r-1", "server_url": gate.url, "messages": QUESTION, "completion_params": {},
                    "max_turns": 10, "metadata": {"m": 1}, "api_key": "cb-key"}
    assert record.init_status_code == 202 and record.tools == [ADD]
    assert record.status == "COMPLETED" and record.reward == 1.0
    assert record.final_messages[-1] == {"role": "assistant", "content": "The answer is 5."}
    assert len(record.chat_requests) == 2
    assert all(r.headers["authorization"] == "Bearer cb-key" for r in record.chat_requests)
    assert record.callbacks == [record.callback]


async def test_driving_the_same_rollout_id_twice_keeps_the_runs_apart(gate):
    with serve_app(tiny_agent_server()) as server:
        first = await gate.run_rollout(server.url, rollout_id="dup", messages=QUESTION, timeout=5)
        second = await gate.run_rollout(server.url, rollout_id="dup", messages=QUESTION, timeout=5)
    assert len(first.callbacks) == 1 and len(second.callbacks) == 1
    assert len(first.chat_requests) == 2 and len(second.chat_requests) == 2
    assert len(gate.callbacks("dup")) == 2


async def test_chat_calls_racing_the_init_response_wait_for_the_tools(gate):
    with serve_app(tiny_agent_server(init_delay_s=0.15)) as server:
        record = await gate.run_rollout(server.url, rollout_id="r-race", messages=QUESTION, timeout=5)
    first = record.chat_requests[0]
    assert first.status_code == 200
    assert "tool_calls" in record.final_messages[1], "the first reply must already use the init tools"


async def test_chat_requires_rollout_id_and_checks_the_bearer():
    gate = FakeTrainGate(require_api_key="cb-key")
    with gate.serve():
        url = f"{gate.url}/v1/chat/completions"
        assert (await post(url, {"messages": QUESTION})).status_code == 401
        missing = await post(url, {"messages": QUESTION}, {"Authorization": "Bearer cb-key"})
        assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "rollout_id"]
        gate.set_tools("r-x", [ADD])
        ok = await post(url, {"messages": QUESTION, "rollout_id": "r-x"}, {"Authorization": "Bearer cb-key"})
        assert ok.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"
        # Unknown rollout: no tools, the policy answers by itself.
        plain = await post(url, {"messages": QUESTION, "rollout_id": "r-y"}, {"Authorization": "Bearer cb-key"})
        assert plain.json()["choices"][0]["message"]["content"] == "The answer is 5."
    assert [(r.status_code, r.rollout_id) for r in gate.chat_requests()] == [
        (401, None), (422, None), (200, "r-x"), (200, "r-y")]
    assert gate.chat_requests("r-x")[0].body["rollout_id"] == "r-x"


async def test_callback_script_fails_then_accepts_and_driver_returns_the_accepted_one():
    gate = FakeTrainGate(callback_script=[500, 500])
    with gate.serve(), serve_app(tiny_agent_server(callback_retries=3)) as server:
        record = await gate.run_rollout(server.url, rollout_id="r-2", messages=QUESTION, timeout=5)
    assert len(record.callbacks) == 3
    assert record.callback == record.callbacks[-1]
    assert [r.status_code for r in gate.callback_log.snapshot()] == [500, 500, 200]


async def test_expect_callbacks_observes_retries_with_an_always_failing_gate():
    gate = FakeTrainGate(callback_script=500)
    with gate.serve(), serve_app(tiny_agent_server(callback_retries=3)) as server:
        record = await gate.run_rollout(server.url, rollout_id="r-3", messages=QUESTION, expect_callbacks=3,
                                        timeout=5)
        assert len(record.callbacks) == 3 and record.callback == record.callbacks[2]
        with pytest.raises(RolloutTimeout) as timed_out:
            await gate.run_rollout(server.url, rollout_id="r-4", messages=QUESTION, timeout=0.5)
    assert len(timed_out.value.record.callbacks) == 3 and timed_out.value.record.callback is None


async def test_204_answer_and_direct_callback_validation(gate):
    gate.callback_script = [204]
    url = f"{gate.url}/v1/rollout/completed"
    first = await post(url, {"rollout_id": "r-5", "status": "COMPLETED"})
    assert first.status_code == 204 and first.content == b""
    assert (await post(url, {"rollout_id": "r-5", "status": "ERROR"})).json() == {"status": "ok"}
    assert (await post(url, {"status": "ERROR"})).status_code == 422
    assert [c["status"] for c in gate.callbacks("r-5")] == ["COMPLETED", "ERROR"]
    assert len(await gate.wait_for_callbacks("r-5", count=2, timeout=0.1)) == 2
    with pytest.raises(TimeoutError):
        await gate.wait_for_callbacks("r-5", count=3, timeout=0.05)


async def test_rejected_init_raises_with_the_response(gate):
    with serve_app(tiny_agent_server(init_status=500)) as server:
        with pytest.raises(UnexpectedStatus) as rejected:
            await gate.run_rollout(server.url, rollout_id="r-6", messages=QUESTION)
    assert rejected.value.status_code == 500 and rejected.value.body == {"detail": "nope"}
    # The pending-tools marker is released: a chat call for this id does not hang.
    response = await post(f"{gate.url}/v1/chat/completions", {"messages": QUESTION, "rollout_id": "r-6"})
    assert response.status_code == 200


async def test_async_served_gate_works_in_the_same_loop():
    gate = FakeTrainGate()
    async with gate.serve_async():
        with serve_app(tiny_agent_server()) as server:
            record = await gate.run_rollout(server.url, rollout_id="r-7", messages=QUESTION, timeout=5)
    assert record.status == "COMPLETED"
    assert gate.url is None


async def test_concurrent_rollouts_are_told_apart(gate):
    with serve_app(tiny_agent_server(init_delay_s=0.02)) as server:
        records = await asyncio.gather(*(
            gate.run_rollout(server.url, rollout_id=f"c-{i}",
                             messages=[{"role": "user", "content": f"What is {i} + {i}?"}], timeout=10)
            for i in range(8)
        ))
    for i, record in enumerate(records):
        assert record.rollout_id == f"c-{i}" and len(record.callbacks) == 1
        assert record.final_messages[-1]["content"] == f"The answer is {2 * i}."
        assert {r.rollout_id for r in record.chat_requests} == {f"c-{i}"}


async def test_chat_script_fails_the_agents_model_calls():
    gate = FakeTrainGate(chat_script=[500, 204])
    with gate.serve():
        url = f"{gate.url}/v1/chat/completions"
        body = {"messages": QUESTION, "rollout_id": "r-c"}
        statuses = [(await post(url, body)).status_code for _ in range(3)]
    assert statuses == [500, 204, 200]
