"""Today's controller (0.3.8 polling): osmosis-compat against the real osmosis-ai 0.3.8 server, same run.

Workloads (every server in a fresh child process, so CPU time and RSS are the server's own; the fake 0.3.8
controller — per-rollout chat URL and key, zero-latency ``ScriptedPolicy`` — and the driver run here):

A. the two 0.3 examples, unchanged (``examples/modern/v03/``: a Strands and an OpenAI Agents calculator, 2 model
   calls + 1 tool call + grading per rollout), served by osmosis-compat and by the real 0.3.8 (its side venv,
   ``tests/upstream/venvs.py``), in alternating rounds: rollouts/s at concurrency 1 and 20, server CPU ms per
   rollout. Target (issue 11): >= 2x upstream's rollouts/s.
B. memory held by 1,000 rollouts waiting in long-polls: ``tests/upstream/entrypoints/steered_03.py`` (no
   concurrency cap; each rollout sleeps) admitted 1,000 times, every one with a poll open; the server's RSS
   growth over its warm idle state.
C. a legacy loop (``examples/legacy/calculator_agent.py``, unchanged) on one osmosis-compat server: over its own
   protocol (FakeTrainGate, callbacks) vs over polling (FakePollingController), alternating rounds. Target:
   >= 0.9x.

Run: ``python bench/polling.py [--rollouts N] [--rounds R] [--only A B C] [--no-upstream]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import ENV, ROOT, cpu_seconds, drive_polling, free_port, median, start_server, stop

sys.path.insert(0, str(ROOT))

SERVER = """
import importlib.util, logging, sys, uvicorn
path = {path!r}
sys.path.insert(0, path.rsplit("/", 1)[0])
spec = importlib.util.spec_from_file_location("entrypoint", path)
module = importlib.util.module_from_spec(spec)
sys.modules["entrypoint"] = module
spec.loader.exec_module(module)
logging.disable(logging.INFO)
uvicorn.run(module.app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""

EXAMPLES = {
    "strands": ROOT / "examples/modern/v03/strands_calculator.py",
    "openai_agents": ROOT / "examples/modern/v03/openai_agents_calculator.py",
}
STEERED = ROOT / "tests/upstream/entrypoints/steered_03.py"
LEGACY = ROOT / "examples/legacy/calculator_agent.py"
PROMPT = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "What is 12 + 30?"}]
TARGET_UPSTREAM_RATIO = 2.0
TARGET_LEGACY_RATIO = 0.9


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """A child process serving ``path``'s ``app`` with osmosis-compat (``upstream=False``) or the real 0.3.8."""

    def __init__(self, path: Path, upstream: bool, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.home = tempfile.TemporaryDirectory(prefix="bench-polling-")
        extra = {"HOME": self.home.name, "_OSMOSIS_ROLLOUT_ARTIFACT_ROOT": self.home.name, **(env or {})}
        if upstream:
            from tests.upstream.venvs import upstream_env, upstream_python

            python, environment = str(upstream_python("0.3.8")), upstream_env("0.3.8", extra)
        else:
            python, environment = None, {**ENV, **extra}
        self.proc = start_server(SERVER.format(path=str(path), port=self.port), self.port, python=python, env=environment)

    def close(self) -> None:
        stop(self.proc)
        self.home.cleanup()


async def measure_example(controller, name: str, upstream: bool, n: int) -> dict[str, float]:
    server = Server(EXAMPLES[name], upstream)
    try:
        await drive_polling(controller, server.url, 6, 3, f"warm-{name}-{upstream}", PROMPT, "42")
        out = {}
        for concurrency in (1, 20):
            cpu0 = cpu_seconds(server.proc.pid)
            wall = await drive_polling(controller, server.url, n, concurrency, f"{name}-{upstream}-{concurrency}", PROMPT, "42")
            out[f"rate{concurrency}"] = n / wall
            out[f"cpu{concurrency}"] = (cpu_seconds(server.proc.pid) - cpu0) / n * 1000
        return out
    finally:
        server.close()


async def workload_a(n: int, rounds: int, upstream: bool) -> bool:
    from osmosis_compat.testing import FakePollingController, ScriptedPolicy

    controller = FakePollingController(ScriptedPolicy())
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    async with controller.serve_async():
        for _ in range(rounds):
            for name in EXAMPLES:
                for side in ["osmosis-compat"] + (["upstream 0.3.8"] if upstream else []):
                    results.setdefault((name, side), []).append(
                        await measure_example(controller, name, side != "osmosis-compat", n)
                    )
    await controller.aclose()
    print("\nA. 0.3 examples over the polling protocol (medians of the rounds)")
    print(f"{'example':14} {'server':15} {'c=1 rollouts/s':>14} {'c=20 rollouts/s':>15} {'CPU ms/rollout c1/c20':>22}")
    ok = True
    for (name, side), rows in results.items():
        r1, r20 = median([r["rate1"] for r in rows]), median([r["rate20"] for r in rows])
        c1, c20 = median([r["cpu1"] for r in rows]), median([r["cpu20"] for r in rows])
        line = f"{name:14} {side:15} {r1:14.1f} {r20:15.1f} {c1:10.1f} / {c20:8.1f}"
        if side != "osmosis-compat":
            ours = results[(name, "osmosis-compat")]
            ratio1 = median([r["rate1"] for r in ours]) / r1
            ratio20 = median([r["rate20"] for r in ours]) / r20
            ok = ok and min(ratio1, ratio20) >= TARGET_UPSTREAM_RATIO
            line += f"   ours/upstream: {ratio1:.2f}x / {ratio20:.2f}x"
        print(line)
    if upstream:
        print(f"target: >= {TARGET_UPSTREAM_RATIO}x upstream's rollouts/s at c=1 and c=20 -> {'met' if ok else 'NOT met'}")
    return ok


async def workload_b(count: int, upstream: bool) -> None:
    from osmosis_compat.testing import FakePollingController, ScriptedPolicy

    print(f"\nB. memory held by {count:,} rollouts waiting in long-polls (server RSS growth over its warm idle state)")
    for side in ["osmosis-compat"] + (["upstream 0.3.8"] if upstream else []):
        server = Server(STEERED, side != "osmosis-compat", {"STEERED_WAIT": "30", "STEERED_LEASE": "120"})
        controller = FakePollingController(ScriptedPolicy())
        try:
            async with controller.serve_async():
                # warm: a few complete rollouts so imports, pools and caches exist before the baseline
                for i in range(5):
                    await controller.run_rollout(server.url, rollout_id=f"w{i}", initial_messages=PROMPT, label="4")
                await asyncio.sleep(0.5)
                idle = rss_mb(server.proc.pid)
                admissions = await asyncio.gather(
                    *(
                        controller.admit(server.url, rollout_id=f"m{i}", initial_messages=PROMPT, label="4", metadata={"sleep": 60})
                        for i in range(count)
                    )
                )
                polls = [asyncio.ensure_future(controller.poll(server.url, a)) for a in admissions]
                await asyncio.sleep(3.0)  # every poll is open and waiting
                held = rss_mb(server.proc.pid)
                response = await controller.cancel(server.url, all=True)
                cancelled = sum(1 for d in response.json()["dispositions"].values() if d.startswith("cancelled"))
                await asyncio.gather(*polls, return_exceptions=True)
            await controller.aclose()
            growth = held - idle
            print(f"  {side:15} idle {idle:6.1f} MB   with {count} waiting {held:6.1f} MB   "
                  f"growth {growth:6.1f} MB ({growth * 1024 / count:5.1f} KB per rollout; {cancelled} cancelled after)")
        finally:
            server.close()


async def workload_c(n: int, rounds: int) -> bool:
    from osmosis_compat.testing import FakePollingController, FakeTrainGate, ScriptedPolicy

    server = Server(LEGACY, False)
    gate = FakeTrainGate(ScriptedPolicy())
    polling = FakePollingController(ScriptedPolicy())
    rates: dict[tuple[str, int], list[float]] = {}
    try:
        async with gate.serve_async(), polling.serve_async():

            async def legacy_round(tag: str, n: int, concurrency: int) -> float:
                semaphore = asyncio.Semaphore(concurrency)

                async def one(i: int) -> None:
                    async with semaphore:
                        record = await gate.run_rollout(
                            server.url, rollout_id=f"{tag}-{i}", messages=PROMPT, metadata={"ground_truth": "42"}, timeout=60
                        )
                    assert record.status == "COMPLETED" and record.reward == 1.0, record

                started = time.perf_counter()
                await asyncio.gather(*(one(i) for i in range(n)))
                return time.perf_counter() - started

            await legacy_round("warm-l", 10, 5)
            await drive_polling(polling, server.url, 10, 5, "warm-p", PROMPT, "42")
            for r in range(rounds):
                for concurrency in (1, 20):
                    rates.setdefault(("legacy", concurrency), []).append(n / await legacy_round(f"l{r}-{concurrency}", n, concurrency))
                    rates.setdefault(("polling", concurrency), []).append(
                        n / await drive_polling(polling, server.url, n, concurrency, f"p{r}-{concurrency}", PROMPT, "42")
                    )
        await polling.aclose()
    finally:
        server.close()
    print("\nC. a legacy loop (examples/legacy/calculator_agent.py) on one server: own protocol vs polling")
    ok = True
    for concurrency in (1, 20):
        legacy, poll = median(rates[("legacy", concurrency)]), median(rates[("polling", concurrency)])
        ok = ok and poll / legacy >= TARGET_LEGACY_RATIO
        print(f"  concurrency {concurrency:2d}: legacy protocol {legacy:6.1f} rollouts/s   polling {poll:6.1f} rollouts/s   "
              f"ratio {poll / legacy:.2f}x")
    print(f"target: polling >= {TARGET_LEGACY_RATIO}x the legacy protocol -> {'met' if ok else 'NOT met'}")
    return ok


async def main_async(args: argparse.Namespace) -> None:
    print(f"bench/polling.py  rollouts per measurement {args.rollouts}, rounds {args.rounds}  (python {sys.version.split()[0]})")
    if "A" in args.only:
        await workload_a(args.rollouts, args.rounds, not args.no_upstream)
    if "B" in args.only:
        await workload_b(args.waiting, not args.no_upstream)
    if "C" in args.only:
        await workload_c(args.rollouts, args.rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=60, help="rollouts per measurement (default 60)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--waiting", type=int, default=1000, help="rollouts held in long-polls for B (default 1000)")
    parser.add_argument("--only", nargs="+", choices=("A", "B", "C"), default=["A", "B", "C"])
    parser.add_argument("--no-upstream", action="store_true", help="skip the real osmosis-ai 0.3.8 columns")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
