"""``ConcurrencyLimiter`` (upstream ``utils/concurrency.py``, spec workflow-api §2.14).

The runtime owns the one limiter implementation; this module is its upstream import path.
"""

from __future__ import annotations

from osmosis_compat.runtime.limiter import ConcurrencyLimiter

__all__ = ["ConcurrencyLimiter"]
