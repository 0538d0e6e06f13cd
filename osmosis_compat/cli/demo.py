"""``osmosis-compat demo`` — serve the example agents and drive a few rollouts against the fake controllers.

Everything runs on 127.0.0.1 with the built-in deterministic policy: no API key, no network. Each rollout's
transcript and reward are printed, so a new user sees the whole loop — controller → server → agent → model
calls → callback (or, for today's 0.3.8 controller, the long-polled result) — work end to end.
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
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
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
    for filename, title in (
        ("strands_calculator.py", "Strands workflow + grader (examples/modern/strands_calculator.py) over /rollout"),
        ("openai_agents_calculator.py",
         "OpenAI Agents workflow + grader (examples/modern/openai_agents_calculator.py) over /rollout"),
    ):
        results += await _workflow_demo(args, filename, title)
    for relative, title in (
        ("legacy/calculator_agent.py", "The same legacy loop, unchanged, for today's controller (0.3.8 polling)"),
        ("modern/v03/strands_calculator.py", "A Strands workflow written for 0.3 (examples/modern/v03/) for today's controller"),
        ("modern/v03/openai_agents_calculator.py",
         "An OpenAI Agents workflow written for 0.3 (examples/modern/v03/) for today's controller"),
    ):
        results += await _polling_demo(args, relative, title)
    return results


async def _polling_demo(args: argparse.Namespace, relative: str, title: str) -> list[dict[str, Any]]:
    """Drive ``examples/<relative>`` the way Osmosis's 0.3.8 controller does: ``POST /rollout`` → 202 + lease, then
    long-polls of ``GET /rollout/{id}/result``; every agent kind answers it natively."""
    from osmosis_compat.cli.targets import load_target
    from osmosis_compat.server.agents import AgentSpec, url_safe_name
    from osmosis_compat.testing import FakePollingController, ScriptedPolicy, serve_app_async

    _section(title)
    target = load_target(str(args.examples / relative))
    agent = AgentSpec.from_target(target, name=url_safe_name(target.name))
    data = args.examples / relative.split("/")[0] / "data" / "calculator.jsonl"
    rows = read_rows(data, args.rows)
    results = []
    controller = FakePollingController(ScriptedPolicy())
    async with controller.serve_async():
        server = await serve_app_async(agent.build_app(agent.kind))
        try:
            for index, row in enumerate(rows):
                record = await controller.run_rollout(
                    server.url,
                    rollout_id=f"demo-polling-{agent.name}-{index}",
                    initial_messages=_prompt(row),
                    label=row["ground_truth"],
                    timeout=60,
                )
                messages = (record.sample or {}).get("messages") or []
                _report(args, f"{agent.name} (polling) #{index}", row, messages, record.reward,
                        f"{record.status} [{' → '.join(record.statuses)}]")
                results.append({"ok": record.status == "success" and record.reward == 1.0})
        finally:
            await server.close()
            await controller.aclose()
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


async def _workflow_demo(args: argparse.Namespace, filename: str, title: str) -> list[dict[str, Any]]:
    from osmosis_compat.cli.targets import load_target
    from osmosis_compat.server.workflow_app import create_rollout_server
    from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy, serve_app

    _section(title)
    target = load_target(str(args.examples / "modern" / filename))
    rows = read_rows(args.examples / "modern" / "data" / "calculator.jsonl", args.rows)
    results = []
    app = create_rollout_server(backend=target.backend(), configure_logging=False)
    with FakeWorkflowController(ScriptedPolicy()).serve() as controller, serve_app(app) as server:
        for index, row in enumerate(rows):
            record = await controller.run_rollout(
                server.url,
                rollout_id=f"demo-{target.name}-{index}",
                initial_messages=_prompt(row),
                label=row["ground_truth"],
                timeout=60,
            )
            samples = (record.grader or {}).get("samples") or {}
            messages = next(iter(samples.values()), {}).get("messages", []) if samples else []
            rewards = record.rewards
            reward = next(iter(rewards.values()), None) if rewards else None
            status = (record.grader or {}).get("status")
            _report(args, f"{target.name} #{index}", row, messages, reward, status)
            results.append({"ok": status == "success" and reward == 1.0})
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
    """One transcript line for a message in chat-completions, Strands or OpenAI Agents (Responses item) shape."""
    kind = message.get("type")
    if kind == "function_call":
        return f"{'assistant':>9}: -> {message.get('name')}({message.get('arguments')})"
    if kind == "function_call_output":
        return f"{'tool':>9}: {message.get('output')}"
    role = message.get("role", "?")
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and ("toolUse" in b or "toolResult" in b) for b in content):
        parts = []
        for block in content:
            if "toolUse" in block:
                use = block["toolUse"]
                parts.append(f"-> {use.get('name')}({json.dumps(use.get('input'))})")
            elif "toolResult" in block:
                texts = [c.get("text", c.get("json")) for c in block["toolResult"].get("content", [])]
                parts.append(" ".join(str(t) for t in texts))
            elif "text" in block:
                parts.append(block["text"])
        return f"{('tool' if role == 'user' else role):>9}: {' '.join(parts)}"
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
