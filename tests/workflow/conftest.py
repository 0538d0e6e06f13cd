"""Fixtures for the workflow protocol tests: a real rollout server and a real fake controller on 127.0.0.1."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from osmosis_compat.runtime.callbacks import WORKFLOW_CALLBACK_POLICY, set_workflow_callback_policy
from osmosis_compat.runtime.retry import Backoff
from osmosis_compat.server.workflow_app import create_rollout_server
from osmosis_compat.testing import FakeWorkflowController, ScriptedPolicy, serve_app
from osmosis_compat.workflow import LocalBackend
from tests.workflow.workflows import GATE, EchoWorkflow, LabelGrader, echo_config, grader_config

FAST_POLICY = dataclasses.replace(WORKFLOW_CALLBACK_POLICY, backoff=Backoff(0.001, 0.004))


@pytest.fixture(autouse=True)
def fast_callbacks() -> Iterator[None]:
    """Callback retries with millisecond back-off (same attempts and retry rules as spec §3.8)."""
    set_workflow_callback_policy(FAST_POLICY)
    GATE.reset()
    try:
        yield
    finally:
        GATE.released.set()  # never leave a server thread waiting
        set_workflow_callback_policy(None)


@pytest.fixture
def artifact_root(tmp_path: Path) -> Path:
    return tmp_path / "osmosis"


def make_backend(artifact_root: Path, **kwargs: Any) -> LocalBackend:
    kwargs.setdefault("workflow", EchoWorkflow)
    kwargs.setdefault("workflow_config", echo_config)
    kwargs.setdefault("grader", LabelGrader)
    kwargs.setdefault("grader_config", grader_config)
    backend = LocalBackend(**kwargs)
    backend.artifact_root = artifact_root
    return backend


@contextlib.contextmanager
def rollout_server(backend: Any, **kwargs: Any) -> Iterator[Any]:
    kwargs.setdefault("configure_logging", False)
    kwargs.setdefault("drain_timeout_seconds", 0.1)
    with serve_app(create_rollout_server(backend=backend, **kwargs)) as server:
        yield server


@pytest.fixture(scope="module")
def module_controller() -> Iterator[FakeWorkflowController]:
    with FakeWorkflowController(ScriptedPolicy()).serve() as served:
        yield served


@pytest.fixture
def controller(module_controller: FakeWorkflowController) -> FakeWorkflowController:
    """One fake controller per test module (servers are slow to start); scripts reset for every test, so tests
    use distinct rollout ids."""
    module_controller.completion_script = None
    module_controller.grader_script = None
    return module_controller


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("osmosis")
    with rollout_server(make_backend(root)) as served:
        served.artifact_root = root
        yield served


@pytest.fixture
def server(module_server: Any) -> Any:
    """The default rollout server (EchoWorkflow + LabelGrader), shared by a test module."""
    return module_server


def prompt(text: str = "What is 2 + 3?") -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": text}]
