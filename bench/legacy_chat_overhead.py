"""Per-model-call overhead of the legacy client stack, against a bare httpx POST baseline in the same process.

Both send the same chat body to the same minimal endpoint (a raw ASGI app answering a fixed chat completion) over
a kept-alive connection; the difference is what osmosis-compat adds per call: building and validating the
legacy body, the retry loop, reply parsing and metrics. Target (issue 2): server overhead between model calls
p50 ≤ 1 ms at concurrency 1. Run: ``python bench/legacy_chat_overhead.py [--calls N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import httpx

from _common import median, percentile

REPLY = json.dumps({
    "id": "c1", "object": "chat.completion", "created": 0, "model": "default",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "The answer is 5."}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}).encode()


async def endpoint(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": REPLY})


MESSAGES = [
    {"role": "system", "content": "You are a calculator."},
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "5"},
]


async def main_async(calls: int) -> None:
    from osmosis_compat.legacy.client import OsmosisLLMClient
    from osmosis_compat.testing import serve_app_async

    handle = await serve_app_async(endpoint)
    try:
        client = OsmosisLLMClient(handle.url, "bench", api_key="k")
        body = {"model": "default", "messages": MESSAGES, "rollout_id": "bench", "temperature": 1.0, "top_p": 1.0,
                "max_tokens": 512, "logprobs": True}
        async with httpx.AsyncClient() as raw:
            async def baseline() -> None:
                response = await raw.post(handle.url + "/v1/chat/completions", content=json.dumps(body),
                                          headers={"Content-Type": "application/json", "Authorization": "Bearer k"})
                response.json()["choices"][0]["message"]

            async def ours() -> None:
                await client.chat_completions(MESSAGES)

            for fn in (baseline, ours):  # warm-up
                for _ in range(50):
                    await fn()
            samples: dict[str, list[float]] = {"baseline": [], "ours": []}
            for _ in range(calls):  # interleaved, so load changes hit both alike
                for name, fn in (("baseline", baseline), ("ours", ours)):
                    started = time.perf_counter()
                    await fn()
                    samples[name].append((time.perf_counter() - started) * 1000)
    finally:
        await handle.close()
    b50, o50 = median(samples["baseline"]), median(samples["ours"])
    print(f"{'':10} {'p50 ms':>8} {'p99 ms':>8}")
    for name in ("baseline", "ours"):
        print(f"{name:10} {median(samples[name]):8.3f} {percentile(samples[name], 99):8.3f}")
    print(f"overhead per model call (p50 ours - baseline): {o50 - b50:.3f} ms; ratio {o50 / b50:.2f}x")
    print("target: <= 1 ms between model calls at concurrency 1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1000)
    asyncio.run(main_async(parser.parse_args().calls))


if __name__ == "__main__":
    main()
