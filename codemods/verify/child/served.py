"""Serve a program as a rollout server and drive one rollout per case: the migrated workflow (``LocalBackend``
through osmosis-compat, which runs migrated code: the ``osmosis_ai`` shim) driven over the workflow protocol by
``FakeWorkflowController``, and an original legacy loop driven over the legacy protocol by ``FakeTrainGate``.

The module is imported once and serves every case, as a rollout server does: state it shares between rollouts
shows up as a difference in the second case.
"""

from __future__ import annotations

import asyncio
import os
import random
import types
from pathlib import Path
from itertools import count
from typing import Any, Optional

from codemods.verify.child.program import case_timer, load_module
from codemods.verify.child.record import outcome, side_of
from codemods.verify.child.sandbox import Walls

_ids = count()


def defined_here(module: types.ModuleType, base: type) -> list[type]:
    return [v for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, base) and v is not base and v.__module__ == module.__name__]


def workflow_app(module: types.ModuleType, workflow_name: Optional[str], artifacts: str) -> tuple[Any, bool]:
    """The migrated module's rollout server, and whether it grades: its own ``app`` when no workflow is named and
    it has one, else ``LocalBackend(workflow=<named or only workflow>, grader=<its only grader, if any>)``."""
    from osmosis_compat.server.workflow_app import create_rollout_server
    from osmosis_compat.workflow import AgentWorkflow, Grader, LocalBackend

    graders = defined_here(module, Grader)
    grader = graders[0] if len(graders) == 1 else None
    if workflow_name is None and getattr(module, "app", None) is not None:
        backend = getattr(module, "backend", None)
        if isinstance(backend, LocalBackend):
            backend.artifact_root = Path(artifacts)
        return module.app, getattr(backend, "grader_cls", None) is not None
    if workflow_name is not None:
        workflow = getattr(module, workflow_name, None)
    else:
        workflows = defined_here(module, AgentWorkflow)
        workflow = workflows[0] if len(workflows) == 1 else None
    if not (isinstance(workflow, type) and issubclass(workflow, AgentWorkflow)):
        raise LookupError(f"the migrated module has no workflow class {workflow_name or '(exactly one)'}")
    backend = LocalBackend(workflow=workflow, grader=grader)
    backend.artifact_root = Path(artifacts)
    return create_rollout_server(backend=backend, configure_logging=False), grader is not None


def run_workflow(text: str, path: str, workflow_name: Optional[str], cases: list[dict], timeout: float,
                 walls: Walls, scratch: str, target: str) -> list[dict]:
    """One rollout per case against the migrated module's workflow, driven over the protocol of the osmosis-ai it
    targets (``0.3``: today's polling controller; ``0.2``: the callback controller); a record per case (artifacts in
    ``scratch``). Agents the migration left plain on purpose (0.3: one sample per rollout) call their own model:
    redirected, as on the original side, to a second endpoint whose calls count with the rollout's."""
    from codemods.verify.child import redirect
    from osmosis_compat.testing import FakePollingController, FakeWorkflowController, ScriptedPolicy, serve_app

    policy = ScriptedPolicy()  # answers structured-output requests too, the same way on both sides
    plain = FakeWorkflowController(policy)
    plain.url = serve_app(plain.app).url  # never closed: graceful shutdown would wait for keep-alive connections
    redirect.install(plain.chat_completions_url, plain.controller_api_key or "verify", walls.stubs, text)
    artifacts = os.path.join(scratch, "artifacts")
    try:
        with case_timer(timeout):
            module = load_module(text, path, path.rsplit("/", 1)[-1].removesuffix(".py").replace(".", "_"))
            app, grade = workflow_app(module, workflow_name, artifacts)
    except Exception as exc:  # noqa: BLE001 - the migrated program: reported as its outcome
        return [outcome(policy, [], side_of(walls, error=exc, path=path)) for _ in cases]
    controller = FakePollingController(policy) if target == "0.3" else FakeWorkflowController(policy)
    controller.url = serve_app(controller.app).url
    server = serve_app(app)
    return [_drive(controller, plain, policy, server.url, case, grade, timeout, walls, path) for case in cases]


def _drive(controller: Any, plain: Any, policy: Any, url: str, case: dict, grade: bool, timeout: float,
           walls: Walls, path: str) -> dict:
    from osmosis_compat.testing import PollingRolloutRecord

    rollout_id = f"verify-{next(_ids)}"
    random.seed(0)  # as the original's run (program.run_case)
    before = len(plain.chat_requests())

    def bodies() -> list[Any]:
        calls = [*controller.chat_requests(rollout_id), *plain.chat_requests()[before:]]
        return [r.body for r in sorted(calls, key=lambda r: r.received_at)]

    try:
        record = asyncio.run(controller.run_rollout(
            url, rollout_id=rollout_id, initial_messages=[{"role": "user", "content": case["prompt"]}],
            label=case["label"], grade=grade, timeout=timeout,
        ))
    except Exception as exc:  # noqa: BLE001 - a rollout that never completed
        return outcome(policy, bodies(), side_of(walls, error=exc, path=path))
    polling = isinstance(record, PollingRolloutRecord)
    result = (record.result if polling else record.completion) or {}  # 0.3: the polled result; 0.2: the callback
    if result.get("status") != "success":
        return outcome(policy, bodies(), side_of(walls, error_text=f"rollout failed: {result.get('err_message')}"))
    reward = None
    if grade:
        rewards = [record.reward] if polling else list(record.rewards.values())
        reward = rewards[0] if len(rewards) == 1 else None
    return outcome(policy, bodies(), side_of(walls), reward=reward)


def run_legacy(text: str, path: str, cases: list[dict], timeout: float, walls: Walls) -> list[dict]:
    """One rollout per case against the original legacy loop's server (its ``app``, or ``create_app`` of its loop),
    driven over the legacy protocol with the label as ``metadata["ground_truth"]``."""
    from osmosis_compat.legacy import RolloutAgentLoop
    from osmosis_compat.server.legacy_app import create_app
    from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app

    policy = ScriptedPolicy()  # answers structured-output requests too, the same way on both sides
    try:
        with case_timer(timeout):
            module = load_module(text, path, path.rsplit("/", 1)[-1].removesuffix(".py").replace(".", "_"))
            app = getattr(module, "app", None)
            if app is None:
                loops = [v for v in vars(module).values() if isinstance(v, RolloutAgentLoop)]
                classes = defined_here(module, RolloutAgentLoop)
                if not loops and len(classes) != 1:
                    raise LookupError("the original module has no `app` and not exactly one loop class")
                app = create_app(loops[0] if loops else classes[0]())
    except Exception as exc:  # noqa: BLE001 - the user's program
        return [outcome(policy, [], side_of(walls, error=exc, path=path)) for _ in cases]
    records = []
    gate = FakeTrainGate(policy)
    gate.url = serve_app(gate.app).url  # never closed (see run_workflow)
    server = serve_app(app)
    for case in cases:
        rollout_id = f"verify-{next(_ids)}"
        try:
            record = asyncio.run(gate.run_rollout(
                server.url, rollout_id=rollout_id, messages=[{"role": "user", "content": case["prompt"]}],
                metadata={"ground_truth": case["label"]}, timeout=timeout,
            ))
        except Exception as exc:  # noqa: BLE001
            records.append(outcome(policy, _legacy_bodies(gate, rollout_id), side_of(walls, error=exc, path=path)))
            continue
        bodies = _legacy_bodies(gate, rollout_id)
        if record.status != "COMPLETED":
            error = str((record.callback or {}).get("error_message"))
            records.append(outcome(policy, bodies, side_of(walls, error_text=f"rollout failed: {error}")))
        else:
            records.append(outcome(policy, bodies, side_of(walls), reward=record.reward))
    return records


def _legacy_bodies(gate: Any, rollout_id: str) -> list[Any]:
    """The legacy chat bodies carry no tools (declared once at init): the gate's record adds them back."""
    bodies = []
    tools = gate.tools_for(rollout_id)
    for request in gate.chat_requests(rollout_id):
        body = dict(request.body or {})
        if tools and not body.get("tools"):
            body["tools"] = tools
        bodies.append(body)
    return bodies
