"""Strands and OpenAI Agents integrations: rollouts/s, per-call overhead, server CPU per rollout, peak RSS.

Workload: the seeds' complete examples, unchanged (``examples/modern/seeds/``: the Strands ``MathAgentWorkflow`` with
a ``calculator`` tool and the OpenAI Agents ``MultiplyWorkflow``), each served by its own entrypoint
(``LocalBackend`` defaults, i.e. 4 concurrent rollouts) in a **fresh child process per configuration**, so CPU time and
peak RSS are the server's own. The fake workflow controller (zero-latency ``ScriptedPolicy``) and the driver run
here, in one event loop. Every rollout is 2 model calls + 1 tool call + grading, with both callbacks.

Figures:
- rollouts/s at concurrency 1 and 20 (after a warm-up);
- per-call overhead: time between a rollout's consecutive model calls as the controller sees them (the
  framework's work between two calls, tool included), p50 at concurrency 1;
- server CPU ms per rollout: the child's user+system CPU time delta (what ``time.process_time`` measures) / rollouts;
- peak RSS of the server (``VmHWM`` = ``ru_maxrss``);
- CPU per model call in process, our pooled-client transport vs upstream's litellm path (same code, switched with
  ``OSMOSIS_COMPAT_MODEL_TRANSPORT=litellm``).

- with ``--gc-compare``: osmosis-compat also with ``OSMOSIS_COMPAT_GC_FREEZE=0`` (the state before the fix);
- with ``--upstream``: the same servers run by the real osmosis-ai 0.2.31 (its side venv, built by
  ``tests/upstream/venvs.py``), measured in the same run, so both columns share the machine's load.
  ``call gap p99`` is where event-loop stalls show (issue 12: 121–170 ms at concurrency 20 from full GC passes
  over the OpenAI Agents import heap; fixed by ``workflow/integrations/_gc.py``).

Targets (issue 3, item 9): ≥ 1.5× upstream 0.2.31's rollouts/s on this machine (Strands ~19 / ~27 at concurrency
1 / 20, OpenAI Agents ~24 / ~28) and ≤ 150 MB peak RSS (upstream ~250 / ~275 MB; ~46 / ~37 ms server CPU).
Run: ``python bench/workflow_integrations.py [--rollouts N]``
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _common import cpu_seconds, free_port, median, peak_rss_mb, percentile, start_server, stop

SERVER = """
import logging, sys, uvicorn
sys.path.insert(0, "examples/modern/seeds")
from {module} import app
logging.disable(logging.INFO)
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""

INTEGRATIONS = {
    # name: (entrypoint module, question, label, upstream rollouts/s at c1, at c20, upstream CPU ms, upstream MB)
    "strands": ("strands_seed_example", "What is 12 + 30?", "42", 19.0, 27.0, 46.0, 250.0),
    "openai_agents": ("openai_agents_seed_example", "What is 6 * 7?", "42", 24.0, 28.0, 37.0, 275.0),
}
TARGET_RATIO = 1.5
TARGET_RSS_MB = 150.0


async def drive(controller, url: str, question: str, label: str, n: int, concurrency: int, tag: str) -> float:
    """Run ``n`` graded rollouts, ``concurrency`` at a time; every one must earn reward 1.0.

    The driver posts with one shared httpx client (``FakeWorkflowController.run_rollout`` builds a client per
    rollout, ~25 ms of CPU for its SSL context, which would make the driver the bottleneck on 2 cores) and waits
    for the grader callback at the fake controller.
    """
    import httpx

    semaphore = asyncio.Semaphore(concurrency)
    messages = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": question}]

    async with httpx.AsyncClient(timeout=120) as client:

        async def one(i: int) -> None:
            rollout_id = f"{tag}-{i}"
            body = controller.rollout_body(rollout_id=rollout_id, initial_messages=messages, label=label)
            async with semaphore:
                response = await client.post(f"{url}/rollout", json=body)
                assert response.status_code == 200, response.text
                [grader] = await controller.wait_for_callbacks(rollout_id, "grader", timeout=120)
            rewards = {sid: s.get("reward") for sid, s in (grader.get("samples") or {}).items()}
            assert rewards and all(r == 1.0 for r in rewards.values()), grader

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - started


def gaps_ms(controller, tag: str) -> list[float]:
    by_rollout: dict[str, list[float]] = {}
    for request in controller.chat_requests():
        if request.rollout_id and request.rollout_id.startswith(tag + "-"):
            by_rollout.setdefault(request.rollout_id, []).append(request.received_at)
    gaps: list[float] = []
    for times in by_rollout.values():
        gaps += [(b - a) * 1000 for a, b in zip(times, times[1:])]
    return gaps


def upstream_interpreter(version: str = "0.2.31") -> tuple[str, dict[str, str]]:
    """The side venv's interpreter and environment (the real osmosis-ai; built on first use, 1–2 minutes)."""
    import sys

    from _common import ROOT

    sys.path.insert(0, str(ROOT))
    from tests.upstream.venvs import upstream_env, upstream_python

    return str(upstream_python(version)), upstream_env(version)


async def measure(controller, name: str, concurrency: int, n: int, upstream: bool = False,
                  run: str = "", freeze_off: bool = False) -> dict[str, float]:
    module, question, label, *_ = INTEGRATIONS[name]
    port = free_port()
    python, env = upstream_interpreter() if upstream else (None, None)
    if freeze_off:  # the state before issue 12's fix: full GC passes walk the framework's import heap
        from _common import ENV

        env = {**ENV, "OSMOSIS_COMPAT_GC_FREEZE": "0"}
    proc = start_server(SERVER.format(module=module, port=port), port, python=python, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        await drive(controller, url, question, label, 10, min(concurrency, 4), f"warm-{name}-{concurrency}{run}")
        tag = f"{name}-c{concurrency}{run}"
        cpu_before = cpu_seconds(proc.pid)
        wall = await drive(controller, url, question, label, n, concurrency, tag)
        cpu_ms = (cpu_seconds(proc.pid) - cpu_before) * 1000 / n
        gaps = gaps_ms(controller, tag)
        rss = peak_rss_mb(proc.pid)
    finally:
        stop(proc)
    return {"rate": n / wall, "cpu_ms": cpu_ms, "gap_p50": median(gaps), "gap_p99": percentile(gaps, 99),
            "gap_max": max(gaps), "rss": rss}


async def main_async(n: int, only: list[str], upstream: bool = False, rounds: int = 1,
                     gc_compare: bool = False) -> bool:
    from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy

    controller = FakeWorkflowController(ScriptedPolicy(latency_s=0.0))
    import os

    rows = []
    load_before = os.getloadavg()[0]
    async with controller.serve_async():
        for round_ in range(rounds):
            for name in only:
                for concurrency in (1, 20):
                    sides = ["osmosis-compat"] + (["no-gc-freeze"] if gc_compare else []) + (
                        ["upstream"] if upstream else [])
                    for side in sides:
                        m = await measure(controller, name, concurrency, n, upstream=side == "upstream",
                                          run=f"-{side}-r{round_}", freeze_off=side == "no-gc-freeze")
                        rows.append((name, concurrency, side, m))

    ok = True
    print(f"{'integration':14} {'server':14} {'conc':>4} {'rollouts/s':>10} {'upstream':>8} {'ratio':>6} "
          f"{'CPU ms/rollout':>14} {'(upstream)':>10} {'call gap p50/p99/max ms':>24} {'peak RSS MB':>11}")
    for name, concurrency, side, m in rows:
        _, _, _, up_c1, up_c20, up_cpu, up_rss = INTEGRATIONS[name]
        upstream_rate = up_c1 if concurrency == 1 else up_c20
        ratio = m["rate"] / upstream_rate
        if side == "osmosis-compat":
            ok &= ratio >= TARGET_RATIO and m["rss"] <= TARGET_RSS_MB
        print(f"{name:14} {side:14} {concurrency:4d} {m['rate']:10.1f} {upstream_rate:8.0f} {ratio:5.2f}x "
              f"{m['cpu_ms']:14.1f} {up_cpu:10.0f} {m['gap_p50']:7.2f} /{m['gap_p99']:7.2f} /{m['gap_max']:7.1f} "
              f"{m['rss']:11.1f}")
    print(f"load average (1 min) before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"targets: >= {TARGET_RATIO}x upstream rollouts/s, <= {TARGET_RSS_MB:.0f} MB peak RSS "
          f"(upstream ~250 MB Strands, ~275 MB OpenAI Agents) -> {'met' if ok else 'NOT met'}")
    return ok


async def per_call_cpu(calls: int = 40) -> None:
    """CPU per model call, in process: our pooled-client transport vs upstream's litellm path.

    Both integrations run their seed workflow's agent directly (no rollout server) against the fake controller in
    this process; ``OSMOSIS_COMPAT_MODEL_TRANSPORT=litellm`` switches the same code to ``litellm.acompletion``. The
    fake's own work is in both figures, so the difference is the per-call overhead we removed.
    """
    import logging
    import os
    import sys as _sys

    logging.disable(logging.INFO)  # the entrypoints configure INFO logging; litellm logs every call at INFO

    from osmosis_compat.testing import FakeWorkflowController
    from osmosis_compat.workflow import RolloutContext

    _sys.path.insert(0, "examples/modern/seeds")
    import openai_agents_seed_example as agents_seed
    import strands_seed_example as strands_seed

    workflows = {"strands": (strands_seed.MathAgentWorkflow, "What is 12 + 30?"),
                 "openai_agents": (agents_seed.MultiplyWorkflow, "What is 6 * 7?")}
    controller = FakeWorkflowController()
    results: dict[tuple[str, str], float] = {}
    async with controller.serve_async():
        for transport in ("pooled", "litellm", "pooled", "litellm"):  # twice: the first litellm run pays its import
            os.environ["OSMOSIS_COMPAT_MODEL_TRANSPORT"] = "litellm" if transport == "litellm" else ""
            for name, (workflow_cls, question) in workflows.items():
                from osmosis_compat.workflow import AgentWorkflowContext

                samples: list[float] = []
                for i in range(calls // 2 + 5):
                    rollout_id = f"percall-{transport}-{name}-{i}-{len(results)}"
                    with RolloutContext(chat_completions_url=controller.chat_completions_url,
                                        api_key=controller.controller_api_key, rollout_id=rollout_id):
                        started = time.process_time()
                        await workflow_cls().run(AgentWorkflowContext(prompt=[{"role": "user", "content": question}]))
                        samples.append((time.process_time() - started) / 2)  # 2 model calls per run
                results[(name, transport)] = median(samples[5:]) * 1000
    os.environ.pop("OSMOSIS_COMPAT_MODEL_TRANSPORT", None)
    print("CPU per model call, in process (agent + fake controller), median:")
    for name in workflows:
        pooled, litellm = results[(name, "pooled")], results[(name, "litellm")]
        print(f"  {name:14} pooled client {pooled:6.2f} ms   litellm path (upstream) {litellm:6.2f} ms   "
              f"-> {litellm - pooled:5.2f} ms less per call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=200, help="measured rollouts per configuration")
    parser.add_argument("--only", choices=sorted(INTEGRATIONS), action="append", help="limit to one integration")
    parser.add_argument("--no-per-call", action="store_true", help="skip the in-process per-call CPU comparison")
    parser.add_argument("--upstream", action="store_true",
                        help="also serve each configuration with the real osmosis-ai 0.2.31 (side venv), interleaved")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every configuration this many times")
    parser.add_argument("--gc-compare", action="store_true",
                        help="also run osmosis-compat with OSMOSIS_COMPAT_GC_FREEZE=0 (the p99 stall before issue 12)")
    args = parser.parse_args()
    asyncio.run(main_async(args.rollouts, args.only or sorted(INTEGRATIONS), upstream=args.upstream,
                           rounds=args.rounds, gc_compare=args.gc_compare))
    if not args.no_per_call:
        asyncio.run(per_call_cpu())


if __name__ == "__main__":
    main()
