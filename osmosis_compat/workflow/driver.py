"""The abstract rollout-driver contract of 0.2.31 (upstream ``driver.py``; spec workflow-api §5.1).

0.2.31 shipped no concrete driver; the fake controller in ``osmosis_compat.testing`` drives servers in tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from osmosis_compat.workflow.types.sample import RolloutSample

__all__ = ["RolloutDriver", "RolloutOutcome"]


@dataclass
class RolloutOutcome:
    """What driving one rollout produced, as a controller sees it."""

    status: str
    samples: dict[str, RolloutSample] = field(default_factory=dict)
    error: str | None = None
    duration_ms: float = 0.0
    tokens: int = 0
    systemic_error: str | None = None
    rollout_id: str | None = None
    controller_created_sample_ids: list[str] = field(default_factory=list)
    completion_counts: dict[str, int] = field(default_factory=dict)
    full_callback_sample_ids: list[str] = field(default_factory=list)
    scored_sample_ids: list[str] = field(default_factory=list)
    skipped_sample_ids: list[str] = field(default_factory=list)
    callback_diagnostics: dict[str, Any] = field(default_factory=dict)
    skipped: bool = False


class RolloutDriver(ABC):
    """Runs one rollout for ``messages`` and reports its outcome."""

    @property
    def max_concurrency(self) -> int:
        """Concurrent rollouts the driver allows (``0`` = unlimited)."""
        return 0

    @abstractmethod
    async def run(self, messages: list[dict[str, Any]], label: str | None = None, rollout_id: str = "") -> RolloutOutcome:
        """Drive one rollout."""
        raise NotImplementedError
