"""Upstream ``utils/http.py`` (0.2.x): the shared client and the callback POST with retry, as thin names over the
runtime's one HTTP pool and one retry loop (spec workflow-api §2.14, §3.8)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import httpx

from osmosis_compat.runtime.callbacks import WORKFLOW_CALLBACK_POLICY
from osmosis_compat.runtime.delivery import post_json
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
    ``min(base·2^(n-1), max)``; any 2xx returned; any other status raises at once; the last error propagates."""
    policy = dataclasses.replace(
        WORKFLOW_CALLBACK_POLICY,
        attempts=max_attempts,
        backoff=Backoff(base_delay_seconds, max_delay_seconds),
        client=ClientSettings(timeout_seconds=timeout_seconds),
    )
    return await post_json(url, payload, policy=policy, headers=headers)
