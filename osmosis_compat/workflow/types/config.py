"""Workflow and grader configs (upstream ``types/config.py``, spec workflow-api §2.1; unchanged 0.2.18 → 0.3.8)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentWorkflowConfig", "BaseConfig", "ConcurrencyConfig", "GraderConfig"]


class ConcurrencyConfig(BaseModel):
    """How many workflow executions may run at once: ``max_concurrent`` ≥ 1, or ``None`` for unlimited."""

    max_concurrent: int | None = Field(default=None, ge=1)


class BaseConfig(BaseModel):
    """Base of every workflow/grader config.

    ``name`` is required; extra keyword arguments become attributes (and appear in ``model_dump()``);
    assignments are re-validated; arbitrary objects (a model placeholder, a tool list) are valid field values.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(
        extra="allow", validate_assignment=True, arbitrary_types_allowed=True
    )

    name: str
    description: str | None = None


class AgentWorkflowConfig(BaseConfig):
    """Config of an ``AgentWorkflow``; ``concurrency`` limits ``LocalBackend`` (default: unlimited)."""

    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)


class GraderConfig(BaseConfig):
    """Config of a ``Grader``. ``concurrency`` exists for symmetry; ``LocalBackend`` does not consult it."""

    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
