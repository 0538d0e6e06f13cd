"""Exponential backoff, the one schedule every retry loop in the project uses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delay before retry *n* (0-based) = ``min(base_delay * factor**n, max_delay)``.

    Legacy defaults (1 s, 30 s) give 1, 2, 4, 8, 16, 30, 30 …; the workflow callback schedule (0.5 s, 8 s)
    gives 0.5, 1, 2, 4.
    """

    base_delay: float = 1.0
    max_delay: float = 30.0
    factor: float = 2.0

    def delay(self, retry_index: int) -> float:
        """Seconds to sleep before retry number ``retry_index`` (0 = the first retry)."""
        if retry_index < 0:
            raise ValueError("retry_index must be >= 0")
        return min(self.base_delay * self.factor**retry_index, self.max_delay)
