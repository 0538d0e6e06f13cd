"""What the metrics cost per rollout (issue 20 item 1: "a metric costs nothing measurable per rollout").

A. the hooks alone: the metric updates one polling rollout makes on a Redis store (admitted, running +/-, finished,
   duration, 2 model calls, 2 long-polls +/-, 5 store round trips), timed over many rollouts in process — against
   the server's CPU per rollout measured in B;
B. the whole server, in process: the legacy calculator loop (``examples/legacy/calculator_agent.py``) served on
   127.0.0.1 and driven by the fake TrainGate, alternating rounds with the metrics on and off (off: the hooks find
   no metrics and return at once); this process's CPU ms per rollout (server and fake controller together, the same
   in both) and the difference.

Run: ``python bench/metrics_cost.py [--rollouts N] [--rounds R]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from _common import ROOT, median

sys.path.insert(0, str(ROOT))

PROMPT = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "What is 12 + 30?"}]


def hooks_alone(rollouts: int) -> float:
    """µs of metric updates per polling rollout."""
    from osmosis_compat.observability import metrics

    m = metrics.get()
    started = time.perf_counter()
    for _ in range(rollouts):
        m.child(m.admitted, "polling", "calculator").inc()
        m.child(m.running, "polling", "calculator").inc()
        for _ in range(2):
            m.child(m.model_calls, "polling", "calculator", "ok").observe(0.002)
            waiting = m.child(m.long_polls, "calculator")
            waiting.inc()
            waiting.dec()
        for _ in range(5):
            m.store_round_trip("redis", time.perf_counter(), True)
        m.child(m.running, "polling", "calculator").dec()
        m.child(m.finished, "polling", "calculator", "success").inc()
        m.child(m.duration, "polling", "calculator", "success").observe(0.05)
    return (time.perf_counter() - started) / rollouts * 1e6


async def whole_server(rollouts: int, rounds: int) -> tuple[float, float]:
    """(CPU ms per rollout with metrics, without) — medians of alternating rounds."""
    from osmosis_compat.cli.loading import _import_file
    from osmosis_compat.observability import metrics
    from osmosis_compat.server.legacy_app import create_app
    from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app_async

    loop = _import_file(str(ROOT / "examples/legacy/calculator_agent.py")).agent_loop
    gate = FakeTrainGate(ScriptedPolicy())
    results: dict[bool, list[float]] = {True: [], False: []}
    async with gate.serve_async():
        server = await serve_app_async(create_app(loop))
        kept = metrics.get()
        try:
            for i in range(5):
                await gate.run_rollout(server.url, rollout_id=f"warm-{i}", messages=PROMPT, metadata={"ground_truth": "42"})
            for r in range(rounds):
                for on in (True, False) if r % 2 == 0 else (False, True):
                    metrics._metrics = kept if on else None  # off: every hook finds none and returns
                    cpu0 = time.process_time()
                    for i in range(rollouts):
                        record = await gate.run_rollout(server.url, rollout_id=f"{r}-{on}-{i}", messages=PROMPT,
                                                        metadata={"ground_truth": "42"})
                        assert record.status == "COMPLETED"
                    results[on].append((time.process_time() - cpu0) / rollouts * 1000)
        finally:
            metrics._metrics = kept
            await server.close()
    return median(results[True]), median(results[False])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    alone = median([hooks_alone(20_000) for _ in range(5)])
    on, off = asyncio.run(whole_server(args.rollouts, args.rounds))
    print("\nMetrics cost per rollout")
    print(f"A. the hooks of one polling rollout, alone: {alone:.1f} µs = {alone / 1000 / on * 100:.2f} % of B's CPU per rollout")
    print(f"B. legacy server + fake TrainGate in one process, CPU ms/rollout: metrics on {on:.3f}, off {off:.3f} "
          f"(difference {on - off:+.3f} ms, {(on - off) / off * 100:+.1f} %; medians of {args.rounds} alternating rounds)")


if __name__ == "__main__":
    main()
