"""``python -m codemods.verify.child --zygote``: import the runtime and the frameworks once, then fork one process
per side to run (each a fresh ``codemods.verify.child`` run, minus the seconds of imports).

Protocol (lines of JSON): stdin ``{"id", "spec", "out", "cwd", "limit"}`` → a fork runs ``main(spec, out)`` in
``cwd``; stdout ``{"id", "status"}`` when it exits (``status`` -9 when it overran ``limit`` seconds and was killed).
End of stdin: the remaining forks are killed and the zygote exits. It imports before any thread exists (forking a
threaded process is unsafe) and never starts one.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time

from codemods.verify.child.redirect import STRANDS_MODELS

#: What every side may need; imported once here (strands, agents and litellm take seconds each).
PRELOAD = ("strands", "strands.models.litellm", *(f"strands.models.{m}" for m in STRANDS_MODELS), "agents",
           "agents.models.openai_chatcompletions", "litellm", "openai", "boto3", "botocore.client", "fastapi",
           "uvicorn", "osmosis_compat.workflow", "osmosis_compat.legacy", "osmosis_compat.server.workflow_app",
           "osmosis_compat.server.legacy_app", "osmosis_compat.testing.workflow_controller",
           "osmosis_compat.testing.traingate", "osmosis_compat.testing.serving")


def serve() -> None:
    import importlib
    import logging
    import warnings

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not installed: the side that needs it reports the import error itself
            pass
    zygote_path = sys.path[0]
    running: dict[int, tuple[str, float]] = {}  # pid -> (request id, deadline)
    stdin = sys.stdin.fileno()
    print(json.dumps({"ready": True}), flush=True)
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.05)
        if ready:
            line = sys.stdin.readline()
            if not line:
                break
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _side(request, zygote_path)
            running[pid] = (request["id"], time.monotonic() + float(request["limit"]))
        _reap(running)
    for pid in running:
        os.kill(pid, signal.SIGKILL)


def _side(request: dict, zygote_path: str) -> None:
    """In the fork: the side's own directory and ``sys.path``, stdout away from the protocol, then run it."""
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.chdir(request["cwd"])
    if sys.path and sys.path[0] == zygote_path:
        sys.path[0] = request["cwd"]
    try:
        from codemods.verify.child.side import main

        main(request["spec"], request["out"])
    finally:
        os._exit(1)


def _reap(running: dict[int, tuple[str, float]]) -> None:
    now = time.monotonic()
    for pid, (request_id, deadline) in list(running.items()):
        done, status = os.waitpid(pid, os.WNOHANG)
        if not done and now > deadline:
            os.kill(pid, signal.SIGKILL)
            done, status = os.waitpid(pid, 0)
            status = -9
        elif done:
            status = os.waitstatus_to_exitcode(status)
        if done:
            del running[pid]
            print(json.dumps({"id": request_id, "status": status}), flush=True)
