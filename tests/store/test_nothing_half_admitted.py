"""Nothing half-admitted (issue 20 item 7): a real ``redis-server`` stopped (``SIGSTOP``) and continued around an
admission, a cancel and a result poll, for every protocol; and a reply lost on the way back.

An answer that says "not done" (503) must leave nothing behind that blocks the controller. Before, Redis ran the
queued admission after ``SIGCONT``: the id was registered with no task behind it, so the controller's retry of the
same body got 409 (polling), 200 and then silence (0.2.31 callbacks) or a 202 and no callback (legacy) — and
neither lease expiry nor a cancel freed the id. A cancel whose write stalled hung for up to two minutes and then
answered ``not_found`` for a rollout that kept running.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from osmosis_compat.runtime.store import open_store
from osmosis_compat.runtime.store import redis as redis_store
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import FakePollingController, FakeTrainGate, FakeWorkflowController, ScriptedPolicy, serve_app_async
from osmosis_compat.testing.recording import UnexpectedStatus
from tests.redis_server import RedisServer
from tests.server import polling_agents
from tests.server.polling_agents import SleepyLoop, steered_app
from tests.store.stalls import StallingProxy, script_sha, wait_until_redis_answers

PROMPT = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": "What is 2 + 2?"}]
TIMEOUT = 1.0  # the store's command timeout in these tests (5 s in production)
UNAVAILABLE = {"detail": "rollout store unavailable; retry later"}


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
async def proxy(redis: RedisServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StallingProxy]:
    monkeypatch.setattr(redis_store, "COMMAND_TIMEOUT_S", TIMEOUT)
    async with StallingProxy(redis) as stalling:
        yield stalling


def redis_keys(redis: RedisServer, rollout_id: str) -> list[bytes]:
    import redis as redis_py

    client = redis_py.Redis.from_url(redis.url)
    try:
        return client.keys(f"*r:{rollout_id}")
    finally:
        client.close()


class Served:
    """An app of ``protocol`` on a Redis store through the proxy, and the fake controller that drives it."""

    def __init__(self, protocol: str, store: Any) -> None:
        self.protocol = protocol
        if protocol == "legacy":
            self.app = create_app(SleepyLoop(), store=store)
            self.controller: Any = FakeTrainGate(ScriptedPolicy())
        else:
            self.app = steered_app(unlimited=True, store=store, result_wait_timeout_sec=2.0, polling_lease_timeout_sec=30.0)
            self.controller = (FakePollingController if protocol == "polling" else FakeWorkflowController)(ScriptedPolicy())

    async def admit(self, client: httpx.AsyncClient, url: str, rollout_id: str) -> tuple[int, Any, Any]:
        """Admit ``rollout_id`` as this protocol's controller would: ``(status, body, handle for finished())``."""
        if self.protocol == "polling":
            try:
                admission = await self.controller.admit(url, rollout_id=rollout_id, initial_messages=PROMPT, label="4")
            except UnexpectedStatus as exc:
                return exc.status_code, exc.body, None
            return 202, admission.body, admission
        if self.protocol == "legacy":
            path, body = "/v1/rollout/init", {"rollout_id": rollout_id, "server_url": self.controller.url,
                                              "messages": PROMPT, "completion_params": {}, "metadata": {}}
        else:
            path, body = "/rollout", self.controller.rollout_body(rollout_id=rollout_id, initial_messages=PROMPT, label="4")
        response = await client.post(f"{url}{path}", json=body)
        return response.status_code, response.json(), rollout_id

    async def finished(self, url: str, handle: Any) -> str:
        """Drive an admitted rollout to its end; its final status as the controller sees it."""
        if self.protocol == "polling":
            return (await self.controller.wait_for_result(url, handle))[0]["status"]
        return (await self.controller.wait_for_callbacks(handle, timeout=15))[-1]["status"]


async def run_served(protocol: str, proxy: StallingProxy) -> AsyncIterator[tuple[Served, str, httpx.AsyncClient]]:
    store = open_store(proxy.url).namespaced(f"t{time.monotonic_ns()}:")
    served = Served(protocol, store)
    async with served.controller.serve_async():
        handle = await serve_app_async(served.app)
        try:
            async with httpx.AsyncClient(timeout=30) as client:
                yield served, handle.url, client
        finally:
            close = getattr(served.controller, "aclose", None)
            if close is not None:
                await close()
            await handle.close()


@pytest.mark.parametrize("protocol", ["polling", "workflow", "legacy"])
async def test_an_admission_that_met_a_stopped_redis_leaves_nothing_behind(
    protocol: str, proxy: StallingProxy, redis: RedisServer
) -> None:
    async for served, url, client in run_served(protocol, proxy):
        status, _, warm = await served.admit(client, url, "warm")  # a warm pool, the scripts loaded
        assert await served.finished(url, warm) in ("success", "COMPLETED")

        proxy.stop_redis_at(b"stalled")  # Redis stops just before the admission reaches it
        try:
            status, body, _ = await served.admit(client, url, "stalled")
            assert (status, body) == (503, UNAVAILABLE)
        finally:
            proxy.cont()
        wait_until_redis_answers(redis.port)  # Redis has now run the admission it held
        assert redis_keys(redis, "stalled") == []  # the late write was refused: the id is free

        status, body, retry = await served.admit(client, url, "stalled")
        assert status in (200, 202), body
        assert await served.finished(url, retry) in ("success", "COMPLETED")


@pytest.mark.parametrize("protocol", ["polling", "workflow", "legacy"])
async def test_an_admission_whose_reply_was_lost_is_undone_and_the_retry_admitted(
    protocol: str, proxy: StallingProxy, redis: RedisServer
) -> None:
    async for served, url, client in run_served(protocol, proxy):
        status, _, warm = await served.admit(client, url, "warm")
        assert await served.finished(url, warm) in ("success", "COMPLETED")

        proxy.lose_replies_at(b"lost")  # the admission runs in Redis, its answer never comes back
        status, body, _ = await served.admit(client, url, "lost")
        assert (status, body) == (503, UNAVAILABLE)
        proxy.release()

        status, body, retry = await served.admit(client, url, "lost")  # at once: the leftover record is ours
        assert status in (200, 202), body
        assert await served.finished(url, retry) in ("success", "COMPLETED")


async def test_a_cancel_that_met_a_stopped_redis_answers_503_and_its_retry_stops_the_rollout(
    proxy: StallingProxy, redis: RedisServer
) -> None:
    finish = script_sha(redis_store._FINISH)
    async for served, url, client in run_served("polling", proxy):
        admission = await served.controller.admit(url, rollout_id="c-1", initial_messages=PROMPT, metadata={"sleep": 30})
        proxy.stop_redis_at(finish)
        try:
            started = time.monotonic()
            answer = await asyncio.wait_for(client.post(f"{url}/rollout/cancel", json={"ids": ["c-1"]}), 6 * TIMEOUT)
            assert (answer.status_code, answer.json()) == (503, UNAVAILABLE)
            assert time.monotonic() - started < 4 * TIMEOUT
        finally:
            proxy.cont()
        wait_until_redis_answers(redis.port)

        again = await client.post(f"{url}/rollout/cancel", json={"ids": ["c-1"]})
        assert again.json() == {"dispositions": {"c-1": "cancelled_running"}}
        result, _, _ = await served.controller.wait_for_result(url, admission)
        assert result["status"] == "cancelled"
        for _ in range(50):
            if "c-1" in polling_agents.cancelled:
                break
            await asyncio.sleep(0.05)
        assert "c-1" in polling_agents.cancelled  # the run was stopped, not left running


async def test_a_result_poll_that_met_a_stopped_redis_answers_503_and_the_lease_still_holds(
    proxy: StallingProxy, redis: RedisServer
) -> None:
    renew = script_sha(redis_store._RENEW)
    async for served, url, client in run_served("polling", proxy):
        admission = await served.controller.admit(url, rollout_id="r-1", initial_messages=PROMPT, metadata={"sleep": 1})
        proxy.stop_redis_at(renew)
        try:
            poll = await client.get(f"{url}/rollout/r-1/result", headers={"X-Osmosis-Rollout-Lease": admission.lease_token})
            assert (poll.status_code, poll.json()) == (503, UNAVAILABLE)
        finally:
            proxy.cont()
        wait_until_redis_answers(redis.port)
        result, _, _ = await served.controller.wait_for_result(url, admission)  # the same lease, valid
        assert result["status"] == "success"
