"""Legacy server memory over history: RSS after 3 × 1,000 rollouts at the default record TTL (issue 12 item 4).

Each legacy rollout leaves an idempotency record, kept for the record TTL (1 h by default) so a duplicate init is
answered from it. What a record needs is the key, the init answer (``{"rollout_id", "tools"}``) and the final
status; before issue 12 a record also kept the whole request and result (~16–18 KiB per rollout plus its metadata
and messages), so a busy server climbed by hundreds of MB within the hour.

The RolloutServer (examples/legacy/calculator_agent.py, ``create_app`` with default settings: TTL 3600 s) runs in
a child process so its RSS is its own; the fake TrainGate (ScriptedPolicy, 2 model calls per rollout) and the driver
run here. Every init carries realistic metadata (a ground truth and ~2 KiB of context) and a system + user prompt.
The baseline is taken after a warm-up (code paths, pools and allocator arenas in use); then three batches of
1,000 rollouts, reading VmRSS after each. The record count is checked on ``GET /health`` (``completed_rollouts``):
every record must still be held, or the figure would prove nothing.

Target: RSS after the 3,000 within 10 MB of the warm baseline.
Run: ``python bench/legacy_memory.py [--batches 3] [--rollouts 1000] [--concurrency 50] [--source DIR]``
(``--source`` serves the osmosis_compat package found in DIR instead, e.g. an older checkout exported with
``git archive``, to measure it the same way).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

import httpx
from _common import ENV, ROOT, free_port, start_server, stop

SERVER = """
import logging, sys
sys.path.insert(0, {source!r})
sys.path.insert(1, {examples!r})
import uvicorn
from calculator_agent import agent_loop
from osmosis_compat.server.legacy_app import create_app
logging.disable(logging.INFO)
uvicorn.run(create_app(agent_loop), host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""

TARGET_MB = 10.0
CONTEXT = ("The calculator must show its work. " * 60)[:2048]


def rss_mb(pid: int) -> float:
    """Current resident set size of ``pid`` (VmRSS), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def drive(gate, url: str, tag: str, n: int, concurrency: int) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with semaphore:
            record = await gate.run_rollout(
                url,
                rollout_id=f"{tag}-{i}",
                messages=[
                    {"role": "system", "content": "You are a calculator. Use the tools for every step."},
                    {"role": "user", "content": f"What is {i % 97} + 3?"},
                ],
                metadata={"ground_truth": str(i % 97 + 3), "context": CONTEXT, "row": i, "tags": ["bench", tag]},
                timeout=60,
            )
            assert record.status == "COMPLETED", record.callback

    await asyncio.gather(*(one(i) for i in range(n)))


async def settle(pid: int, seconds: float = 1.0) -> float:
    """RSS once the server is idle (in-flight work and its buffers released)."""
    await asyncio.sleep(seconds)
    return rss_mb(pid)


async def main_async(batches: int, rollouts: int, concurrency: int, source: str, warmup: int) -> dict:
    from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy

    port = free_port()
    code = SERVER.format(source=source, examples=str(ROOT / "examples" / "legacy"), port=port)
    proc = start_server(code, port, env={**ENV, "PYTHONPATH": source})
    url = f"http://127.0.0.1:{port}"
    gate = FakeTrainGate(ScriptedPolicy())
    rows = []
    try:
        async with gate.serve_async():
            await drive(gate, url, "warm", warmup, concurrency)
            baseline = await settle(proc.pid)
            for batch in range(1, batches + 1):
                started = time.perf_counter()
                await drive(gate, url, f"batch{batch}", rollouts, concurrency)
                wall = time.perf_counter() - started
                rss = await settle(proc.pid)
                held = httpx.get(url + "/health", timeout=10).json()["completed_rollouts"]
                rows.append({"batch": batch, "rollouts": batch * rollouts, "rss_mb": rss, "delta_mb": rss - baseline,
                             "records_held": held, "rollouts_per_s": rollouts / wall})
    finally:
        stop(proc)
    return {"baseline_mb": baseline, "warmup": warmup, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--rollouts", type=int, default=1000, help="rollouts per batch (default 1000)")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=300, help="rollouts before the baseline (default 300)")
    parser.add_argument("--source", default=str(ROOT), help="directory holding the osmosis_compat package to serve")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    result = asyncio.run(main_async(args.batches, args.rollouts, args.concurrency, args.source, args.warmup))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"legacy RolloutServer, default record TTL (3600 s), {args.concurrency} concurrent, source {args.source}")
    print(f"warm baseline after {result['warmup']} rollouts: {result['baseline_mb']:.1f} MB")
    print(f"{'after':>8} {'records held':>13} {'RSS MB':>8} {'vs baseline':>12} {'rollouts/s':>11}")
    for row in result["rows"]:
        print(f"{row['rollouts']:8d} {row['records_held']:13d} {row['rss_mb']:8.1f} {row['delta_mb']:+11.1f} "
              f"{row['rollouts_per_s']:11.1f}")
    final = result["rows"][-1]["delta_mb"] if result["rows"] else float("nan")
    per_rollout_kib = final * 1024 / max(1, args.batches * args.rollouts)
    verdict = "met" if final <= TARGET_MB else "MISSED"
    print(f"growth {final:+.1f} MB ({per_rollout_kib:.2f} KiB per rollout); target ≤ {TARGET_MB:.0f} MB: {verdict}")


if __name__ == "__main__":
    main()
