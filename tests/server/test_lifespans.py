"""SubAppLifespans: sub-app lifespans started in order, failures unwound, shutdowns concurrent."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import pytest
from fastapi import FastAPI

from osmosis_compat.server.lifespans import LifespanStartupError, SubAppLifespans


def app_logging(name: str, log: list[str], *, fail: bool = False, drain_s: float = 0.0) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if fail:
            raise RuntimeError(f"{name} cannot start")
        log.append(f"start {name}")
        yield {"who": name}
        await asyncio.sleep(drain_s)
        log.append(f"stop {name}")

    return FastAPI(lifespan=lifespan)


async def test_start_in_order_stop_concurrently_and_keep_state() -> None:
    log: list[str] = []
    slow, fast = app_logging("slow", log, drain_s=0.2), app_logging("fast", log)
    lifespans = SubAppLifespans([("slow", slow), ("fast", fast)])
    await lifespans.startup()
    assert log == ["start slow", "start fast"]
    assert lifespans.state_of(fast) == {"who": "fast"}
    loop = asyncio.get_running_loop()
    started = loop.time()
    await lifespans.shutdown()
    assert log[2:] == ["stop fast", "stop slow"]  # concurrent: the fast one did not wait for the slow one
    assert loop.time() - started < 0.35


async def test_a_failing_startup_stops_the_ones_already_started() -> None:
    log: list[str] = []
    lifespans = SubAppLifespans([("ok", app_logging("ok", log)), ("bad", app_logging("bad", log, fail=True))])
    with pytest.raises(LifespanStartupError, match="bad: startup failed: .*bad cannot start"):
        await lifespans.startup()
    assert log == ["start ok", "stop ok"]


async def test_an_app_without_lifespan_support_is_fine() -> None:
    async def plain_app(scope, receive, send):
        if scope["type"] == "lifespan":
            return  # does not speak the lifespan protocol
        raise AssertionError("not called")

    lifespans = SubAppLifespans([("plain", plain_app)])
    await lifespans.startup()
    await lifespans.shutdown()
