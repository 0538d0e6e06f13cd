"""Shared helpers for the benchmarks: child processes, /proc readings, percentiles, printing."""

from __future__ import annotations

import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_AGENTS_DISABLE_TRACING": "1"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(code: str, port: int, *, python: str | None = None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Run ``code`` (which must serve on 127.0.0.1:port) in a child and wait for GET /health.

    ``python``/``env``: another interpreter and its environment (e.g. a side venv with the real osmosis-ai)."""
    proc = subprocess.Popen([python or sys.executable, "-c", code], cwd=ROOT, env=env or ENV)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("benchmark server exited")
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("benchmark server did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def child_import_cost(statement: str, runs: int = 5) -> tuple[float, float]:
    """Median wall seconds and max RSS (MB) of a fresh interpreter running ``statement``."""
    code = (
        "import time, resource; t = time.perf_counter(); "
        f"{statement}; "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    walls, rss = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True)
        wall, mb = out.stdout.split()
        walls.append(float(wall))
        rss.append(float(mb))
    return median(walls), max(rss)


def self_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def drive_polling(
    controller, url: str, n: int, concurrency: int, tag: str, prompt: list, label: str, polls: list | None = None
) -> float:
    """Run ``n`` rollouts through a fake 0.3.8 controller, ``concurrency`` at a time; each must succeed with reward
    1.0. Returns the wall seconds; ``polls``, if given, receives each rollout's number of result GETs."""
    import asyncio

    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with semaphore:
            record = await controller.run_rollout(url, rollout_id=f"{tag}-{i}", initial_messages=prompt, label=label, timeout=120)
        assert record.status == "success" and record.reward == 1.0, record.result
        if polls is not None:
            polls.append(record.polls)

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started
