"""The floor each kind of rollout cannot beat, beside the server and upstream (issue 20 item 8).

For each kind — the 0.3 OpenAI Agents example, the 0.3 Strands example (``examples/modern/v03/``) and the legacy
calculator loop (``examples/legacy/calculator_agent.py``) — in one run:

- **floor**: the framework alone, in a child process, no rollout server: the example workflow's ``run()`` (the
  OpenAI Agents ``Runner.run`` / the Strands agent with the Osmosis model class) inside a bare rollout context, or
  the legacy loop's ``run(ctx)`` with its LLM client, against the *same* fake controller (zero-latency
  ``ScriptedPolicy``: 2 model calls + 1 tool call per rollout). CPU ms per rollout of that child;
- **server**: the same agent served by osmosis-compat in a child process, driven over the polling protocol (the
  workflows) or the legacy protocol (the loop) at concurrency 1: rollouts/s and the server's CPU ms per rollout,
  then that CPU as a multiple of the floor — what the server adds (admission, the lease and long-polls, grading,
  HTTP in and out) on top of what must run anyway;
- **upstream** (``--upstream``; the workflows only): the real osmosis-ai 0.3.8 serving the same file.

The fake controller runs in this process for every side, so its CPU counts for none. Rounds alternate the sides.

Run: ``python bench/floors.py [--rollouts N] [--rounds R] [--upstream] [--only agents strands legacy]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

from _common import ENV, ROOT, cpu_seconds, median

sys.path.insert(0, str(ROOT))

from polling import EXAMPLES, LEGACY, PROMPT, Server  # noqa: E402

PATHS = {"agents": EXAMPLES["openai_agents"], "strands": EXAMPLES["strands"], "legacy": LEGACY}

FLOOR = """
import asyncio, json, os, sys, time, logging
sys.path.insert(0, {root!r})
logging.disable(logging.INFO)
from osmosis_compat.cli.loading import _import_file

KIND, N, URL = {kind!r}, {n}, {url!r}
PROMPT = {prompt!r}


async def workflow_rollout(module, i):
    from osmosis_compat.workflow.context import RolloutContext
    from osmosis_compat.workflow import AgentWorkflowContext
    rid = f"floor-{{KIND}}-{{i}}"
    ctx = RolloutContext(chat_completions_url=f"{{URL}}/v1/rollouts/{{rid}}", api_key="floor-key", rollout_id=rid,
                         routing_headers=False)
    workflow = module.backend.workflow_cls()
    with ctx:
        await workflow.run(AgentWorkflowContext(prompt=PROMPT, config=None, metadata=None))


async def legacy_rollout(loop, i):
    from osmosis_compat.legacy.base import RolloutContext
    from osmosis_compat.legacy.client import OsmosisLLMClient
    from osmosis_compat.legacy.schemas import RolloutRequest
    rid = f"floor-{{KIND}}-{{i}}"
    request = RolloutRequest(rollout_id=rid, server_url=URL, messages=PROMPT, completion_params={{}},
                             metadata={{"ground_truth": "42"}})
    llm = OsmosisLLMClient(server_url=URL, rollout_id=rid)
    ctx = RolloutContext(request=request, tools=loop.get_tools(request), llm=llm, _start_time=time.monotonic())
    result = await loop.run(ctx)
    assert result.status == "COMPLETED", result


async def main():
    if KIND == "legacy":
        target = _import_file({legacy!r}).agent_loop
        one = legacy_rollout
    else:
        target = _import_file({path!r})
        one = workflow_rollout
    for i in range(5):
        await one(target, -1 - i)  # warm
    cpu0 = time.process_time()
    for i in range(N):
        await one(target, i)
    print(json.dumps({{"cpu_ms": (time.process_time() - cpu0) / N * 1000}}))


asyncio.run(main())
"""


def floor_cpu_ms(kind: str, n: int, url: str) -> float:
    path = str(PATHS[kind])
    code = FLOOR.format(root=str(ROOT), kind=kind, n=n, url=url, prompt=PROMPT, path=path, legacy=str(LEGACY))
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])["cpu_ms"]


async def served(kind: str, n: int, polling, gate, upstream: bool) -> tuple[float, float]:
    """(rollouts/s, server CPU ms per rollout) at concurrency 1."""
    from _common import drive_polling

    server = Server(PATHS[kind], upstream)
    try:
        if kind == "legacy":
            async def drive(count: int, tag: str) -> float:
                started = time.perf_counter()
                for i in range(count):
                    record = await gate.run_rollout(server.url, rollout_id=f"{tag}-{i}", messages=PROMPT,
                                                    metadata={"ground_truth": "42"})
                    assert record.status == "COMPLETED" and record.reward == 1.0, record
                return time.perf_counter() - started
        else:
            async def drive(count: int, tag: str) -> float:
                return await drive_polling(polling, server.url, count, 1, tag, PROMPT, "42")
        tag = f"{kind}-{upstream}-{time.monotonic_ns()}"
        await drive(5, f"warm-{tag}")
        cpu0 = cpu_seconds(server.proc.pid)
        wall = await drive(n, tag)
        return n / wall, (cpu_seconds(server.proc.pid) - cpu0) / n * 1000
    finally:
        server.close()


async def main_async(args: argparse.Namespace) -> None:
    from osmosis_compat.testing import FakePollingController, FakeTrainGate, ScriptedPolicy

    polling = FakePollingController(ScriptedPolicy(), check_keys=False)
    gate = FakeTrainGate(ScriptedPolicy())
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    async with polling.serve_async(), gate.serve_async():
        for kind in args.only:
            ids = [f"floor-{kind}-{i}" for i in range(-5, args.rollouts)]
            for rid in ids:
                polling._keys[rid] = "floor-key"  # the floor's rollouts are known to the controller
        for _ in range(args.rounds):
            for kind in args.only:
                url = gate.url if kind == "legacy" else polling.url
                cpu = await asyncio.to_thread(floor_cpu_ms, kind, args.rollouts, url)
                rows.setdefault((kind, "floor"), []).append((float("nan"), cpu))
                rows.setdefault((kind, "osmosis-compat"), []).append(await served(kind, args.rollouts, polling, gate, False))
                if args.upstream and kind != "legacy":
                    rows.setdefault((kind, "upstream 0.3.8"), []).append(await served(kind, args.rollouts, polling, gate, True))
        await polling.aclose()
    print(f"\nFloors (medians of {args.rounds} rounds, {args.rollouts} rollouts each, concurrency 1)")
    print(f"{'kind':8} {'side':15} {'rollouts/s':>10} {'CPU ms/rollout':>15} {'x floor':>8}")
    for kind in args.only:
        floor = median([c for _, c in rows[(kind, "floor")]])
        for side in ("floor", "osmosis-compat", "upstream 0.3.8"):
            if (kind, side) not in rows:
                continue
            rate = median([r for r, _ in rows[(kind, side)]])
            cpu = median([c for _, c in rows[(kind, side)]])
            shown = "" if side == "floor" else f"{rate:10.1f}"
            print(f"{kind:8} {side:15} {shown:>10} {cpu:15.2f} {cpu / floor:8.2f}")
        if (kind, "upstream 0.3.8") in rows:
            ours = median([r for r, _ in rows[(kind, "osmosis-compat")]])
            theirs = median([r for r, _ in rows[(kind, "upstream 0.3.8")]])
            print(f"{kind:8} ours/upstream rollouts/s: {ours / theirs:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--upstream", action="store_true")
    parser.add_argument("--only", nargs="+", default=["agents", "strands", "legacy"], choices=["agents", "strands", "legacy"])
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
