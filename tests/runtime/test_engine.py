"""RolloutEngine: admission by key, slots, TTL records, bounded drain and abort on shutdown."""

import asyncio

import pytest

from osmosis_compat.runtime.engine import EngineClosedError, RolloutEngine


async def test_duplicate_key_gets_leader_value_and_does_not_run_twice():
    engine = RolloutEngine()
    runs = []
    release = asyncio.Event()

    async def run(admission):
        runs.append(admission.key)
        await release.wait()

    first = await engine.submit("k", prepare=lambda: _value("leader"), run=run)
    second = await engine.submit("k", prepare=lambda: _value("dup"), run=run)
    assert (first.value, first.created) == ("leader", True)
    assert (second.value, second.created) == ("leader", False)
    await asyncio.sleep(0)
    assert engine.active_count == 1
    release.set()
    await _settle(engine)
    assert runs == ["k"]
    assert engine.completed_count == 1
    # still remembered within the TTL: a retry after completion is answered from the record
    third = await engine.submit("k", prepare=lambda: _value("late"), run=run)
    assert (third.value, third.created) == ("leader", False)


async def test_concurrent_duplicates_wait_for_the_leaders_prepare():
    engine = RolloutEngine()
    gate = asyncio.Event()

    async def slow_prepare():
        await gate.wait()
        return "tools"

    leader = asyncio.create_task(engine.submit("k", prepare=slow_prepare, run=_noop))
    await asyncio.sleep(0)
    dup = asyncio.create_task(engine.submit("k", prepare=lambda: _value("x"), run=_noop))
    await asyncio.sleep(0)
    gate.set()
    assert (await leader).value == "tools"
    assert ((await dup).value, (await dup).created) == ("tools", False)


async def test_prepare_failure_starts_nothing_and_forgets_the_key():
    engine = RolloutEngine()
    ran = []

    async def boom():
        raise ValueError("bad tools")

    with pytest.raises(ValueError, match="bad tools"):
        await engine.submit("k", prepare=boom, run=lambda a: _append(ran, a))
    assert engine.active_count == 0 and engine.get("k") is None and await engine.lookup("k") is None
    ok = await engine.submit("k", prepare=lambda: _value("fine"), run=lambda a: _append(ran, a))
    assert ok.created
    await _settle(engine)
    assert len(ran) == 1


async def test_keep_completed_false_allows_resubmission_after_finish_but_not_while_running():
    engine = RolloutEngine(keep_completed=False)
    release = asyncio.Event()
    runs = []

    async def run(admission):
        runs.append(1)
        await release.wait()

    assert (await engine.submit("r", run=run)).created
    assert not (await engine.submit("r", run=run)).created
    release.set()
    await _settle(engine)
    assert engine.completed_count == 0
    assert (await engine.submit("r", run=run)).created
    await _settle(engine)
    assert runs == [1, 1]


async def test_concurrency_limit_queues_rollouts():
    engine = RolloutEngine(max_concurrent=2)
    running = 0
    peak = 0

    async def run(admission):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1

    for i in range(6):
        await engine.submit(f"k{i}", run=run)
    await asyncio.sleep(0)
    assert engine.limiter.queued + engine.limiter.running == 6
    await _settle(engine)
    assert peak == 2


async def test_prune_drops_records_older_than_ttl():
    engine = RolloutEngine(record_ttl_seconds=60)
    await engine.submit("k", run=_noop)
    await _settle(engine)
    assert engine.prune() == 0
    record = await engine.lookup("k")
    assert record is not None and record.finished and record.result is None
    assert engine.prune(now=record.finished_at + 61) == 1
    assert await engine.lookup("k") is None


async def test_shutdown_drains_then_aborts_the_rest_exactly_once():
    engine = RolloutEngine(drain_timeout_seconds=0.05)
    engine.start()
    aborted = []

    async def quick(admission):
        await asyncio.sleep(0.001)

    async def stuck(admission):
        await asyncio.sleep(3600)

    async def abort(admission):
        aborted.append(admission.key)

    await engine.submit("quick", run=quick, abort=abort)
    await engine.submit("stuck", run=stuck, abort=abort)
    stuck = engine.get("stuck")
    await engine.shutdown()
    assert aborted == ["stuck"]
    assert stuck.aborted and engine.get("stuck") is None
    with pytest.raises(EngineClosedError):
        await engine.submit("new", run=_noop)


async def test_abort_handler_failure_is_contained():
    engine = RolloutEngine(drain_timeout_seconds=0.01)

    async def stuck(admission):
        await asyncio.sleep(3600)

    async def bad_abort(admission):
        raise RuntimeError("callback down")

    await engine.submit("a", run=stuck, abort=bad_abort)
    await engine.shutdown()  # must not raise


async def test_errors_escaping_run_do_not_kill_the_engine():
    engine = RolloutEngine()

    async def bad(admission):
        raise RuntimeError("bug")

    await engine.submit("a", run=bad)
    await _settle(engine)
    assert engine.active_count == 0 and engine.completed_count == 1


async def _value(v):
    return v


async def _noop(admission):
    return None


async def _append(target, admission):
    target.append(admission.key)


async def _settle(engine):
    for _ in range(200):
        if engine.active_count == 0:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("rollouts did not finish")


async def test_finished_record_keeps_only_key_answer_and_status():
    """What idempotency needs, not the request or the task (issue 12, item 4)."""
    engine = RolloutEngine()
    request = {"big": "x" * 10_000}

    async def run(admission):
        admission.context["request"] = request

    submission = await engine.submit("k", prepare=lambda: _value({"rollout_id": "k"}), run=run)
    await _settle(engine)
    assert engine.get("k") is None  # the admission (and what it held) is gone
    record = await engine.lookup("k")
    assert (record.answer, record.status, record.result) == ({"rollout_id": "k"}, "success", None)
    assert submission.admission.context["request"] is request  # only the caller still holds it


async def test_cancel_stops_a_running_rollout_and_marks_the_record():
    engine = RolloutEngine()
    started = asyncio.Event()

    async def run(admission):
        started.set()
        await asyncio.sleep(3600)

    submission = await engine.submit("k", run=run)
    await started.wait()
    assert await engine.cancel("k")
    await _settle(engine)
    assert submission.admission.cancelled
    assert (await engine.lookup("k")).status == "cancelled"
    assert not await engine.cancel("k")


async def test_max_pending_refuses_beyond_the_cap():
    from osmosis_compat.runtime.engine import EngineFullError

    engine = RolloutEngine(max_pending=1)
    gate = asyncio.Event()

    async def run(admission):
        await gate.wait()

    await engine.submit("a", run=run)
    with pytest.raises(EngineFullError):
        await engine.submit("b", run=run)
    gate.set()
    await _settle(engine)
    assert (await engine.submit("b", run=run)).created
