"""Fixtures for the legacy wire tests: a real RolloutServer and a real fake TrainGate on 127.0.0.1."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from osmosis_compat.legacy.config import RolloutClientSettings, RolloutSettings
from osmosis_compat.server.legacy_app import create_app
from osmosis_compat.testing import FakeTrainGate, ScriptedPolicy, serve_app

FAST_CLIENT = RolloutClientSettings(retry_base_delay=0.1, retry_max_delay=1.0, timeout_seconds=5.0)


def fast_settings(**client: Any) -> RolloutSettings:
    values = FAST_CLIENT.model_dump()
    values.update(client)
    return RolloutSettings(client=RolloutClientSettings(**values))


@contextlib.contextmanager
def serving(agent_loop: Any, **create_app_kwargs: Any) -> Iterator[Any]:
    create_app_kwargs.setdefault("settings", fast_settings())
    create_app_kwargs.setdefault("drain_timeout_seconds", 0.2)
    with serve_app(create_app(agent_loop, **create_app_kwargs)) as server:
        yield server


@pytest.fixture
def gate() -> Iterator[FakeTrainGate]:
    with FakeTrainGate(ScriptedPolicy()).serve() as served:
        yield served


def prompt(text: str = "What is 2 + 3?") -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": text}]
