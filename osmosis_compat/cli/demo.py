"""``osmosis-compat demo`` — serve the example agents and drive a few rollouts against the fake controllers.

Everything runs on 127.0.0.1 with the built-in deterministic policy: no API key, no network. Each rollout's
transcript and reward are printed, so a new user sees the whole loop — controller → server → agent → model
calls → callback — work end to end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HELP = "serve the example agents and drive a few rollouts with the built-in policy"
DESCRIPTION = __doc__

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=3, help="dataset rows per example (default 3)")
    parser.add_argument("--examples", type=Path, default=EXAMPLES_DIR, help="the repository's examples/ directory")
    parser.add_argument("--quiet", action="store_true", help="print only the reward lines")


def run(args: argparse.Namespace) -> int:
    if not (args.examples / "legacy").is_dir():
        print(f"Error: examples not found at {args.examples}; run from a checkout or pass --examples", file=sys.stderr)
        return 1
    results = asyncio.run(_run_all(args))
    failed = [r for r in results if not r["ok"]]
    print(f"\n{len(results) - len(failed)}/{len(results)} demo rollouts completed with the expected reward.")
    return 1 if failed else 0


def read_rows(path: Path, limit: int) -> list[dict[str, Any]]:
    rows = []
    with path.open() as handle:
        for line in handle:
            if line.strip():
                rows.append(json.loads(line))
            if len(rows) >= limit:
                break
    return rows


async def _run_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    results += await _legacy_demo(args)
    return results


async def _legacy_demo(args: argparse.Namespace) -> list[dict[str, Any]]:
    from osmosis_compat.cli.loading import load_agent_loop
    from osmosis_compat.server.legacy_app import create_app
    from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app

    _section("Legacy RolloutAgentLoop (examples/legacy/calculator_agent.py) over /v1/rollout/init")
    agent_loop = load_agent_loop(str(args.examples / "legacy" / "calculator_agent.py") + ":agent_loop")
    rows = read_rows(args.examples / "legacy" / "data" / "calculator.jsonl", args.rows)
    results = []
    with FakeTrainGate(ScriptedPolicy()).serve() as gate, serve_app(create_app(agent_loop)) as server:
        for index, row in enumerate(rows):
            record = await gate.run_rollout(
                server.url,
                rollout_id=f"demo-legacy-{index}",
                messages=_prompt(row),
                metadata={"ground_truth": row["ground_truth"]},
            )
            ok = record.status == "COMPLETED" and record.reward == 1.0
            _report(args, f"legacy #{index}", row, record.final_messages, record.reward, record.status)
            results.append({"ok": ok})
    return results


def _prompt(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": row["system_prompt"]},
        {"role": "user", "content": row["user_prompt"]},
    ]


def _section(title: str) -> None:
    print(f"\n=== {title} ===")


def _report(args: argparse.Namespace, label: str, row: dict[str, Any], messages: list[dict[str, Any]],
            reward: Any, status: Any) -> None:
    if not args.quiet:
        print(f"\n--- {label}: {row['user_prompt']}  (ground truth {row['ground_truth']})")
        for message in messages:
            print("   " + format_message(message))
    print(f"{label}: status={status} reward={reward}")


def format_message(message: dict[str, Any]) -> str:
    """One transcript line for a chat-completions message."""
    role = message.get("role", "?")
    if message.get("tool_calls"):
        calls = ", ".join(
            f"{c.get('function', {}).get('name')}({c.get('function', {}).get('arguments')})"
            for c in message["tool_calls"]
        )
        return f"{role:>9}: -> {calls}"
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(part.get("text", part)) if isinstance(part, dict) else str(part) for part in content)
    return f"{role:>9}: {content}"
