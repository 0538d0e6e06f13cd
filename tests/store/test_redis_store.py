"""What only the Redis store has to get right, on a real ``redis-server``: changes reach exactly the processes that
watch a record, a wake without a change does not end a wait, a hung server fails calls in bounded time and a
restarted one is reconnected without an error. (What every store must do is in test_store_contract.py.)"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from osmosis_compat.runtime.store import RolloutRecord, Snapshot, StoreUnavailableError, open_store
from osmosis_compat.runtime.store import redis as redis_store
from tests.redis_server import RedisServer, two_processes


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
async def processes(redis_server: RedisServer) -> AsyncIterator[tuple[Any, Any]]:
    async with two_processes(redis_server.url) as pair:
        yield pair


class ChangeMessages:
    """Every message published on the stores' change channels, by channel (a raw subscriber on the side)."""

    def __init__(self, url: str) -> None:
        import redis.asyncio as redis

        self.client = redis.Redis.from_url(url)
        self.pubsub = self.client.pubsub(ignore_subscribe_messages=True)
        self.seen: list[tuple[str, str]] = []

    async def __aenter__(self) -> ChangeMessages:
        await self.pubsub.psubscribe("osmosis:changes:*")
        self.task = asyncio.get_running_loop().create_task(self._collect())
        return self

    async def _collect(self) -> None:
        while True:
            message = await self.pubsub.get_message(timeout=1.0)
            if message is not None:
                self.seen.append((message["channel"].decode(), message["data"].decode()))

    async def settled(self) -> list[tuple[str, str]]:
        await asyncio.sleep(0.2)
        return self.seen

    async def __aexit__(self, *exc: object) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.pubsub.aclose()
        await self.client.aclose()


def lease_record(key: str) -> RolloutRecord:
    return RolloutRecord(key=key, owner="p1", protocol="polling", status="running", lease_digest="d", lease_deadline=time.time() + 60)


async def test_changes_are_published_only_to_the_processes_that_watch(processes: tuple[Any, Any], redis_server: RedisServer) -> None:
    a, b = processes
    async with ChangeMessages(redis_server.url) as messages:
        # nobody watches: a rollout's whole life publishes nothing
        await a.create(lease_record("alone"))
        await a.update("alone", status="grading")
        await a.finish("alone", "success", result={"ok": True}, retention=60)
        assert await messages.settled() == []

        # b long-polls (its lease renewal registers it): a's changes go to b's channel only, a wakes its own
        await a.create(lease_record("shared"))
        async with a.watch("shared") as here, b.watch("shared") as there:
            now = time.time()
            check = await b.renew_lease("shared", "d", now + 60, now)
            assert check.outcome == "renewed"
            await a.update("shared", status="grading")
            assert await here.wait(check.snapshot, timeout=5) == Snapshot(1, "grading")
            assert await there.wait(check.snapshot, timeout=5) == Snapshot(1, "grading")
        assert await messages.settled() == [(f"osmosis:changes:{b._shared.id}", f"{b._key('shared')} 1 \"grading\"")]


async def test_a_wait_without_a_renewal_registers_itself(processes: tuple[Any, Any], redis_server: RedisServer) -> None:
    """A duplicate admission waiting for the leader's answer (no lease involved) still hears the other process."""
    a, b = processes
    await a.create(RolloutRecord(key="dup", owner="p1"))
    waiter = asyncio.create_task(b.wait_for_change("dup", 0, timeout=5))
    await asyncio.sleep(0.2)
    await a.update("dup", answer={"rollout_id": "dup"})
    woken = await asyncio.wait_for(waiter, 2)
    assert woken.answer == {"rollout_id": "dup"}


async def test_a_wake_without_a_change_does_not_end_a_wait(processes: tuple[Any, Any]) -> None:
    """After the listener re-subscribes, every watch re-reads; one whose record did not change waits on."""
    a, b = processes
    await a.create(RolloutRecord(key="quiet", owner="p1"))
    async with b.watch("quiet") as changes:
        seen = (await b.get("quiet")).snapshot()
        waiter = asyncio.create_task(changes.wait(seen, timeout=5))
        await asyncio.sleep(0.2)
        b._shared.wake_all()  # as after a reconnect
        await asyncio.sleep(0.2)
        assert not waiter.done()
        await a.update("quiet", status="running")
        assert await asyncio.wait_for(waiter, 2) == Snapshot(1, "running")


async def test_a_hung_redis_fails_calls_in_bounded_time_and_they_work_again_after(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_store, "COMMAND_TIMEOUT_S", 1.0)
    store = open_store(redis_server.url).namespaced("hung:")
    await store.start()
    try:
        await store.create(RolloutRecord(key="k", owner="p1"))
        assert redis_server.proc is not None
        os.kill(redis_server.proc.pid, signal.SIGSTOP)  # accepts nothing, answers nothing: a hung server
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError, match=r"no answer within 1 s"):
                await store.get("k")
            assert time.monotonic() - started < 2.5
        finally:
            os.kill(redis_server.proc.pid, signal.SIGCONT)
        assert (await store.get("k")).key == "k"
    finally:
        await store.close()


async def test_a_restarted_redis_is_reconnected_without_an_error(redis_server: RedisServer) -> None:
    store = open_store(redis_server.url).namespaced("restart:")
    await store.start()
    try:
        await store.create(RolloutRecord(key="kept", owner="p1"))
        redis_server.restart()  # the pooled connections now point at a server that is gone
        assert (await store.get("kept")).key == "kept"  # kept by the snapshot; no 503 on the first call
        assert await store.update("kept", status="running")
    finally:
        await store.close()


async def test_without_hiredis_commands_are_packed_by_redis_py(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from osmosis_compat.runtime.store import redis_commands

    monkeypatch.setattr(redis_commands, "_hiredis_pack", None)
    store = open_store(redis_server.url).namespaced("plain:")
    await store.start()
    try:
        await store.create(RolloutRecord(key="k", owner="p1", answer={"text": "héllo"}))
        assert (await store.get_many(["k", "nope"]))[0].answer == {"text": "héllo"}  # a pipeline too
        assert await store.keys() == ["k"]
    finally:
        await store.close()
