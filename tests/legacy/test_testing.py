"""Legacy testing helpers (spec §2.18): fake token ids, the tracker, the mock trainer app, the httpx patch."""

import threading

import httpx
import pytest
from fastapi.testclient import TestClient

from osmosis_compat.legacy.base import RolloutAgentLoop, RolloutContext
from osmosis_compat.legacy.client import OsmosisLLMClient
from osmosis_compat.legacy.schemas import RolloutRequest
from osmosis_compat.legacy.testing import (
    RolloutCompletionTracker,
    create_mock_trainer_app,
    fake_prompt_token_ids,
    fake_token_ids,
    patch_httpx_for_mock_trainer,
)
from osmosis_compat.legacy.tools import create_tool_result, get_tool_call_info


def test_fake_token_ids():
    assert fake_token_ids("abc") == [0, 1, 2]
    assert fake_token_ids("") == []
    assert fake_prompt_token_ids([]) == list(range(10))
    assert fake_prompt_token_ids([{}, {}, {}]) == list(range(30))


def test_tracker():
    tracker = RolloutCompletionTracker()
    assert tracker.wait(timeout=0.01) is False
    threading.Timer(0.01, tracker.record, args=({"rollout_id": "r"},)).start()
    assert tracker.wait(timeout=2) is True
    assert tracker.responses == [{"rollout_id": "r"}]
    tracker.clear()
    assert tracker.responses == [] and not tracker.event.is_set()


@pytest.fixture
def tracker():
    return RolloutCompletionTracker()


@pytest.fixture
def client(tracker):
    return TestClient(create_mock_trainer_app(tracker=tracker))


def chat(client, messages, **extra):
    return client.post("/v1/chat/completions", json={"messages": messages, "rollout_id": "r-9", **extra})


@pytest.mark.parametrize("word", ["Calculate", "ADD", "sum", "plus", "subtract", "multiply", "divide"])
def test_mock_tool_call_on_calculation_words(client, word):
    reply = chat(client, [{"role": "user", "content": f"please {word} 5 and 3"}], model="m").json()
    assert reply["id"] == "r-9" and reply["model"] == "m" and reply["object"] == "chat.completion"
    [choice] = reply["choices"]
    assert choice["finish_reason"] == "stop"
    assert choice["message"] == {
        "role": "assistant",
        "content": "I'll help you with that calculation.",
        "tool_calls": [{"id": "call_mock_add", "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 5, "b": 3}'}}],
    }
    content = choice["message"]["content"]
    assert reply["token_ids"] == list(range(len(content)))
    assert reply["logprobs"] == [0.0] * len(content)
    assert reply["prompt_token_ids"] == list(range(10))
    assert reply["usage"] == {"prompt_tokens": 10, "completion_tokens": len(content),
                              "total_tokens": 10 + len(content)}


def test_mock_replies_after_tool_and_otherwise(client):
    after_tool = chat(client, [{"role": "user", "content": "add"}, {"role": "tool", "content": "8"}]).json()
    assert after_tool["choices"][0]["message"] == {"role": "assistant", "content": "The calculation is complete."}
    plain = chat(client, [{"role": "user", "content": "hello"}]).json()
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": "OK."}
    empty = chat(client, []).json()
    assert empty["choices"][0]["message"]["content"] == "OK."
    assert empty["prompt_token_ids"] == list(range(10))
    multipart = chat(client, [{"role": "user", "content": [{"type": "text", "text": "add"}]}]).json()
    assert multipart["choices"][0]["message"]["content"] == "OK."


def test_mock_validates_bodies(client):
    assert client.post("/v1/chat/completions", json={"messages": []}).status_code == 422
    assert client.post("/v1/rollout/completed", json={"rollout_id": "r", "status": "DONE"}).status_code == 422


def test_custom_generator_returns_tool_calls_as_upstream():
    """Upstream's generator contract: last message in, a list of tool calls (or None) out."""
    seen = []
    call = {"id": "call_1", "type": "function", "function": {"name": "multiply", "arguments": '{"a": 6, "b": 7}'}}

    def generator(last_message):
        seen.append(last_message)
        return [call] if last_message.get("content") == "six times seven" else None

    client = TestClient(create_mock_trainer_app(tool_call_generator=generator))
    reply = chat(client, [{"role": "user", "content": "six times seven"}]).json()["choices"][0]
    assert reply["message"] == {"role": "assistant", "content": "I'll help you with that calculation.",
                                "tool_calls": [call]}
    assert reply["finish_reason"] == "stop"
    # The custom generator replaces the built-in one: "add" no longer triggers the add tool call.
    assert chat(client, [{"role": "user", "content": "add 1 and 2"}]).json()["choices"][0]["message"] == {
        "role": "assistant", "content": "OK."}
    tool_msg = {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    assert chat(client, [tool_msg]).json()["choices"][0]["message"]["content"] == "The calculation is complete."
    assert seen[0] == {"role": "user", "content": "six times seven"}


def test_custom_generator_may_return_a_whole_message():
    client = TestClient(create_mock_trainer_app(tool_call_generator=lambda m: {"role": "assistant", "content": "x"}))
    assert chat(client, [{"role": "user", "content": "add"}]).json()["choices"][0]["message"]["content"] == "x"


def test_custom_generator_returning_something_else_is_a_clear_error():
    client = TestClient(create_mock_trainer_app(tool_call_generator=lambda m: "add"), raise_server_exceptions=True)
    with pytest.raises(TypeError, match="must return a list of tool calls or None, got str"):
        chat(client, [{"role": "user", "content": "add"}])


def test_completed_store_and_health(client, tracker):
    body = {"rollout_id": "r-1", "status": "COMPLETED", "final_messages": [], "reward": 1, "finish_reason": None}
    assert client.post("/v1/rollout/completed", json=body).json() == {"status": "ok"}
    stored = client.get("/v1/rollout/completed/r-1").json()
    assert stored == {"rollout_id": "r-1", "status": "COMPLETED", "final_messages": [], "reward": 1.0,
                      "extra_fields": {}}
    assert tracker.responses == [stored]
    assert client.get("/v1/rollout/completed/unknown").json() == {}
    assert client.get("/health").json() == {"status": "healthy", "service": "mock-trainer"}


class CalculatorLoop(RolloutAgentLoop):
    name = "calculator"

    def get_tools(self, request):
        return []

    async def run(self, ctx: RolloutContext):
        messages = list(ctx.request.messages)
        result = await ctx.chat(messages)
        messages.append(result.message)
        for call in result.tool_calls:
            call_id, name, args = get_tool_call_info(call)
            messages.append(create_tool_result(call_id, str(args["a"] + args["b"])))
            ctx.record_tool_call(latency_ms=1.0)
        result = await ctx.chat(messages)
        messages.append(result.message)
        return ctx.complete(messages, reward=1.0)


async def test_patch_routes_sdk_calls_into_mock_trainer(monkeypatch, client, tracker):
    patch_httpx_for_mock_trainer(client, monkeypatch)
    request = RolloutRequest(rollout_id="r-calc", server_url="http://mock-trainer.invalid/prefix",
                             messages=[{"role": "user", "content": "Calculate 5 + 3"}], completion_params={})
    llm = OsmosisLLMClient(server_url=request.server_url, rollout_id=request.rollout_id)
    try:
        ctx = RolloutContext(request=request, tools=[], llm=llm)
        result = await CalculatorLoop().run(ctx)
        await llm.complete_rollout(status=result.status, final_messages=result.final_messages,
                                   finish_reason=result.finish_reason, metrics=result.metrics,
                                   reward=result.reward)
    finally:
        close = getattr(llm, "close", None)
        if close is not None:
            await close()
    assert tracker.wait(timeout=1)
    [payload] = tracker.responses
    assert payload["rollout_id"] == "r-calc" and payload["status"] == "COMPLETED" and payload["reward"] == 1.0
    contents = [m.get("content") for m in payload["final_messages"]]
    assert contents == ["Calculate 5 + 3", "I'll help you with that calculation.", "8",
                        "The calculation is complete."]
    assert payload["metrics"]["num_llm_calls"] == 2 and payload["metrics"]["num_tool_calls"] == 1


async def test_patch_leaves_other_urls_alone(monkeypatch, client):
    patch_httpx_for_mock_trainer(client, monkeypatch)
    transport = httpx.MockTransport(lambda request: httpx.Response(201, json={"real": True}))
    async with httpx.AsyncClient(transport=transport) as http:
        response = await http.post("http://elsewhere.invalid/api", json={})
    assert response.status_code == 201 and response.json() == {"real": True}
    async with httpx.AsyncClient(transport=transport) as http:
        routed = await http.post("http://elsewhere.invalid/v1/chat/completions",
                                 json={"messages": [], "rollout_id": "r"})
    assert routed.status_code == 200 and routed.json()["id"] == "r"


async def test_patch_passes_non_json_answers_through(monkeypatch):
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def broken():
        return PlainTextResponse("Internal Server Error", status_code=500)

    patch_httpx_for_mock_trainer(TestClient(app), monkeypatch)
    async with httpx.AsyncClient() as http:
        response = await http.post("http://tg.invalid/v1/chat/completions", json={})
    assert response.status_code == 500 and response.text == "Internal Server Error"
