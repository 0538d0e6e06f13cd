"""Runs in the osmosis-ai 0.3.8 side venv: one rollout per served program, driven by the REAL ``RolloutClient``.

Input (JSON on stdin): ``{"chat": base url of the fake policy, "concurrency": n, "agent_timeout": s,
"runs": [{"name", "server", "rollout_id", "messages", "label", "grade"}]}``. The model calls of rollout ``id`` go to
``<chat>/v1/rollouts/<id>`` (the per-rollout URL 0.3.8 hands its workflows). Output: one line ``RESULT <json>``
mapping each run's name to ``status``, ``sample`` (messages count and reward, or null), ``err_message``,
``err_category`` — or ``error`` when the client itself failed (the client validates every answer with its own
types, so a server reply 0.3.8 would not accept lands here).
"""

import asyncio
import json
import sys

import httpx
from osmosis_ai.rollout.client import RolloutClient


async def one(http, spec, run, gate):
    rid = run["rollout_id"]
    timeout = float(spec.get("agent_timeout", 45))
    async with gate:
        client = RolloutClient(url=run["server"], http_client=http)
        try:
            result = await asyncio.wait_for(
                client.run_rollout(
                    initial_messages=run["messages"],
                    chat_completions_url=f"{spec['chat']}/v1/rollouts/{rid}",
                    rollout_id=rid,
                    llm_api_key=f"key-{rid}",
                    label=run.get("label"),
                    grade=run.get("grade", False),
                    agent_timeout_sec=timeout,
                    grader_timeout_sec=30,
                ),
                timeout + 60,
            )
        except Exception as exc:  # reported per run
            return {"error": f"{type(exc).__name__}: {exc}"[:500]}
    sample = result.sample
    return {
        "status": result.status.value,
        "sample": None if sample is None else {"messages": len(sample.messages or []), "reward": sample.reward},
        "err_message": (result.err_message or "")[:500] or None,
        "err_category": getattr(result.err_category, "value", result.err_category),
    }


async def main():
    spec = json.loads(sys.stdin.read())
    gate = asyncio.Semaphore(int(spec.get("concurrency", 8)))
    async with httpx.AsyncClient(timeout=120) as http:
        done = await asyncio.gather(*(one(http, spec, run, gate) for run in spec["runs"]))
    print("RESULT " + json.dumps({run["name"]: d for run, d in zip(spec["runs"], done)}), flush=True)


asyncio.run(main())
