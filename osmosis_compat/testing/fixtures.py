"""pytest fixtures for the fakes. Enable them in your top-level ``conftest.py``::

    pytest_plugins = ["osmosis_compat.testing.fixtures"]

``fake_traingate`` and ``fake_workflow_controller`` are served on 127.0.0.1 for one test and share that
test's ``scripted_policy`` (override the fixture to change the policy).

The plugin also keeps third-party warnings that are not yours out of your test report: LiteLLM's use of APIs
pydantic deprecated, and pydantic's notes on the ``ReadOnly`` items of OpenAI's typed dicts (both raised inside
the frameworks a Strands or OpenAI Agents agent drives through the fakes; nothing your code can act on). Your own
warnings, and every other library's, are reported as usual.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from osmosis_compat.testing.policy import ScriptedPolicy
from osmosis_compat.testing.traingate import FakeTrainGate
from osmosis_compat.testing.workflow_controller import FakeWorkflowController

__all__ = ["THIRD_PARTY_WARNINGS", "scripted_policy", "fake_traingate", "fake_workflow_controller"]

#: ``filterwarnings`` lines this plugin adds (see the module docstring).
THIRD_PARTY_WARNINGS = (
    "ignore::DeprecationWarning:litellm",
    "ignore:Item '.*' on TypedDict class '.*' is using the `ReadOnly` qualifier:UserWarning",
)


def pytest_configure(config: pytest.Config) -> None:
    """Add :data:`THIRD_PARTY_WARNINGS` to the run's ``filterwarnings`` (after pytest's own defaults, which
    would otherwise show every DeprecationWarning)."""
    for line in THIRD_PARTY_WARNINGS:
        config.addinivalue_line("filterwarnings", line)


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
