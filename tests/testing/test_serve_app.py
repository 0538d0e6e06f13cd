"""serve_app / serve_app_async: real uvicorn on 127.0.0.1, lifespan honoured, clean shutdown."""

from __future__ import annotations

import contextlib
import threading

import httpx
import pytest
from fastapi import FastAPI

from osmosis_compat.testing import ServerStartError, serve_app, serve_app_async


def app_with_lifespan(events: list[str], *, fail_startup: bool = False) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app):
        if fail_startup:
            raise RuntimeError("boom at startup")
        events.append("startup")
        yield
        events.append("shutdown")

    app = FastAPI(lifespan=lifespan)

    @app.get("/ping")
    async def ping() -> dict:
        return {"thread": threading.current_thread().name}

    return app


def test_serve_app_runs_in_a_thread_and_shuts_down_gracefully():
    events: list[str] = []
    with serve_app(app_with_lifespan(events)) as handle:
        assert handle.url == f"http://127.0.0.1:{handle.port}"
        response = httpx.get(f"{handle.url}/ping")
        assert response.status_code == 200
        assert response.json()["thread"].startswith("uvicorn-127.0.0.1:")
        assert events == ["startup"]
    assert events == ["startup", "shutdown"]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{handle.url}/ping")
    handle.close()  # idempotent


def test_two_servers_get_distinct_ports():
    with serve_app(app_with_lifespan([])) as one, serve_app(app_with_lifespan([])) as two:
        assert one.port != two.port


def test_startup_failure_is_reported_not_hung():
    with pytest.raises(ServerStartError):
        serve_app(app_with_lifespan([], fail_startup=True))


def test_only_loopback_is_bound():
    with pytest.raises(ValueError, match="127.0.0.1"):
        serve_app(app_with_lifespan([]), host="0.0.0.0")


async def test_serve_app_async_runs_in_the_current_loop():
    events: list[str] = []
    handle = await serve_app_async(app_with_lifespan(events))
    async with handle:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{handle.url}/ping")
        assert response.json()["thread"] == threading.current_thread().name
    assert events == ["startup", "shutdown"]
    await handle.close()


async def test_serve_app_async_startup_failure():
    with pytest.raises(ServerStartError):
        await serve_app_async(app_with_lifespan([], fail_startup=True))
