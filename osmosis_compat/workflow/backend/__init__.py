"""Execution backends (upstream ``osmosis_ai.rollout.backend``)."""

from osmosis_compat.workflow.backend.base import ExecutionBackend, ResultCallback
from osmosis_compat.workflow.backend.local import LocalBackend

__all__ = ["ExecutionBackend", "LocalBackend", "ResultCallback"]
