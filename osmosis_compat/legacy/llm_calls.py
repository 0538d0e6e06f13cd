"""One legacy model turn: send a chat body through the runtime policy client, count it, return a
``CompletionsResult``. Shared by ``OsmosisLLMClient`` (legacy controller) and the adapters' workflow-controller
client, so both count metrics and surface malformed replies the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pydantic

from osmosis_compat.runtime.messages import MalformedReplyError
from osmosis_compat.runtime.policy import ChatDialect, PolicyClient

from .completions import CompletionsResult
from .exceptions import OsmosisValidationError
from .schemas import RolloutMetrics

__all__ = ["LLMCallStats", "chat_turn"]


@dataclass
class LLMCallStats:
    """The four LLM counters a rollout reports in its metrics."""

    llm_latency_ms: float = 0.0
    num_llm_calls: int = 0
    prompt_tokens: int = 0
    response_tokens: int = 0

    def metrics(self) -> RolloutMetrics:
        return RolloutMetrics(
            llm_latency_ms=self.llm_latency_ms,
            num_llm_calls=self.num_llm_calls,
            prompt_tokens=self.prompt_tokens,
            response_tokens=self.response_tokens,
        )


async def chat_turn(
    policy: PolicyClient, dialect: ChatDialect, body: dict[str, Any], stats: LLMCallStats, *, peer: str
) -> CompletionsResult:
    """Send ``body``, add the call to ``stats`` and return the turn.

    Raises the policy's (legacy) errors for HTTP failures and :class:`OsmosisValidationError` when ``peer``
    answers 200 with something that is not a chat completion (upstream raised a bare ``KeyError``).
    """
    try:
        call = await policy.chat(dialect, body)
    except (MalformedReplyError, ValueError) as exc:
        if isinstance(exc, (OsmosisValidationError, pydantic.ValidationError)):
            raise
        raise OsmosisValidationError(f"Invalid chat completion from {peer}: {exc}", 200) from exc
    reply = call.reply
    usage = reply.usage
    stats.llm_latency_ms += call.latency_ms
    stats.num_llm_calls += 1
    stats.prompt_tokens += int(usage.get("prompt_tokens", 0) or 0)
    stats.response_tokens += int(usage.get("completion_tokens", 0) or 0)
    token_ids, logprobs = reply.raw.get("token_ids"), reply.raw.get("logprobs")
    return CompletionsResult(
        message=reply.message,
        token_ids=token_ids if isinstance(token_ids, list) else [],
        logprobs=logprobs if isinstance(logprobs, list) else [],
        usage=usage,
        finish_reason=reply.finish_reason,
    )
