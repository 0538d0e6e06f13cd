"""The rollout the running code works for: set once when a rollout's task starts, read by logs, metrics and spans.

A rollout's task (and every task it starts, and the in-process bridge calls it makes) inherits the context, so a
log line written deep inside an agent, or a model call made by a framework, is attributed to its rollout without
any parameter being passed down.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["RolloutScope", "current", "enter"]


@dataclass(frozen=True)
class RolloutScope:
    """Who the work is for: ``rollout_id``, ``protocol`` (``legacy`` / ``workflow`` / ``polling``), ``agent``."""

    rollout_id: str
    protocol: str
    agent: str


_SCOPE: ContextVar[RolloutScope | None] = ContextVar("osmosis_rollout_scope", default=None)


def current() -> RolloutScope | None:
    """The rollout of the running task, or ``None`` outside any rollout (e.g. a request handler)."""
    return _SCOPE.get()


def enter(scope: RolloutScope) -> None:
    """Make ``scope`` the current rollout for the rest of the running task (a task has its own context copy, so
    this never leaks into the task that started it)."""
    _SCOPE.set(scope)
