"""Recording the transcripts of a workflow that has no grader.

A workflow's samples (its transcripts) reach the controller only in the grader callback, and a backend without a
grader reports that callback as failed with no samples. So ``osmosis-compat eval`` runs such a workflow with
:class:`TranscriptRecorder` as its grader: the samples travel as in training, and the rows are reported as run
but not scored (``RequestOptions(graded=False)``), never with the recorder's placeholder reward.
"""

from __future__ import annotations

from osmosis_compat.workflow.context import GraderContext
from osmosis_compat.workflow.grader import Grader

__all__ = ["PLACEHOLDER_REWARD", "TranscriptRecorder"]

PLACEHOLDER_REWARD = 0.0
"""What the recorder sets (the protocol requires a reward on every sample); the eval never reports it."""


class TranscriptRecorder(Grader):
    """A grader that scores nothing: it sets :data:`PLACEHOLDER_REWARD` on every sample so they are delivered."""

    async def grade(self, ctx: GraderContext) -> None:
        """Mark every sample with the placeholder reward."""
        for sample_id in ctx.samples:
            ctx.set_sample_reward(sample_id, PLACEHOLDER_REWARD)
