"""``AgentWorkflow`` — the rollout behaviour users write (upstream ``agent_workflow.py``, spec §2.2, §6)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from osmosis_compat.workflow.context import AgentWorkflowContext
from osmosis_compat.workflow.types.config import AgentWorkflowConfig

__all__ = ["AgentWorkflow", "TConfig"]

TConfig = TypeVar("TConfig", bound=AgentWorkflowConfig)


class AgentWorkflow(Generic[TConfig], ABC):
    """Subclass and implement ``async run(ctx)``; ``LocalBackend`` builds a new instance per rollout.

    Samples come from the sample sources registered on the ambient ``RolloutContext`` (the Strands agent,
    the OpenAI Agents session, or your own). 0.3 addition: if no source is registered and ``run()`` returns a
    list of message dicts, that list becomes the rollout's one sample. Any other return value is ignored, as in
    0.2.x.
    """

    def __init__(self, config: TConfig | None = None) -> None:
        self.config = config

    @abstractmethod
    async def run(self, ctx: AgentWorkflowContext[TConfig]) -> Any:
        """Run the agent for ``ctx.prompt``; model calls must go through an Osmosis integration."""
        raise NotImplementedError
