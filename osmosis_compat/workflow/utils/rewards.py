"""Reward check after grading (upstream ``utils/rewards.py``, spec §2.10)."""

from __future__ import annotations

from collections.abc import Mapping

from osmosis_compat.workflow.types.sample import RolloutSample

__all__ = ["validate_samples_have_rewards"]


def validate_samples_have_rewards(samples: Mapping[str, RolloutSample]) -> None:
    """``ValueError("No samples after grading")`` for no samples; ``ValueError("Sample <id> has no reward after
    grading")`` for the first sample whose reward is ``None`` (``remove_sample`` does not exempt it in 0.2.x)."""
    if not samples:
        raise ValueError("No samples after grading")
    for sample_id, sample in samples.items():
        if sample.reward is None:
            raise ValueError(f"Sample {sample_id} has no reward after grading")
