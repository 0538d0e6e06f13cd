"""runtime.http.serve_in_process: the pooled clients answer a registered origin in process, on its loop only."""

from __future__ import annotations

import httpx
import pytest

from osmosis_compat.runtime.http import aclose_clients, get_client, serve_in_process


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
async def pooled():
    yield get_client()
    await aclose_clients()


async def test_registered_origin_is_answered_in_process(pooled: httpx.AsyncClient) -> None:
    port = _free_port()  # nothing listens there: only the in-process handler can answer
    seen: list[tuple[str, str, bytes]] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, await request.aread()))
        return httpx.Response(201, json={"ok": True}, headers={"x-from": "handler"})

    unregister = serve_in_process("127.0.0.1", port, handler)
    try:
        reply = await pooled.post(f"http://127.0.0.1:{port}/a/b", json={"x": 1})
    finally:
        unregister()
    assert reply.status_code == 201 and reply.json() == {"ok": True} and reply.headers["x-from"] == "handler"
    assert seen == [("POST", "/a/b", b'{"x":1}')]
    with pytest.raises(httpx.ConnectError):  # unregistered: back to the network, where nothing listens
        await pooled.post(f"http://127.0.0.1:{port}/a/b", json={"x": 1})


async def test_other_origins_and_stale_unregisters_are_untouched(pooled: httpx.AsyncClient) -> None:
    port = _free_port()

    async def first(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="first")

    async def second(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="second")

    stale = serve_in_process("127.0.0.1", port, first)
    current = serve_in_process("127.0.0.1", port, second)  # a new server on the same origin replaces the old one
    stale()  # the old server's late unregister must not remove the new registration
    stale()
    try:
        assert (await pooled.get(f"http://127.0.0.1:{port}/")).text == "second"
        with pytest.raises(httpx.ConnectError):  # same port, other host: not registered
            await pooled.get(f"http://localhost:{port}/")
    finally:
        current()
