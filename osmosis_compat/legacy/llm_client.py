"""``LLMClientProtocol``: what ``RolloutContext.llm`` must provide (spec/legacy-protocol.md §2.6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .completions import CompletionsResult
    from .schemas import RolloutMetrics

__all__ = ["LLMClientProtocol"]


@runtime_checkable
class LLMClientProtocol(Protocol):
    """An LLM client a rollout talks through: ``OsmosisLLMClient`` in production, anything else in tests.

    ``chat_completions(messages, **kwargs)`` returns a ``CompletionsResult``; ``get_metrics()`` the LLM counters.
    """

    async def chat_completions(self, messages: list[dict[str, Any]], **kwargs: Any) -> CompletionsResult:
        """Run one chat turn over the full, append-only ``messages`` list."""
        ...

    def get_metrics(self) -> RolloutMetrics:
        """LLM latency, call count and token counters so far."""
        ...
