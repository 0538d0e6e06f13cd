"""``OsmosisLLMClient``: a legacy rollout's connection to TrainGate (spec/legacy-protocol.md §1.3, §2.7).

It speaks the legacy dialect through the shared runtime — pooled HTTP client, the one retry loop, the one reply
parser — and raises the legacy exception types agents catch. Differences from upstream, all deliberate:

- the HTTP client is borrowed from the process-wide pool instead of built per rollout (upstream's main cost);
- ``settings=`` passed to ``create_app`` reaches this client (upstream only honoured global settings);
- ``ctx.chat`` keyword arguments the protocol cannot carry are logged once per name instead of silently lost;
- a ``"usage": null`` reply no longer crashes, and a reply without ``choices[0].message`` raises
  ``OsmosisValidationError`` instead of a bare ``KeyError``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from osmosis_compat.runtime.delivery import DeliveryPolicy, ErrorFactory, post_json
from osmosis_compat.runtime.http import ClientSettings, get_client
from osmosis_compat.runtime.policy import LegacyDialect, PolicyClient
from osmosis_compat.runtime.retry import Backoff

from .completions import CompletionsResult
from .llm_calls import LLMCallStats, chat_turn
from .config import RolloutClientSettings, get_settings
from .exceptions import OsmosisServerError, OsmosisTimeoutError, OsmosisTransportError, OsmosisValidationError
from .schemas import CompletionsRequest, RolloutMetrics, RolloutResponse, RolloutStatus
from .utils import normalize_stop

__all__ = ["CompletionsResult", "OsmosisLLMClient"]

logger = logging.getLogger("osmosis_ai.rollout.client")

# Body keys of the legacy chat request; anything else passed to ctx.chat cannot travel (spec §1.3.1).
_CHAT_BODY_KEYS = frozenset({"model", "messages", "temperature", "top_p", "max_tokens", "stop", "logprobs"})
_warned_dropped: set[str] = set()
_warned_lock = threading.Lock()


def _warn_dropped(names: list[str]) -> None:
    with _warned_lock:
        fresh = [n for n in names if n not in _warned_dropped]
        _warned_dropped.update(fresh)
    for name in fresh:
        logger.warning(
            "ctx.chat(%s=...) was not sent: the legacy chat protocol only carries model, messages, temperature, "
            "top_p, max_tokens, stop and logprobs (tools are declared once by get_tools). "
            "Logged once per argument name.",
            name,
        )


def _transport_error(exc: Exception) -> Exception:
    message = str(exc)
    return OsmosisTransportError(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)


def _only_200(status: int) -> bool:
    return status == 200


def _is_5xx(status: int) -> bool:
    return status >= 500


def _not_200(status: int) -> bool:
    return status != 200


_CHAT_ERRORS = ErrorFactory(
    status=lambda status, text: (OsmosisServerError if status >= 500 else OsmosisValidationError)(text, status),
    unexpected_status=lambda status, text: OsmosisValidationError(f"Unexpected status code {status}", status),
    timeout=lambda exc: OsmosisTimeoutError(str(exc)),
    transport=_transport_error,
    exhausted=lambda: OsmosisTransportError("No attempts made"),
)


class OsmosisLLMClient:
    """Calls ``{server_url}/v1/chat/completions`` and posts ``{server_url}/v1/rollout/completed``.

    Constructor arguments and public attributes are upstream's. ``timeout_seconds``/``max_retries``/
    ``complete_rollout_retries`` override ``settings`` (``timeout_seconds=0`` falls back, explicit retry counts of
    0 are honoured); ``settings`` defaults to ``get_settings().client``.
    """

    def __init__(
        self,
        server_url: str,
        rollout_id: str,
        api_key: str | None = None,
        timeout_seconds: float | None = None,
        max_retries: int | None = None,
        complete_rollout_retries: int | None = None,
        settings: RolloutClientSettings | None = None,
    ) -> None:
        settings = settings or get_settings().client
        self.server_url = server_url.rstrip("/")
        self.rollout_id = rollout_id
        self.api_key = api_key
        self.timeout_seconds = timeout_seconds or settings.timeout_seconds
        self.max_retries = settings.max_retries if max_retries is None else max_retries
        self.complete_rollout_retries = (
            settings.complete_rollout_retries if complete_rollout_retries is None else complete_rollout_retries
        )
        self._max_connections = settings.max_connections
        self._max_keepalive_connections = settings.max_keepalive_connections
        self._retry_base_delay = settings.retry_base_delay
        self._retry_max_delay = settings.retry_max_delay
        self._stats = LLMCallStats()
        self._closed = False

        self._client_settings = ClientSettings(
            timeout_seconds=self.timeout_seconds,
            max_connections=self._max_connections,
            max_keepalive_connections=self._max_keepalive_connections,
        )
        backoff = Backoff(self._retry_base_delay, self._retry_max_delay)
        self._dialect = LegacyDialect(server_url=self.server_url, api_key=api_key)
        self._chat = PolicyClient(
            DeliveryPolicy(
                attempts=self.max_retries + 1,
                backoff=backoff,
                client=self._client_settings,
                is_success=_only_200,
                is_retryable=_is_5xx,
                errors=_CHAT_ERRORS,
            )
        )
        # Completion callback: only 200 counts; 4xx fail at once; 5xx/timeouts/transport retried; any other
        # status (e.g. 204) is retried silently and ends in "No attempts made" (spec §1.3.2).
        self._complete_policy = DeliveryPolicy(
            attempts=self.complete_rollout_retries + 1,
            backoff=backoff,
            client=self._client_settings,
            is_success=_only_200,
            is_retryable=_is_5xx,
            is_silently_retried=lambda status: status < 400,
            errors=_CHAT_ERRORS,
        )

    # -- connection ------------------------------------------------------------------------------------------

    async def _get_client(self) -> Any:
        """The pooled ``httpx.AsyncClient`` this rollout uses (shared with other rollouts of the process)."""
        return get_client(self._client_settings)

    def _calculate_retry_delay(self, attempt: int) -> float:
        return Backoff(self._retry_base_delay, self._retry_max_delay).delay(attempt)

    async def close(self) -> None:
        """Release this client. The pooled connection stays open for other rollouts."""
        self._closed = True

    async def __aenter__(self) -> "OsmosisLLMClient":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    # -- model calls -----------------------------------------------------------------------------------------

    async def chat_completions(
        self,
        messages: list[dict[str, Any]],
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 512,
        stop: Any = None,
        logprobs: bool = True,
        **kwargs: Any,
    ) -> CompletionsResult:
        """One model turn (spec §1.3.1). Raises the legacy error types; kwargs the protocol drops are logged."""
        if "rollout_id" in kwargs:
            raise TypeError("chat_completions() got multiple values for keyword argument 'rollout_id'")
        model = kwargs.pop("model", "default")
        if kwargs:
            _warn_dropped(sorted(k for k in kwargs if k not in _CHAT_BODY_KEYS))
        body = CompletionsRequest(
            model=model,
            messages=messages,
            rollout_id=self.rollout_id,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            stop=normalize_stop(stop),
            logprobs=logprobs,
        ).model_dump(mode="json", exclude_none=True)
        return await chat_turn(self._chat, self._dialect, body, self._stats, peer="TrainGate")

    async def complete_rollout(
        self,
        status: str,
        final_messages: list[dict[str, Any]],
        finish_reason: str = "stop",
        error_message: str | None = None,
        metrics: RolloutMetrics | None = None,
        reward: float | None = None,
    ) -> None:
        """Post the rollout's result once (spec §1.3.2); raises the legacy error types when delivery fails.

        ``status`` must be exactly ``"COMPLETED"`` or ``"ERROR"`` (``ValueError`` otherwise); ``metrics=None``
        substitutes this client's counters.
        """
        payload = RolloutResponse(
            rollout_id=self.rollout_id,
            status=RolloutStatus(status),
            final_messages=final_messages,
            finish_reason=finish_reason,
            error_message=error_message,
            reward=reward,
            metrics=metrics if metrics is not None else self.get_metrics(),
            extra_fields={},
        ).model_dump(mode="json", exclude_none=True)
        await post_json(
            self.server_url + "/v1/rollout/completed",
            payload,
            policy=self._complete_policy,
            headers=self._dialect.headers(),
            callback="completed",
        )

    def get_metrics(self) -> RolloutMetrics:
        """The LLM counters of this rollout (latency, calls, prompt/response tokens)."""
        return self._stats.metrics()

    # upstream's private counters, kept readable for code that inspected them
    @property
    def _llm_latency_ms(self) -> float:
        return self._stats.llm_latency_ms

    @property
    def _num_llm_calls(self) -> int:
        return self._stats.num_llm_calls

    @property
    def _prompt_tokens(self) -> int:
        return self._stats.prompt_tokens

    @property
    def _response_tokens(self) -> int:
        return self._stats.response_tokens
