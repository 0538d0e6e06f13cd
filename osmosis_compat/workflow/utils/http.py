"""Upstream ``utils/http.py`` (0.2.x): the shared client and the callback POST with retry, as thin names over the
runtime's one HTTP pool and one retry loop (spec workflow-api §2.14, §3.8)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import httpx

from osmosis_compat.runtime.callbacks import WORKFLOW_CALLBACK_POLICY
from osmosis_compat.runtime.delivery import ErrorFactory, post_json
from osmosis_compat.runtime.http import ClientSettings, aclose_clients, get_client
from osmosis_compat.runtime.retry import Backoff

__all__ = ["close_shared_client", "get_shared_client", "post_json_with_retry"]


def get_shared_client(timeout_seconds: float = 10.0) -> httpx.AsyncClient:
    """The pooled ``httpx.AsyncClient`` of the running event loop for this timeout (re-created if closed)."""
    return get_client(ClientSettings(timeout_seconds=timeout_seconds))


async def close_shared_client() -> None:
    """Close the running loop's pooled clients."""
    await aclose_clients()


async def post_json_with_retry(
    *,
    url: str,
    payload: Any,
    headers: Mapping[str, str] | None = None,
    max_attempts: int = 5,
    base_delay_seconds: float = 0.5,
    max_delay_seconds: float = 8.0,
    timeout_seconds: float = 10.0,
) -> httpx.Response:
    """POST ``payload`` as JSON: 429/500/502/503/504 and transport errors retried with delays
    ``min(base·2^(n-1), max)``; any 2xx returned. As upstream: ``ValueError`` for ``max_attempts < 1``; another
    status raises ``httpx.HTTPStatusError`` at once (``raise_for_status``'s message); a retryable status on the
    last attempt raises ``httpx.HTTPStatusError("Retryable status code: <n>")``; the last transport error
    (``httpx.ConnectError``, ``httpx.ReadTimeout`` …) propagates as itself."""
    if max_attempts < 1:
        raise ValueError("max_attempts must be >= 1")
    policy = dataclasses.replace(
        WORKFLOW_CALLBACK_POLICY,
        attempts=max_attempts,
        backoff=Backoff(base_delay_seconds, max_delay_seconds),
        client=ClientSettings(timeout_seconds=timeout_seconds),
        errors=_httpx_errors(url),
    )
    return await post_json(url, payload, policy=policy, headers=headers)


_RETRYABLE = frozenset({429, 500, 502, 503, 504})


def _httpx_errors(url: str) -> ErrorFactory:
    """The runtime loop's failures as the httpx exceptions upstream's callers catch."""

    def status_error(status: int, text: str) -> Exception:
        request = httpx.Request("POST", url)
        response = httpx.Response(status, text=text, request=request)
        if status in _RETRYABLE:
            return httpx.HTTPStatusError(f"Retryable status code: {status}", request=request, response=response)
        try:
            response.raise_for_status()
        except httpx.HTTPStatusError as exc:
            return exc
        return httpx.HTTPStatusError(f"Unexpected status code: {status}", request=request, response=response)

    def as_is(exc: Exception) -> Exception:
        return exc

    return ErrorFactory(status=status_error, unexpected_status=status_error, timeout=as_is, transport=as_is)
