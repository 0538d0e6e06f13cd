"""RecordLog waiters across threads/loops, and StatusScript semantics."""

from __future__ import annotations

import asyncio
import threading

import pytest

from osmosis_compat.testing import StatusScript
from osmosis_compat.testing.recording import RecordLog


async def test_append_from_another_thread_wakes_the_waiter():
    log: RecordLog[int] = RecordLog()
    timer = threading.Timer(0.02, lambda: [log.append(i) for i in range(5)])
    timer.start()
    assert await log.wait_for_count(lambda i: i % 2 == 0, 3, timeout=2.0)
    timer.join()
    assert log.snapshot() == [0, 1, 2, 3, 4] and len(log) == 5


async def test_start_offset_and_timeout():
    log: RecordLog[str] = RecordLog()
    log.append("a")
    assert await log.wait_for_count(lambda x: x == "a", 1, timeout=0.01)
    assert not await log.wait_for_count(lambda x: x == "a", 1, timeout=0.02, start=1)
    waiting = asyncio.ensure_future(log.wait_for_count(lambda x: x == "a", 1, timeout=1.0, start=1))
    await asyncio.sleep(0.01)
    log.append("a")
    assert await waiting
    assert log._waiters == []  # resolved and timed-out waiters are dropped


def test_status_script_is_consumed_then_defaults():
    script = StatusScript.coerce([500, 204])
    assert [script.next_status() for _ in range(4)] == [500, 204, 200, 200]
    always = StatusScript.coerce(503)
    assert [always.next_status() for _ in range(3)] == [503] * 3
    assert StatusScript.coerce(None).next_status() == 200
    assert StatusScript.coerce(script) is script
    with pytest.raises(ValueError):
        StatusScript([42])
