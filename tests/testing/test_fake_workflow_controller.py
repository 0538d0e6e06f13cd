"""FakeWorkflowController over real HTTP: chat (JSON + SSE), auth, recording, callbacks, the driver."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from osmosis_compat.runtime.sse import chunks_to_completion, decode_sse
from osmosis_compat.testing import (
    FakeWorkflowController,
    RolloutTimeout,
    ScriptedPolicy,
    UnexpectedStatus,
    serve_app,
)

ADD = {"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
AUTH = {"Authorization": "Bearer ctrl-key", "x-rollout-id": "r1", "x-sample-id": "s0"}
QUESTION = [{"role": "user", "content": "What is 2 + 3?"}]


@pytest.fixture
def controller():
    fake = FakeWorkflowController()
    with fake.serve():
        yield fake


async def post(url: str, body, headers=None) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(url, json=body, headers=headers or {})


async def test_chat_non_streaming_returns_a_chat_completion(controller):
    response = await post(f"{controller.url}/v1/chat/completions",
                          {"model": "osmosis-rollout", "messages": QUESTION, "tools": [ADD]}, AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["model"] == "osmosis-rollout"
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b": 3}'
    # /chat/completions (no /v1) is served too
    response = await post(f"{controller.url}/chat/completions", {"messages": QUESTION}, AUTH)
    assert response.json()["choices"][0]["message"]["content"] == "The answer is 5."


@pytest.mark.parametrize("include_usage", [True, False])
async def test_chat_streaming_speaks_sse_with_optional_usage(controller, include_usage):
    body = {"messages": QUESTION, "tools": [ADD], "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    response = await post(f"{controller.url}/v1/chat/completions", body, AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content.endswith(b"data: [DONE]\n\n")
    chunks = decode_sse(response.content)
    assert (chunks[-1]["choices"] == []) is include_usage
    rebuilt = chunks_to_completion(chunks)
    expected = ScriptedPolicy().reply(QUESTION, [ADD])
    assert rebuilt["choices"] == expected["choices"]


async def test_chat_rejects_bad_key_and_bad_bodies_and_records_everything(controller):
    url = f"{controller.url}/v1/chat/completions"
    assert (await post(url, {"messages": QUESTION})).status_code == 401
    assert (await post(url, {"messages": QUESTION}, {"Authorization": "Bearer wrong"})).status_code == 401
    assert (await post(url, {"messages": "nope"}, AUTH)).status_code == 422
    assert (await post(url, {"messages": QUESTION, "tools": {}}, AUTH)).status_code == 422
    async with httpx.AsyncClient() as client:
        garbled = await client.post(url, content=b"{not json", headers=AUTH)
    assert garbled.status_code == 422 and "not valid JSON" in garbled.text
    recorded = controller.chat_requests()
    assert [r.status_code for r in recorded] == [401, 401, 422, 422, 422]
    assert recorded[0].headers.get("authorization") is None
    assert recorded[2].rollout_id == "r1" and recorded[2].sample_id == "s0"
    assert controller.chat_requests("other") == []


async def test_identity_headers_can_be_required():
    fake = FakeWorkflowController(require_identity_headers=True)
    with fake.serve():
        response = await post(f"{fake.url}/v1/chat/completions", {"messages": QUESTION},
                              {"Authorization": "Bearer ctrl-key"})
    assert response.status_code == 400


async def test_a_failing_override_is_a_clear_500():
    def override(messages, tools):
        raise RuntimeError("scripted bug")

    fake = FakeWorkflowController(ScriptedPolicy(override=override))
    with fake.serve():
        response = await post(f"{fake.url}/v1/chat/completions", {"messages": QUESTION}, AUTH)
    assert response.status_code == 500 and "scripted bug" in response.json()["detail"]


async def test_callbacks_are_bearer_checked_recorded_and_scripted(controller):
    controller.completion_script = [500, 204]
    url = f"{controller.url}/callbacks/r9/completion"
    body = {"rollout_id": "r9", "status": "success"}
    statuses = [(await post(url, body, {"Authorization": "Bearer ctrl-key"})).status_code for _ in range(3)]
    assert statuses == [500, 204, 200]
    assert (await post(url, body)).status_code == 401
    grader = await post(f"{controller.url}/callbacks/r9/grader", {"samples": {}}, {"Authorization": "Bearer ctrl-key"})
    assert grader.json() == {"status": "ok"}
    assert controller.completion_callbacks("r9") == [body] * 4
    assert controller.grader_callbacks("r9") == [{"samples": {}}]
    assert len(await controller.wait_for_callbacks("r9", "completion", count=4, timeout=0.1)) == 4
    with pytest.raises(TimeoutError):
        await controller.wait_for_callbacks("r9", "grader", count=2, timeout=0.05)


# -- the driver, against a tiny 0.2.x-style rollout server written here ---------------------------------


def tiny_rollout_server(*, status_code: int = 200) -> FastAPI:
    """POST /rollout → answers, then runs an add-tool agent loop via chat_completions_url and posts both
    callbacks the way a 0.2.31 server does (bearer = controller_api_key, ids in headers)."""
    app = FastAPI()

    async def run(body: dict) -> None:
        headers = {"Authorization": f"Bearer {body['controller_api_key']}",
                   "x-rollout-id": body["rollout_id"], "x-sample-id": "s0"}
        messages = list(body["initial_messages"])
        async with httpx.AsyncClient() as client:
            for _ in range(5):
                reply = (await client.post(f"{body['chat_completions_url']}/chat/completions", headers=headers,
                                           json={"model": "osmosis-rollout", "messages": messages,
                                                 "tools": [ADD]})).json()["choices"][0]["message"]
                messages.append(reply)
                if not reply.get("tool_calls"):
                    break
                for call in reply["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(sum(args.values()))})
            auth = {"Authorization": headers["Authorization"]}
            await client.post(body["completion_callback_url"], headers=auth, json={
                "rollout_id": body["rollout_id"], "status": "success", "extra_fields": None,
                "err_message": None, "err_category": None})
            if body.get("grader_callback_url"):
                reward = 1.0 if str(body.get("label")) in messages[-1]["content"] else 0.0
                await client.post(body["grader_callback_url"], headers=auth, json={
                    "rollout_id": body["rollout_id"], "status": "success", "err_message": None,
                    "err_category": None, "samples": {"s0": {"id": "s0", "messages": messages, "reward": reward}}})

    @app.post("/rollout")
    async def rollout(request: Request):
        body = await request.json()
        if status_code < 300:
            asyncio.get_running_loop().create_task(run(body))
            app.state.last_body = body
            return {}
        return JSONResponse({"detail": "rejected"}, status_code=status_code)

    return app


async def test_run_rollout_drives_a_server_and_collects_both_callbacks(controller):
    app = tiny_rollout_server()
    with serve_app(app) as server:
        record = await controller.run_rollout(server.url, rollout_id="r-1", initial_messages=QUESTION, label="5",
                                              metadata={"k": 1}, extra_fields={"x": 1}, timeout=5)
    sent = app.state.last_body
    assert sent["chat_completions_url"] == f"{controller.url}/v1"
    assert sent["controller_api_key"] == "ctrl-key"
    assert sent["completion_callback_url"].endswith("/callbacks/r-1/completion")
    assert sent["grader_callback_url"].endswith("/callbacks/r-1/grader")
    assert sent["label"] == "5" and sent["metadata"] == {"k": 1} and sent["extra_fields"] == {"x": 1}
    assert "agent_timeout_sec" not in sent
    assert record.status_code == 200 and record.response_body == {}
    assert record.completion["status"] == "success"
    assert record.rewards == {"s0": 1.0}
    assert record.sample_ids == ["s0"]
    assert [r.body["messages"][-1]["role"] for r in record.chat_requests] == ["user", "tool"]


async def test_driving_the_same_rollout_id_twice_keeps_the_runs_apart(controller):
    with serve_app(tiny_rollout_server()) as server:
        first = await controller.run_rollout(server.url, rollout_id="dup", initial_messages=QUESTION, label="5")
        second = await controller.run_rollout(server.url, rollout_id="dup", initial_messages=QUESTION, label="5",
                                              grade=False)
    assert len(first.completions) == 1 and len(first.chat_requests) == 2
    # The second run waits for its own callback (not the first run's) and reports only its own traffic.
    assert len(second.completions) == 1 and len(second.chat_requests) == 2 and second.graders == []
    assert len(controller.completion_callbacks("dup")) == 2


async def test_run_rollout_without_grading_omits_the_grader_url(controller):
    app = tiny_rollout_server()
    with serve_app(app) as server:
        record = await controller.run_rollout(server.url, rollout_id="r-2", initial_messages=QUESTION,
                                              grade=False, timeout=5)
    assert "grader_callback_url" not in app.state.last_body
    assert record.grader is None and record.rewards == {}


async def test_run_rollout_raises_on_rejection_and_on_missing_callbacks(controller):
    with serve_app(tiny_rollout_server(status_code=422)) as server:
        with pytest.raises(UnexpectedStatus) as rejected:
            await controller.run_rollout(server.url, rollout_id="r-3", initial_messages=QUESTION)
    assert rejected.value.status_code == 422 and rejected.value.body == {"detail": "rejected"}

    controller.grader_script = 500  # never accepted → the driver must give up with what it has
    with serve_app(tiny_rollout_server()) as server:
        with pytest.raises(RolloutTimeout) as timed_out:
            await controller.run_rollout(server.url, rollout_id="r-4", initial_messages=QUESTION, timeout=0.5)
    assert timed_out.value.record.completion["status"] == "success"
    assert timed_out.value.record.grader is None and len(timed_out.value.record.graders) == 1


def test_urls_need_a_served_controller():
    with pytest.raises(RuntimeError, match="serve"):
        FakeWorkflowController().chat_completions_url


async def test_async_served_controller_and_concurrent_rollouts():
    controller = FakeWorkflowController(ScriptedPolicy(latency_s=0.01))
    async with controller.serve_async():
        with serve_app(tiny_rollout_server()) as server:
            records = await asyncio.gather(*(
                controller.run_rollout(server.url, rollout_id=f"c-{i}", label=str(2 * i),
                                       initial_messages=[{"role": "user", "content": f"What is {i} + {i}?"}])
                for i in range(6)
            ))
    assert [r.rewards for r in records] == [{"s0": 1.0}] * 6
    assert all({q.rollout_id for q in r.chat_requests} == {r.rollout_id} for r in records)
    assert controller.url is None


async def test_tool_choice_none_or_named_limits_the_offered_tools(controller):
    url = f"{controller.url}/v1/chat/completions"
    calc = {"type": "function", "function": {"name": "calculator", "parameters": {
        "type": "object", "properties": {"expression": {"type": "string"}}}}}
    none = await post(url, {"messages": QUESTION, "tools": [ADD], "tool_choice": "none"}, AUTH)
    assert none.json()["choices"][0]["message"]["content"] == "The answer is 5."
    named = await post(url, {"messages": QUESTION, "tools": [ADD, calc],
                             "tool_choice": {"type": "function", "function": {"name": "calculator"}}}, AUTH)
    assert named.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "calculator"
    auto = await post(url, {"messages": QUESTION, "tools": [ADD, calc], "tool_choice": "auto"}, AUTH)
    assert auto.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "add"


async def test_callback_urls_quote_the_rollout_id(controller):
    url = controller.completion_callback_url("run 1?x")
    assert url.endswith("/callbacks/run%201%3Fx/completion")
    assert (await post(url, {"rollout_id": "run 1?x"}, {"Authorization": "Bearer ctrl-key"})).status_code == 200
    assert controller.completion_callbacks("run 1?x") == [{"rollout_id": "run 1?x"}]


async def test_chat_script_fails_model_calls_in_openai_error_shape():
    fake = FakeWorkflowController(chat_script=[503])
    with fake.serve():
        url = f"{fake.url}/v1/chat/completions"
        assert (await post(url, {"messages": "bad"}, AUTH)).status_code == 422  # validation does not consume
        failed = await post(url, {"messages": QUESTION, "stream": True}, AUTH)
        ok = await post(url, {"messages": QUESTION}, AUTH)
    assert failed.status_code == 503
    assert failed.json() == {"error": {"message": "scripted failure (HTTP 503)", "type": "server_error", "code": 503}}
    assert ok.status_code == 200
    assert [r.status_code for r in fake.chat_requests()] == [422, 503, 200]


async def test_controller_without_a_key_sends_and_checks_none():
    fake = FakeWorkflowController(controller_api_key=None)
    with fake.serve():
        assert "controller_api_key" not in fake.rollout_body(rollout_id="n", initial_messages=QUESTION)
        response = await post(f"{fake.url}/v1/chat/completions", {"messages": QUESTION})
        callback = await post(fake.completion_callback_url("n"), {"rollout_id": "n"})
    assert response.status_code == 200 and callback.status_code == 200


async def test_per_rollout_chat_url_carries_the_identity(controller):
    base = controller.rollout_chat_completions_url("r 7")
    assert base == f"{controller.url}/v1/rollouts/r%207"
    response = await post(f"{base}/chat/completions", {"messages": QUESTION},
                          {"Authorization": "Bearer ctrl-key", "x-sample-id": "s0"})
    assert response.status_code == 200
    assert [r.rollout_id for r in controller.chat_requests("r 7")] == ["r 7"]
