"""One side of one file on every case, written as records: what ``python -m codemods.verify.child SPEC OUT`` and
each fork of the zygote run.

SPEC (JSON): ``mode`` (``script`` / ``call``: the original entry, its model calls redirected to a local endpoint;
``workflow``: a migrated workflow served by ``LocalBackend``; ``legacy``: an original legacy loop's server),
``path`` (the user's file: ``__file__``, its directory on ``sys.path``), ``text`` (the program), ``entry``
(``Entry.to_json()``), ``workflow`` (a class name or null), ``cases`` (``[{"prompt", "label"}]``), ``timeout``
(seconds per case). OUT: ``{"records": [...]}`` — one ``record.outcome`` per case — or ``{"fatal": "..."}``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from typing import Any


def main(spec_path: str, out_path: str) -> None:
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    logging.disable(logging.CRITICAL)  # the user's code and the servers log every call: the records are the report
    warnings.simplefilter("ignore")
    from codemods.verify.child import sandbox

    walls = sandbox.Walls()
    sandbox.install(walls)
    sys.path.insert(0, os.path.dirname(os.path.abspath(spec["path"])))
    try:
        records = _run(spec, walls, os.path.dirname(os.path.abspath(out_path)))
        result: dict[str, Any] = {"records": records}
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which names the file
        result = {"fatal": f"{type(exc).__name__}: {exc}"}
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, default=str)
    sys.stdout.flush()
    os._exit(0)  # threads the program left running (servers, pools) must not hold the verdict


def _run(spec: dict, walls: Any, scratch: str) -> list[dict]:
    from codemods.verify.child import sandbox
    from codemods.verify.child.served import run_legacy, run_workflow

    mode, path, text, timeout = spec["mode"], os.path.abspath(spec["path"]), spec["text"], float(spec["timeout"])
    cases = spec["cases"]
    sandbox.placeholder_environment(walls, spec.get("original") or text)
    if mode == "workflow":
        _preload_runtime()
        sandbox.stub_missing(walls, path)
        return run_workflow(text, path, spec.get("workflow"), cases, timeout, walls, scratch,
                            spec.get("target") or "0.3")
    if mode == "legacy":
        _preload_runtime()
        sandbox.stub_missing(walls, path)
        return run_legacy(text, path, cases, timeout, walls)
    return _run_original(spec, path, text, cases, timeout, walls)


def _preload_runtime() -> None:
    """Import what serving needs before the stub importer is in place (its optional imports fail as usual)."""
    import osmosis_compat.server.workflow_app  # noqa: F401
    import osmosis_compat.testing.serving  # noqa: F401
    import uvicorn  # noqa: F401


def _run_original(spec: dict, path: str, text: str, cases: list[dict], timeout: float, walls: Any) -> list[dict]:
    """Each case in a fork of this process (imports, redirection and endpoint inherited): a fresh process per run,
    as when the user runs the program once per prompt — no client, cache or module state carried between cases."""
    from codemods.verify.child import redirect, sandbox
    from codemods.verify.child.isolate import run_forked
    from codemods.verify.child.program import run_case
    from codemods.verify.child.record import outcome
    from codemods.verify.entries import Entry
    from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy, serve_app

    _preload_runtime()
    entry = Entry(**{**spec["entry"], "keys": tuple(spec["entry"]["keys"]), "argv": tuple(spec["entry"]["argv"]),
                     "json_keys": tuple(spec["entry"].get("json_keys") or ()),
                     "stdin_after": tuple(spec["entry"]["stdin_after"])})
    policy = ScriptedPolicy()  # answers structured-output requests too, the same way on both sides
    controller = FakeWorkflowController(policy)
    records = []
    controller.url = serve_app(controller.app).url  # never closed: the process exits once the records are written
    redirect.install(controller.chat_completions_url, controller.controller_api_key or "verify", walls.stubs, text)
    sandbox.stub_missing(walls, path)
    for case in cases:
        before = len(controller.chat_requests())
        side = run_forked(lambda: run_case(text, path, entry, case["prompt"], timeout), walls, path, timeout)
        bodies = [r.body for r in controller.chat_requests()[before:]]
        records.append(outcome(policy, bodies, side))
    return records
