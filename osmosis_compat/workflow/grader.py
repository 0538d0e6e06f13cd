"""``Grader`` — sets a reward on each sample (upstream ``grader.py``, spec §2.3)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from osmosis_compat.workflow.context import GraderContext
from osmosis_compat.workflow.types.config import GraderConfig

__all__ = ["Grader"]


class Grader(ABC):
    """Subclass and implement ``async grade(ctx)``; set every sample's reward with
    ``ctx.set_sample_reward(sample_id, reward)`` (or ``ctx.set_reward(reward)`` for one sample).
    A new instance per rollout; the return value is ignored."""

    def __init__(self, config: GraderConfig | None = None) -> None:
        self.config = config

    @abstractmethod
    async def grade(self, ctx: GraderContext) -> Any:
        """Score ``ctx.samples``; a sample left without a reward fails the grading phase."""
        raise NotImplementedError
