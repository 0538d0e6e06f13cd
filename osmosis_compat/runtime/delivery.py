"""POST a JSON body with retries: the one retry loop behind model calls and callbacks.

Each protocol decides which statuses succeed, which are retried, and which exceptions a caller sees; the
loop itself (encode once, attempt, classify, back off, give up) is written once, here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from .http import ClientSettings, get_client
from .jsonwire import dumps
from .retry import Backoff

__all__ = ["DeliveryError", "DeliveryPolicy", "ErrorFactory", "post_json"]

logger = logging.getLogger("osmosis_compat.runtime.delivery")


class DeliveryError(Exception):
    """Default error raised when a delivery fails (protocols substitute their own via :class:`ErrorFactory`)."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def _status_error(status: int, text: str) -> Exception:
    return DeliveryError(text or f"HTTP {status}", status)


def _timeout_error(exc: Exception) -> Exception:
    return DeliveryError(f"timeout: {exc}")


def _transport_error(exc: Exception) -> Exception:
    message = str(exc)
    return DeliveryError(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)


def _exhausted_error() -> Exception:
    return DeliveryError("No attempts made")


@dataclass(frozen=True)
class ErrorFactory:
    """How failures surface, so each API raises the exception types its users catch."""

    status: Callable[[int, str], Exception] = _status_error
    """Error for a non-success HTTP status (given the status code and response text)."""
    unexpected_status: Callable[[int, str], Exception] = _status_error
    """Error for a status that is neither success, retryable nor a client error (e.g. 204 for a chat call)."""
    timeout: Callable[[Exception], Exception] = _timeout_error
    transport: Callable[[Exception], Exception] = _transport_error
    exhausted: Callable[[], Exception] = _exhausted_error
    """Error when every attempt ended in a silently retried status (nothing better to report)."""


def _is_2xx(status: int) -> bool:
    return 200 <= status < 300


def _is_5xx(status: int) -> bool:
    return status >= 500


def _is_4xx(status: int) -> bool:
    return 400 <= status < 500


def _never(status: int) -> bool:
    return False


@dataclass(frozen=True)
class DeliveryPolicy:
    """Which outcomes of one POST succeed, are retried, or fail at once."""

    attempts: int = 5
    backoff: Backoff = field(default_factory=lambda: Backoff(0.5, 8.0))
    client: ClientSettings = field(default_factory=lambda: ClientSettings(timeout_seconds=10.0))
    is_success: Callable[[int], bool] = _is_2xx
    is_retryable: Callable[[int], bool] = _is_5xx
    is_client_error: Callable[[int], bool] = _is_4xx
    """Statuses that fail at once with ``errors.status`` (checked after success and retryable)."""
    is_silently_retried: Callable[[int], bool] = _never
    """Statuses retried without recording an error (legacy completion callback: 204, 3xx …)."""
    errors: ErrorFactory = field(default_factory=ErrorFactory)

    def with_attempts(self, attempts: int) -> "DeliveryPolicy":
        from dataclasses import replace

        return replace(self, attempts=attempts)


async def post_json(
    url: str,
    payload: Any,
    *,
    policy: DeliveryPolicy,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    callback: str | None = None,
) -> httpx.Response:
    """POST ``payload`` as JSON to ``url`` following ``policy``; return the successful response.

    The payload is encoded once (:func:`jsonwire.dumps`), so a non-JSON payload raises
    :class:`~osmosis_compat.runtime.jsonwire.NotJSONError` before any request. Raises the policy's errors:
    at once for client errors and unexpected statuses, after the last attempt for retryable ones.
    ``callback`` names the callback kind this delivers (``completed``, ``completion``, ``grader``): each attempt
    then counts in ``osmosis_callback_attempts_total`` and the delivery is a ``callback <kind>`` span.
    """
    if callback is None:
        return await _post_json(url, payload, policy, headers, body, None)
    from osmosis_compat.observability import metrics, tracing

    with tracing.span(f"callback {callback}", {"osmosis.callback": callback}, kind="client"):
        return await _post_json(url, payload, policy, headers, body, (metrics.peek(), callback))


async def _post_json(
    url: str,
    payload: Any,
    policy: DeliveryPolicy,
    headers: Mapping[str, str] | None,
    body: bytes | None,
    counted: tuple[Any, str] | None,
) -> httpx.Response:
    def attempt_was(outcome: str) -> None:
        if counted is not None and counted[0] is not None:
            counted[0].child(counted[0].callbacks, counted[1], outcome).inc()

    content = body if body is not None else dumps(payload)
    request_headers = {"Content-Type": "application/json"}
    if headers:
        request_headers.update(headers)
    attempts = max(1, policy.attempts)
    last_error: Exception | None = None
    for attempt in range(attempts):
        if attempt:
            await asyncio.sleep(policy.backoff.delay(attempt - 1))
        client = get_client(policy.client)
        try:
            response = await client.post(url, content=content, headers=request_headers)
        except httpx.TimeoutException as exc:
            last_error = policy.errors.timeout(exc)
            attempt_was("timeout")
            logger.debug("POST %s timed out (attempt %d/%d)", url, attempt + 1, attempts)
            continue
        except httpx.RequestError as exc:
            last_error = policy.errors.transport(exc)
            attempt_was("transport_error")
            logger.debug("POST %s failed: %r (attempt %d/%d)", url, exc, attempt + 1, attempts)
            continue
        status = response.status_code
        if policy.is_success(status):
            attempt_was("delivered")
            return response
        attempt_was("rejected")
        if policy.is_retryable(status):
            last_error = policy.errors.status(status, response.text)
            logger.debug("POST %s answered %d (attempt %d/%d)", url, status, attempt + 1, attempts)
            continue
        if policy.is_silently_retried(status):
            continue
        if policy.is_client_error(status):
            raise policy.errors.status(status, response.text)
        raise policy.errors.unexpected_status(status, response.text)
    raise last_error if last_error is not None else policy.errors.exhausted()
