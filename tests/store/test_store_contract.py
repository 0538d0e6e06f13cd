"""The RolloutStore contract, run against both implementations: MemoryStore and RedisStore on a real redis-server.

For Redis, "another process" is a second RedisStore client on the same server: what one writes, the other sees;
a change one makes wakes the other's long-poll; a cancel one requests reaches the other's listener.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from osmosis_compat.runtime.store import MemoryStore, RolloutRecord, Snapshot, StoreUnavailableError, open_store
from tests.redis_server import RedisServer, two_processes


@pytest.fixture(scope="module")
def redis_server():
    with RedisServer() as server:
        yield server


@pytest.fixture(params=["memory", "redis"])
async def stores(request: Any, redis_server: RedisServer) -> AsyncIterator[tuple[Any, Any]]:
    """Two handles on one store: the same object for memory, two clients (two "processes") for Redis."""
    if request.param == "memory":
        store = MemoryStore()
        yield store, store
        return
    async with two_processes(redis_server.url) as pair:
        yield pair


def record(key: str, owner: str = "p1", **fields: Any) -> RolloutRecord:
    return RolloutRecord(key=key, owner=owner, **fields)


async def test_exactly_one_create_wins_a_key(stores: tuple[Any, Any]) -> None:
    a, b = stores
    results = await asyncio.gather(*(store.create(record("k", owner=f"p{i}")) for i, store in enumerate([a, b] * 10)))
    winners = [r for r in results if r is None]
    assert len(winners) == 1
    owners = {r.owner for r in results if r is not None}
    assert len(owners) == 1  # every loser is told the same winner


async def test_records_round_trip_every_field(stores: tuple[Any, Any]) -> None:
    a, b = stores
    answer = {"rollout_id": "k", "tools": [], "nested": {"list": [1, 2.5, None, {}]}}
    await a.create(record("k", protocol="legacy", answer=answer, lease_digest="ab" * 32, lease_deadline=123.5))
    got = await b.get("k")
    assert (got.key, got.owner, got.protocol, got.status, got.version) == ("k", "p1", "legacy", "queued", 0)
    assert got.answer == answer  # empty lists and objects survive (no Lua JSON round trip)
    assert (got.lease_digest, got.lease_deadline, got.result, got.finished) == ("ab" * 32, 123.5, None, False)
    assert await b.get("missing") is None


async def test_status_and_answer_changes_bump_the_version(stores: tuple[Any, Any]) -> None:
    a, b = stores
    await a.create(record("k"))
    assert await b.update("k", lease_deadline=5.0)
    assert (await a.get("k")).version == 0  # not versioned
    await b.update("k", status="running")
    assert (await a.get("k")).version == 1
    await a.update("k", status="running")
    assert (await a.get("k")).version == 1  # unchanged value: no bump
    await a.update("k", answer={"x": 1})
    assert (await b.get("k")).version == 2
    assert not await a.update("missing", status="running")


async def test_finish_is_compare_and_set(stores: tuple[Any, Any]) -> None:
    a, b = stores
    await a.create(record("k"))
    outcomes = await asyncio.gather(
        a.finish("k", "success", result={"status": "success"}, retention=60),
        b.finish("k", "cancelled", result={"status": "cancelled"}, retention=60),
    )
    assert sorted(outcomes) == [False, True]
    final = await a.get("k")
    assert final.finished and final.result == {"status": final.status}
    # a finished record no longer changes
    assert not await b.update("k", status="running")
    assert (await a.get("k")).status == final.status
    assert not await b.finish("k", "failure", retention=60)


async def test_retention_drops_finished_records(stores: tuple[Any, Any]) -> None:
    a, b = stores
    await a.create(record("gone"))
    await a.finish("gone", "success", retention=0)
    assert await b.get("gone") is None
    await a.create(record("brief"))
    await a.finish("brief", "success", retention=0.2)
    assert await b.get("brief") is not None
    await asyncio.sleep(0.35)
    a.prune()
    assert await b.get("brief") is None
    assert await a.create(record("brief")) is None  # the key is free again


async def test_a_change_wakes_a_waiter_on_the_other_handle(stores: tuple[Any, Any]) -> None:
    a, b = stores
    await a.create(record("k"))
    started = time.monotonic()
    waiter = asyncio.create_task(b.wait_for_change("k", 0, timeout=5))
    await asyncio.sleep(0.1)
    await a.update("k", status="running")
    woken = await waiter
    assert woken.status == "running" and time.monotonic() - started < 2
    # no change: returns the record after the timeout
    started = time.monotonic()
    same = await b.wait_for_change("k", woken.version, timeout=0.3)
    assert same.version == woken.version and 0.25 <= time.monotonic() - started < 2


async def test_finishing_wakes_waiters_and_deleting_too(stores: tuple[Any, Any]) -> None:
    a, b = stores
    await a.create(record("f"))
    waiter = asyncio.create_task(b.wait_for_change("f", 0, timeout=5))
    await asyncio.sleep(0.05)
    await a.finish("f", "failure", result={"status": "failure"}, retention=60)
    assert (await waiter).status == "failure"
    await a.create(record("d"))
    waiter = asyncio.create_task(b.wait_for_change("d", 0, timeout=5))
    await asyncio.sleep(0.05)
    await a.delete("d")
    assert await waiter is None


async def test_a_thousand_waiters_are_woken_by_their_own_keys(stores: tuple[Any, Any]) -> None:
    a, b = stores
    for i in range(1000):
        await a.create(record(f"w{i}"))
    waiters = [asyncio.create_task(b.wait_for_change(f"w{i}", 0, timeout=10)) for i in range(1000)]
    await asyncio.sleep(0.2)
    for i in range(0, 1000, 2):
        await a.update(f"w{i}", status="running")
    await asyncio.sleep(0.3)
    assert sum(w.done() for w in waiters) == 500
    for w in waiters:
        w.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)


async def test_cancel_requests_reach_the_owner(stores: tuple[Any, Any]) -> None:
    a, b = stores
    received: list[str] = []

    async def listener(key: str) -> None:
        received.append(key)

    a.on_cancel("owner-a", listener)
    await a.create(record("c", owner="owner-a"))
    await b.request_cancel("c")
    for _ in range(50):
        if received:
            break
        await asyncio.sleep(0.02)
    assert received == ["c"]
    assert (await a.get("c")).cancel_requested


async def test_keys_by_prefix(stores: tuple[Any, Any]) -> None:
    a, b = stores
    for key in ("job-1", "job-2", "other", "job*x"):
        await a.create(record(key))
    assert await b.keys(prefix="job-") == ["job-1", "job-2"]
    assert await b.keys(prefix="job*") == ["job*x"]  # glob characters are literal
    assert sorted(await b.keys()) == ["job*x", "job-1", "job-2", "other"]


async def test_heartbeats_say_who_is_alive(stores: tuple[Any, Any]) -> None:
    a, b = stores
    await a.heartbeat("p1", ttl=0.3)
    assert await b.alive("p1")
    if isinstance(a, MemoryStore):
        return  # one process: everyone is alive
    await asyncio.sleep(0.45)
    assert not await b.alive("p1")
    await a.create(record("o1", owner="p1"))
    await a.create(record("o2", owner="p1"))
    await a.finish("o2", "success", retention=60)
    assert await b.owned("p1") == ["o1"]
    assert "p1" in await b.owners()


async def test_unreachable_redis_is_a_clear_error() -> None:
    from tests.redis_server import require_redis_server

    require_redis_server()
    store = open_store("redis://127.0.0.1:1/0")
    with pytest.raises(StoreUnavailableError, match=r"cannot reach the rollout store at redis://127\.0\.0\.1:1/0"):
        await store.start()


def test_store_urls() -> None:
    assert isinstance(open_store(None), MemoryStore) and isinstance(open_store("memory://"), MemoryStore)
    with pytest.raises(ValueError, match="unknown rollout store 'mysql://x'"):
        open_store("mysql://x")


async def test_renew_lease_checks_and_renews_in_one_step(stores: tuple[Any, Any]) -> None:
    a, b = stores
    now = time.time()
    assert (await b.renew_lease("none", "d", now + 10, now)).outcome == "unknown"
    await a.create(record("plain"))  # a record without a lease (another protocol's)
    assert (await b.renew_lease("plain", "d", now + 10, now)).outcome == "unknown"
    await a.create(record("l", lease_digest="d" * 64, lease_deadline=now + 5))
    assert (await b.renew_lease("l", "x" * 64, now + 10, now)).outcome == "forbidden"
    renewed = await b.renew_lease("l", "d" * 64, now + 10, now)
    assert renewed.outcome == "renewed" and renewed.snapshot == Snapshot(0, "queued", None)
    assert (await a.get("l")).lease_deadline == now + 10
    expired = await b.renew_lease("l", "d" * 64, now + 30, now + 11)  # asked after the deadline
    assert expired.outcome == "expired" and (await a.get("l")).lease_deadline == now + 10
    await a.finish("l", "success", result={"status": "success"}, retention=60)
    finished = await b.renew_lease("l", "d" * 64, now + 30, now + 12)
    assert finished.outcome == "finished" and finished.snapshot == Snapshot(1, "success", {"status": "success"})


async def test_finish_records_the_expired_outcome_after_the_lease(stores: tuple[Any, Any]) -> None:
    a, b = stores
    now = time.time()
    await a.create(record("late", lease_digest="d", lease_deadline=now - 1))
    await a.create(record("timely", lease_digest="d", lease_deadline=now + 60))
    for key in ("late", "timely"):
        assert await b.finish(key, "success", result={"ok": True}, retention=60, expired=("failure", {"lease": "expired"}))
    assert ((await a.get("late")).status, (await a.get("late")).result) == ("failure", {"lease": "expired"})
    assert ((await a.get("timely")).status, (await a.get("timely")).result) == ("success", {"ok": True})


async def test_a_watch_sees_changes_made_before_its_wait(stores: tuple[Any, Any]) -> None:
    a, b = stores
    await a.create(record("w"))
    async with b.watch("w") as changes:
        known = (await b.get("w")).snapshot()
        await a.update("w", status="running")  # between the read and the wait: not missed
        await asyncio.sleep(0.1)
        started = time.monotonic()
        seen = await changes.wait(known, timeout=5)
    assert seen == Snapshot(known.version + 1, "running") and time.monotonic() - started < 1
    async with b.watch("w") as changes:
        quiet = await changes.wait(seen, timeout=0.2)  # nothing changes: what was seen comes back
    assert quiet == seen
    async with b.watch("w") as changes:
        known = (await b.get("w")).snapshot()
        await a.finish("w", "success", result={"r": 1}, retention=60)
        final = await changes.wait(known, timeout=5)
    assert final.finished and final.result == {"r": 1}  # a terminal change brings the result along
    async with b.watch("w") as changes:
        await a.delete("w")
        assert await changes.wait(final, timeout=5) is None  # gone


async def test_a_watch_on_the_finishing_handle_gets_the_recorded_result(stores: tuple[Any, Any]) -> None:
    """The process that finishes a rollout hands its own long-polls the result it recorded — the lease's failure
    when the lease ran out first — and a poll on another process reads the same from the store."""
    a, b = stores
    now = time.time()
    for key, deadline, expected in (("own", now + 60, ("success", {"ok": True})), ("lapsed", now - 1, ("failure", {"lease": "expired"}))):
        await a.create(record(key, lease_digest="d", lease_deadline=deadline))
        async with a.watch(key) as here, b.watch(key) as there:
            known = (await a.get(key)).snapshot()
            assert await a.finish(key, "success", result={"ok": True}, retention=60, expired=("failure", {"lease": "expired"}))
            mine, theirs = await here.wait(known, timeout=5), await there.wait(known, timeout=5)
        assert (mine.status, mine.result) == expected == (theirs.status, theirs.result)
        assert mine.version == theirs.version == known.version + 1
    # retention 0 holds nothing: the waiter learns the record is gone, not a result nobody else can read
    await a.create(record("unheld"))
    async with a.watch("unheld") as here:
        known = (await a.get("unheld")).snapshot()
        await a.finish("unheld", "success", result={"ok": True}, retention=0)
        assert await here.wait(known, timeout=5) is None
