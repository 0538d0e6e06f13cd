"""Local runner throughput: rows/s of ``osmosis-compat eval`` with the built-in scripted policy.

Everything runs in this process and one event loop, as ``osmosis-compat eval`` does: the agent's real app on
127.0.0.1, the fake controller, the runner. The dataset is examples/legacy/data/calculator.jsonl repeated (2–3
model calls per row). Measured for the example legacy loop natively and through the adapter (workflow
protocol), at concurrency 1 and 8; each figure is the median of ``--repeats`` runs after one warm-up run.

Run: ``python bench/eval_runner.py [--rows N] [--repeats K]``
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from osmosis_compat.cli.targets import load_target  # noqa: E402
from osmosis_compat.evaluation.dataset import read_dataset  # noqa: E402
from osmosis_compat.evaluation.runner import run_evaluation  # noqa: E402
from osmosis_compat.server.agents import AgentSpec  # noqa: E402
from osmosis_compat.testing import ScriptedPolicy  # noqa: E402

EXAMPLE = ROOT / "examples" / "legacy"


async def measure(agent: AgentSpec, items: list, protocol: str, concurrency: int) -> float:
    outcome = await run_evaluation(agent, items, protocol=protocol, policy=ScriptedPolicy(), concurrency=concurrency)
    assert outcome.summary.passed == len(items), outcome.summary
    return len(items) / outcome.summary.wall_time_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    base = read_dataset(EXAMPLE / "data" / "calculator.jsonl")
    dataset = Path("/tmp") / f"eval-bench-{os.getpid()}.jsonl"
    lines = (EXAMPLE / "data" / "calculator.jsonl").read_text().splitlines()
    dataset.write_text("\n".join(lines[i % len(lines)] for i in range(args.rows)) + "\n")
    try:
        items = read_dataset(dataset)
    finally:
        dataset.unlink()
    assert len(base) and len(items) == args.rows
    agent = AgentSpec.from_target(load_target(str(EXAMPLE / "calculator_agent.py") + ":agent_loop"))

    print(f"osmosis-compat eval throughput, {args.rows} rows, built-in scripted policy, median of {args.repeats}")
    print(f"{'agent / protocol':<40} {'concurrency':>11} {'rows/s':>8}")
    for label, protocol in (("legacy loop, native (legacy)", "legacy"), ("legacy loop via adapter (workflow)", "workflow")):
        for concurrency in (1, 8):
            asyncio.run(measure(agent, items[: min(20, len(items))], protocol, concurrency))  # warm-up
            rates = [asyncio.run(measure(agent, items, protocol, concurrency)) for _ in range(args.repeats)]
            print(f"{label:<40} {concurrency:>11} {statistics.median(rates):>8.1f}")


if __name__ == "__main__":
    main()
