"""pytest fixtures for the fakes. Enable them in your top-level ``conftest.py``::

    pytest_plugins = ["osmosis_compat.testing.fixtures"]

``fake_traingate`` and ``fake_workflow_controller`` are served on 127.0.0.1 for one test and share that
test's ``scripted_policy`` (override the fixture to change the policy).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from osmosis_compat.testing.policy import ScriptedPolicy
from osmosis_compat.testing.traingate import FakeTrainGate
from osmosis_compat.testing.workflow_controller import FakeWorkflowController

__all__ = ["scripted_policy", "fake_traingate", "fake_workflow_controller"]


@pytest.fixture
def scripted_policy() -> ScriptedPolicy:
    """The policy both fakes answer with (instant, no override)."""
    return ScriptedPolicy()


@pytest.fixture
def fake_traingate(scripted_policy: ScriptedPolicy) -> Iterator[FakeTrainGate]:
    """A served :class:`FakeTrainGate` (``.url`` set)."""
    with FakeTrainGate(scripted_policy).serve() as gate:
        yield gate


@pytest.fixture
def fake_workflow_controller(scripted_policy: ScriptedPolicy) -> Iterator[FakeWorkflowController]:
    """A served :class:`FakeWorkflowController` (``.url`` set, key ``"ctrl-key"``)."""
    with FakeWorkflowController(scripted_policy).serve() as controller:
        yield controller
