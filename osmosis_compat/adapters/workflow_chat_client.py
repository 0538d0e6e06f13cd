"""``WorkflowChatClient``: a legacy loop's ``ctx.llm`` when the loop runs for a workflow controller.

It implements the legacy ``LLMClientProtocol`` (``chat_completions(messages, **kwargs) → CompletionsResult``,
``get_metrics()``) on top of the runtime's :class:`~osmosis_compat.runtime.policy.PolicyClient` with the
:class:`~osmosis_compat.runtime.policy.WorkflowDialect`: ``POST {chat_completions_url}/chat/completions``,
``Authorization: Bearer <controller key>``, ``x-rollout-id`` / ``x-sample-id`` headers, non-streaming.

Body: the legacy defaults and validation (``model``, ``messages``, ``temperature`` 1.0, ``top_p`` 1.0,
``max_tokens`` 512, ``stop`` normalised, ``logprobs`` true — built by the legacy ``CompletionsRequest``), **the
loop's tools in every request** (the workflow protocol has no init handshake; a ``tools=`` keyword of the loop
wins), and every other keyword argument forwarded as is (the endpoint is OpenAI-compatible, so ``seed``,
``tool_choice``, ``response_format`` … can travel, unlike on the legacy wire). ``rollout_id`` is not in the body:
the headers carry the identity.

Errors are the legacy exception types loops already catch: 5xx and 429 are retried (legacy client settings:
``max_retries``, backoff, timeout) then raise ``OsmosisServerError``; other 4xx raise ``OsmosisValidationError``;
timeouts ``OsmosisTimeoutError``; connection failures ``OsmosisTransportError``.
"""

from __future__ import annotations

from typing import Any

from osmosis_compat.legacy.completions import CompletionsResult
from osmosis_compat.legacy.config import RolloutClientSettings, get_settings
from osmosis_compat.legacy.llm_calls import LLMCallStats, chat_turn
from osmosis_compat.legacy.exceptions import (
    OsmosisServerError,
    OsmosisTimeoutError,
    OsmosisTransportError,
    OsmosisValidationError,
)
from osmosis_compat.legacy.schemas import CompletionsRequest, RolloutMetrics
from osmosis_compat.legacy.utils import normalize_stop
from osmosis_compat.runtime.delivery import DeliveryPolicy, ErrorFactory
from osmosis_compat.runtime.http import ClientSettings
from osmosis_compat.runtime.policy import PolicyClient, WorkflowDialect
from osmosis_compat.runtime.retry import Backoff

__all__ = ["WorkflowChatClient"]

#: Keywords the legacy ``CompletionsRequest`` owns (validated and defaulted there).
_LEGACY_KEYS = ("model", "temperature", "top_p", "max_tokens", "stop", "logprobs")


def _retryable(status: int) -> bool:
    return status >= 500 or status == 429


def _transport_error(exc: Exception) -> Exception:
    message = str(exc)
    return OsmosisTransportError(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)


_ERRORS = ErrorFactory(
    status=lambda status, text: (OsmosisServerError if _retryable(status) else OsmosisValidationError)(text, status),
    unexpected_status=lambda status, text: OsmosisValidationError(f"Unexpected status code {status}", status),
    timeout=lambda exc: OsmosisTimeoutError(str(exc)),
    transport=_transport_error,
    exhausted=lambda: OsmosisTransportError("No attempts made"),
)


class WorkflowChatClient:
    """Legacy ``LLMClientProtocol`` speaking the workflow controller's dialect (see the module docstring).

    ``tools`` are OpenAI tool dicts sent in every request (omitted when empty); ``default_model`` is the
    ``model`` sent when the loop passes none (legacy default ``"default"``); ``settings`` defaults to the
    legacy global ``get_settings().client``; ``routing_headers=False`` (0.3.8) sends no ``x-*`` headers.
    """

    def __init__(
        self,
        *,
        chat_completions_url: str,
        api_key: str | None,
        rollout_id: str,
        sample_id: str,
        tools: list[dict[str, Any]] | None = None,
        default_model: str = "default",
        settings: RolloutClientSettings | None = None,
        routing_headers: bool = True,
    ) -> None:
        settings = settings or get_settings().client
        self.tools = list(tools or [])
        self.default_model = default_model
        self.rollout_id = rollout_id
        self.sample_id = sample_id
        # 0.3.8 rollouts carry their identity in the URL: no x-rollout-id / x-sample-id headers then.
        self._dialect = WorkflowDialect(
            chat_completions_url=chat_completions_url,
            api_key=api_key,
            rollout_id=rollout_id if routing_headers else "",
            sample_id=sample_id if routing_headers else "",
        )
        self._policy = PolicyClient(
            DeliveryPolicy(
                attempts=settings.max_retries + 1,
                backoff=Backoff(settings.retry_base_delay, settings.retry_max_delay),
                client=ClientSettings(
                    timeout_seconds=settings.timeout_seconds,
                    max_connections=settings.max_connections,
                    max_keepalive_connections=settings.max_keepalive_connections,
                ),
                is_success=lambda status: status == 200,
                is_retryable=_retryable,
                errors=_ERRORS,
            )
        )
        self._stats = LLMCallStats()

    def build_body(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        """The request body for ``chat_completions(messages, **kwargs)`` (raises like the legacy client on bad
        ``temperature``/``max_tokens`` … types: ``pydantic.ValidationError``)."""
        if "rollout_id" in kwargs:
            raise TypeError("chat_completions() got multiple values for keyword argument 'rollout_id'")
        legacy = {key: kwargs.pop(key) for key in _LEGACY_KEYS if key in kwargs}
        legacy.setdefault("model", self.default_model)
        if "stop" in legacy:
            legacy["stop"] = normalize_stop(legacy["stop"])
        body = CompletionsRequest(messages=messages, rollout_id=self.rollout_id, **legacy).model_dump(
            mode="json", exclude_none=True
        )
        del body["rollout_id"]
        tools = kwargs.pop("tools", None)
        if tools is None:
            tools = self.tools
        if tools:
            body["tools"] = tools
        body.update({key: value for key, value in kwargs.items() if value is not None})
        return body

    async def chat_completions(self, messages: list[dict[str, Any]], **kwargs: Any) -> CompletionsResult:
        """One model turn through the workflow controller (see the class docstring)."""
        body = self.build_body(messages, **kwargs)
        return await chat_turn(self._policy, self._dialect, body, self._stats, peer="the controller")

    def get_metrics(self) -> RolloutMetrics:
        """The LLM counters of this rollout (latency, calls, prompt/response tokens)."""
        return self._stats.metrics()
