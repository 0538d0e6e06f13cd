"""The pooled OpenAI client transport: connections are reused across streamed calls, a body left open after
``data: [DONE]`` costs a bounded wait (not a hang), clients are per loop and endpoint."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from osmosis_compat.testing import serve_app
from osmosis_compat.workflow.integrations import _openai_client
from osmosis_compat.workflow.integrations._openai_client import chunk_stream_class, rollout_openai_client

CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}


class SSEApp:
    """Minimal ASGI app: answers every request with one chunk + ``[DONE]``; records the client ports.

    With ``linger`` it keeps the response body open for that long after ``[DONE]``.
    """

    def __init__(self, linger: float = 0.0) -> None:
        self.linger = linger
        self.ports: list[int] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        self.ports.append(scope["client"][1])
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        body = f"data: {json.dumps(CHUNK)}\n\ndata: [DONE]\n\n".encode()
        await send({"type": "http.response.body", "body": body, "more_body": True})
        if self.linger:
            await asyncio.sleep(self.linger)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _stream_once(url: str) -> list[str]:
    from openai.types.chat import ChatCompletion

    client = rollout_openai_client(url, "k")
    stream = await client.post("/chat/completions", cast_to=ChatCompletion, body={"model": "m", "stream": True},
                               stream=True, stream_cls=chunk_stream_class())
    return [chunk.choices[0].delta.content async for chunk in stream]


async def test_streamed_calls_reuse_one_connection() -> None:
    app = SSEApp()
    with serve_app(app) as server:
        for _ in range(3):
            assert await _stream_once(server.url + "/v1") == ["hi"]
    assert len(app.ports) == 3 and len(set(app.ports)) == 1


async def test_body_left_open_after_done_is_a_bounded_wait(monkeypatch) -> None:
    monkeypatch.setattr(_openai_client, "_DRAIN_AFTER_DONE_S", 0.05)
    app = SSEApp(linger=2.0)
    with serve_app(app, timeout_graceful_shutdown=0) as server:
        started = time.monotonic()
        assert await _stream_once(server.url + "/v1") == ["hi"]
        assert time.monotonic() - started < 1.0


async def test_one_client_per_loop_and_endpoint() -> None:
    first = rollout_openai_client("http://127.0.0.1:1/v1", "k")
    assert rollout_openai_client("http://127.0.0.1:1/v1", "k") is first
    assert rollout_openai_client("http://127.0.0.1:1/v1", "other") is not first
    assert rollout_openai_client("http://127.0.0.1:2/v1", "k") is not first

    other_loop: list[Any] = []

    def in_another_loop() -> None:
        async def get() -> Any:
            return rollout_openai_client("http://127.0.0.1:1/v1", "k")

        other_loop.append(asyncio.run(get()))

    await asyncio.to_thread(in_another_loop)
    assert other_loop[0] is not first


@pytest.mark.parametrize("key, expected", [("k", "Bearer k"), (None, None)])
async def test_authorization_follows_the_key(key: str | None, expected: str | None) -> None:
    from osmosis_compat.workflow.integrations._openai_client import auth_headers_for

    client = rollout_openai_client("http://127.0.0.1:1/v1", key)
    request = client._build_request(  # what would go on the wire
        __import__("openai")._models.FinalRequestOptions.construct(
            method="post", url="/chat/completions", json_data={}, headers=auth_headers_for(key)
        )
    )
    assert request.headers.get("authorization") == expected
