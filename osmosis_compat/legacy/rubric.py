"""``osmosis_ai.rubric_eval``: the rubric LLM evaluator is not part of osmosis-compat.

The exception classes stay importable (agents catch them); :func:`evaluate_rubric` raises
``NotImplementedError`` naming the reason, so nothing silently scores 0.
"""

from __future__ import annotations

from typing import Any

from .exceptions import MissingAPIKeyError, ModelNotFoundError, ProviderRequestError

__all__ = ["MissingAPIKeyError", "ModelNotFoundError", "ProviderRequestError", "evaluate_rubric"]

_REASON = (
    "evaluate_rubric: the rubric LLM evaluator (a hosted judge model called through LiteLLM) is not part of "
    "osmosis-compat, which never calls hosted models. Score with your own @osmosis_reward function, or call "
    "your judge model directly."
)


def evaluate_rubric(*args: Any, **kwargs: Any) -> Any:
    """Not supported: always raises ``NotImplementedError`` explaining why."""
    raise NotImplementedError(_REASON)
