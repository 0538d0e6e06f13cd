"""Legacy RolloutServer throughput, per-rollout server CPU, inter-call overhead and peak RSS.

The RolloutServer (examples/legacy/calculator_agent.py, served by ``create_app``) runs in a child process so its
CPU time and RSS are its own; the fake TrainGate (zero-latency ScriptedPolicy) and the driver run here, in one
event loop. Prompts need 2 model calls ("What is 2 + 3?") or 3 ("Compute (2 + 3) * 4").

Targets (issue 2): server CPU ≤ 8 ms per 2-call rollout (upstream ~32 ms), ≥ 3× upstream's ~29 rollouts/s
(≥ 87/s), overhead between model calls p50 ≤ 1 ms at concurrency 1, peak RSS ≤ 80 MB at 50 concurrent.
Run: ``python bench/legacy_server.py [--rollouts N]``
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _common import cpu_seconds, free_port, median, peak_rss_mb, percentile, start_server, stop

SERVER = """
import logging, sys, uvicorn
sys.path.insert(0, "examples/legacy")
from calculator_agent import agent_loop
from osmosis_compat.server.legacy_app import create_app
logging.disable(logging.INFO)
uvicorn.run(create_app(agent_loop), host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""

UPSTREAM_ROLLOUTS_PER_S = 29.0
UPSTREAM_CPU_MS = 32.0


async def drive(gate, url: str, prompt: str, n: int, concurrency: int, tag: str) -> float:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with semaphore:
            record = await gate.run_rollout(url, rollout_id=f"{tag}-{i}", timeout=60,
                                            messages=[{"role": "user", "content": prompt}])
            assert record.status == "COMPLETED", record.callback

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started


def gaps_ms(gate, tag: str) -> list[float]:
    """Time between consecutive model calls of one rollout, seen at the controller."""
    by_rollout: dict[str, list[float]] = {}
    for request in gate.chat_requests():
        if request.rollout_id and request.rollout_id.startswith(tag):
            by_rollout.setdefault(request.rollout_id, []).append(request.received_at)
    gaps = []
    for times in by_rollout.values():
        gaps += [(b - a) * 1000 for a, b in zip(times, times[1:])]
    return gaps


async def main_async(n: int) -> None:
    from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy

    port = free_port()
    proc = start_server(SERVER.format(port=port), port)
    url = f"http://127.0.0.1:{port}"
    gate = FakeTrainGate(ScriptedPolicy())
    try:
        async with gate.serve_async():
            await drive(gate, url, "What is 2 + 3?", 20, 4, "warm")  # warm-up
            rows = []
            for label, prompt, calls in (("2-call", "What is 2 + 3?", 2), ("3-call", "Compute (2 + 3) * 4", 3)):
                for concurrency in (1, 50):
                    tag = f"{label}-c{concurrency}"
                    cpu_before = cpu_seconds(proc.pid)
                    wall = await drive(gate, url, prompt, n, concurrency, tag)
                    cpu_ms = (cpu_seconds(proc.pid) - cpu_before) * 1000 / n
                    gaps = gaps_ms(gate, tag)
                    rows.append((label, concurrency, n / wall, cpu_ms, median(gaps), percentile(gaps, 99)))
            rss = peak_rss_mb(proc.pid)
    finally:
        stop(proc)

    print(f"{'rollout':8} {'conc':>5} {'rollouts/s':>11} {'vs upstream':>11} {'server CPU ms':>14} "
          f"{'gap p50 ms':>11} {'gap p99 ms':>11}")
    for label, concurrency, rate, cpu_ms, p50, p99 in rows:
        print(f"{label:8} {concurrency:5d} {rate:11.1f} {rate / UPSTREAM_ROLLOUTS_PER_S:10.1f}x {cpu_ms:14.2f} "
              f"{p50:11.2f} {p99:11.2f}")
    print(f"server peak RSS: {rss:.1f} MB")
    print(f"upstream 0.2.17 on this machine: ~{UPSTREAM_ROLLOUTS_PER_S:.0f} rollouts/s, ~{UPSTREAM_CPU_MS:.0f} ms "
          "server CPU per 2-call rollout")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rollouts", type=int, default=300)
    asyncio.run(main_async(parser.parse_args().rollouts))


if __name__ == "__main__":
    main()
