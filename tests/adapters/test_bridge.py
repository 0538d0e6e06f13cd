"""The runtime's streaming bridge: JSON and SSE replies, tool-call deltas, usage, [DONE], errors — each over real
loopback HTTP (any client) and in process (the runtime's pooled clients, which the integrations use), with the
same replies either way."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from osmosis_compat.runtime.bridge import BridgeError, aclose_bridge, get_bridge
from osmosis_compat.runtime.http import aclose_clients, get_client
from osmosis_compat.runtime.sse import chunks_to_completion, decode_sse

TOOL_COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
                    {"id": "call_b", "type": "function", "function": {"name": "mul", "arguments": '{"a": 1, "b": 4}'}},
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
}


@pytest.fixture
async def bridge():
    bridge = await get_bridge()
    yield bridge
    await aclose_bridge()


@pytest.fixture(params=["tcp", "in-process"])
async def client(request, bridge):
    """A client of the bridge: a plain httpx client (loopback TCP) or the runtime's pooled one (in process).

    Checks, after the test, that the requests took that path and no other.
    """
    tcp, in_process = bridge.tcp_requests, bridge.in_process_requests
    if request.param == "tcp":
        async with httpx.AsyncClient() as plain:
            yield plain
        assert bridge.tcp_requests > tcp and bridge.in_process_requests == in_process
    else:
        yield get_client()
        assert bridge.in_process_requests > in_process
        assert bridge.tcp_requests == tcp, "a pooled client's request went over TCP"
        await aclose_clients()


async def test_json_reply_and_request_passthrough(bridge, client) -> None:
    seen: list[dict[str, Any]] = []

    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        return TOOL_COMPLETION

    async with bridge.route(handler) as route:
        assert route.base_url.startswith("http://127.0.0.1:")
        reply = await client.post(route.base_url + "/chat/completions", json={"messages": [], "tools": [{"x": 1}]})
        v1 = await client.post(route.base_url + "/v1/chat/completions", json={"messages": [{"role": "user"}]})
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    assert reply.json() == TOOL_COMPLETION
    assert v1.status_code == 200
    assert seen == [{"messages": [], "tools": [{"x": 1}]}, {"messages": [{"role": "user"}]}]
    assert route.calls == 2


async def test_stream_reply_has_tool_call_deltas_usage_and_done(bridge, client) -> None:
    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        return TOOL_COMPLETION

    async with bridge.route(handler) as route:
        body = {"messages": [], "stream": True, "stream_options": {"include_usage": True}}
        reply = await client.post(route.base_url + "/chat/completions", json=body)
        no_usage = await client.post(route.base_url + "/chat/completions", json={"messages": [], "stream": True})
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/event-stream"
    assert reply.text.endswith("data: [DONE]\n\n")
    chunks = decode_sse(reply.content)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    opening = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if c["choices"] and "id" in
               (c["choices"][0]["delta"].get("tool_calls") or [{}])[0]]
    assert [(o["index"], o["id"], o["function"]["name"]) for o in opening] == [(0, "call_a", "add"), (1, "call_b", "mul")]
    assert chunks[-1] == {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                          "choices": [], "usage": TOOL_COMPLETION["usage"]}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    rebuilt = chunks_to_completion(chunks)
    assert rebuilt["choices"][0]["message"]["tool_calls"] == TOOL_COMPLETION["choices"][0]["message"]["tool_calls"]
    assert "usage" not in chunks_to_completion(decode_sse(no_usage.content))


async def test_text_stream(bridge, client) -> None:
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "The answer is 5."},
                               "finish_reason": "stop"}]}

    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        return completion

    async with bridge.route(handler) as route:
        reply = await client.post(route.base_url + "/chat/completions", json={"messages": [], "stream": True})
    rebuilt = chunks_to_completion(decode_sse(reply.content))
    assert rebuilt["choices"][0]["message"]["content"] == "The answer is 5."
    assert rebuilt["choices"][0]["finish_reason"] == "stop"


async def test_errors_are_openai_shaped_and_never_retried(bridge, client) -> None:
    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        if body.get("boom"):
            raise RuntimeError("kaput")
        raise BridgeError("TrainGate said no", 422, error_type="invalid_request_error")

    async with bridge.route(handler) as route:
        refused = await client.post(route.base_url + "/chat/completions", json={"messages": []})
        crashed = await client.post(route.base_url + "/chat/completions", json={"messages": [], "boom": 1})
        not_json = await client.post(route.base_url + "/chat/completions", content=b"{nope")
        no_messages = await client.post(route.base_url + "/chat/completions", json={"model": "x"})
        wrong_method = await client.get(route.base_url + "/chat/completions")
        wrong_path = await client.post(route.base_url + "/completions", json={"messages": []})
    assert refused.status_code == 422
    assert refused.json() == {"error": {"message": "TrainGate said no", "type": "invalid_request_error", "code": 422}}
    assert crashed.status_code == 500 and "RuntimeError: kaput" in crashed.json()["error"]["message"]
    assert not_json.status_code == 400 and no_messages.status_code == 400
    assert wrong_method.status_code == 405 and wrong_path.status_code == 404
    for reply in (refused, crashed, not_json, no_messages, wrong_method, wrong_path):
        assert reply.headers["x-should-retry"] == "false"


async def test_routes_are_private_and_closed_after_use(bridge, client) -> None:
    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        return TOOL_COMPLETION

    async with bridge.route(handler) as first, bridge.route(handler) as second:
        assert first.token != second.token and len(first.token) >= 32
        guessed = await client.post(f"{bridge.url}/r/not-a-token/chat/completions", json={"messages": []})
    assert guessed.status_code == 404
    closed = await client.post(first.base_url + "/chat/completions", json={"messages": []})
    assert closed.status_code == 404


async def test_one_bridge_per_loop_started_once_under_concurrency() -> None:
    bridges = await asyncio.gather(*(get_bridge() for _ in range(5)))
    assert len({id(b) for b in bridges}) == 1 and bridges[0].port
    await aclose_bridge()
    fresh = await get_bridge()
    assert fresh is not bridges[0]
    await aclose_bridge()


def test_bridge_per_event_loop() -> None:
    ports = [asyncio.run(_port_of_new_loop()) for _ in range(2)]
    assert all(ports)


async def _port_of_new_loop() -> int:
    bridge = await get_bridge()
    try:
        return bridge.port
    finally:
        await aclose_bridge()


async def test_openai_client_streams_tool_calls_through_the_bridge(bridge, client) -> None:
    from openai import AsyncOpenAI

    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        return TOOL_COMPLETION

    async with bridge.route(handler) as route:
        openai = AsyncOpenAI(base_url=route.base_url, api_key=route.api_key, max_retries=0, http_client=client)
        stream = await openai.chat.completions.create(
            model="osmosis-rollout", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    names = [tc.function.name for c in chunks for ch in c.choices for tc in (ch.delta.tool_calls or []) if tc.function.name]
    assert names == ["add", "mul"]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 18


@pytest.mark.parametrize("path", ["tcp", "in-process"])
async def test_body_over_the_limit_is_refused(bridge, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import osmosis_compat.runtime.bridge as bridge_module

    monkeypatch.setattr(bridge_module, "_MAX_BODY_BYTES", 1000)
    calls: list[int] = []

    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        return TOOL_COMPLETION

    async with bridge.route(handler) as route:
        big = {"messages": [{"role": "user", "content": "x" * 2000}]}
        if path == "tcp":
            async with httpx.AsyncClient() as plain:
                reply = await plain.post(route.base_url + "/chat/completions", json=big)
        else:
            reply = await get_client().post(route.base_url + "/chat/completions", json=big)
            await aclose_clients()
    assert reply.status_code == 413 and reply.headers["x-should-retry"] == "false"
    assert calls == []


async def test_pooled_client_on_another_loop_goes_over_tcp(bridge) -> None:
    # The bridge's routes belong to its loop; a pooled client elsewhere (Strands' sync Agent() runs its own loop in
    # a thread) must reach them over TCP so that the handler still runs on the bridge's loop.
    loops: list[asyncio.AbstractEventLoop] = []

    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        loops.append(asyncio.get_running_loop())
        return TOOL_COMPLETION

    async def call(url: str) -> Any:
        try:
            return (await get_client().post(url, json={"messages": []})).json()
        finally:
            await aclose_clients()

    async with bridge.route(handler) as route:
        before = bridge.tcp_requests
        reply = await asyncio.to_thread(asyncio.run, call(route.base_url + "/chat/completions"))
    assert reply == TOOL_COMPLETION
    assert bridge.tcp_requests == before + 1
    assert loops == [asyncio.get_running_loop()]


async def test_in_process_call_is_cancelled_with_its_caller(bridge) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return TOOL_COMPLETION

    async with bridge.route(handler) as route:
        task = asyncio.create_task(get_client().post(route.base_url + "/chat/completions", json={"messages": []}))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(cancelled.wait(), 5)
    await aclose_clients()


async def test_closed_bridge_is_not_answered_in_process() -> None:
    bridge = await get_bridge()
    url = bridge.url
    await aclose_bridge()
    with pytest.raises(httpx.ConnectError):
        await get_client().post(url + "/r/gone/chat/completions", json={"messages": []})
    await aclose_clients()
