"""Integration-test fixtures: one fake workflow controller per test module (the tests tell rollouts apart by id)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from osmosis_compat.testing import FakeWorkflowController


@pytest.fixture(scope="module")
def controller() -> Iterator[FakeWorkflowController]:
    with FakeWorkflowController().serve() as served:
        yield served
