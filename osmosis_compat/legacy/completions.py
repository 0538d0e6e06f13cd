"""``CompletionsResult``: what ``ctx.chat`` returns (spec/legacy-protocol.md §2.5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CompletionsResult"]


@dataclass(frozen=True)
class CompletionsResult:
    """One LLM turn: the assistant ``message`` dict plus token ids, logprobs, usage and finish reason.

    Immutable. In production ``token_ids``/``logprobs`` are normally ``[]`` and ``usage`` is the controller's
    usage dict (it may lack ``total_tokens``).
    """

    message: dict[str, Any]
    token_ids: list[int]
    logprobs: list[float]
    usage: dict[str, int]
    finish_reason: str

    @property
    def has_tool_calls(self) -> bool:
        """Whether the message carries a non-empty ``tool_calls`` list."""
        return bool(self.message.get("tool_calls"))

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """``message["tool_calls"]`` or ``[]`` when absent — ``None`` when the key is present with ``null``."""
        return self.message.get("tool_calls", [])

    @property
    def content(self) -> str | None:
        """``message["content"]`` (``None`` when absent)."""
        return self.message.get("content")
