"""``AgentWorkflowOutput`` — what a 0.3 ``AgentWorkflow.run()`` may return (upstream ``types/output.py``, 0.3+).

How a return value becomes the rollout's sample (``LocalBackend``):

- an :class:`AgentWorkflowOutput` whose ``messages`` is not ``None`` is the sample (label = the request label,
  ``metrics`` copied) and overrides any registered source; one with ``messages=None`` yields no sample — both as
  0.3;
- a list of message dicts is the sample when no sample source was registered (0.3 also lets it override a
  source; here a 0.2.x workflow that returns a list while its sources hold the samples keeps working);
- ``None`` — and, unlike 0.3 (``TypeError``), any other value, which 0.2.x ignored — leaves the registered
  sources in charge.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentWorkflowOutput", "Messages"]

Messages = list[dict[str, Any]]


class AgentWorkflowOutput(BaseModel):
    """One message history plus optional measurements (0.3). ``info`` is reserved for workflow metadata; no
    backend passes it to graders."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", allow_inf_nan=False, revalidate_instances="always")

    messages: Messages | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)
