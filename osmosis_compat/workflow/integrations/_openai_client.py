"""One ``AsyncOpenAI`` client per (event loop, controller endpoint, key), on the runtime's shared HTTP pool.

Upstream's integrations went through ``litellm.acompletion`` for every model call, which builds a fresh OpenAI
client (and httpx client) per call, plus litellm's logging/cost bookkeeping. The rollout models here reuse one
client per controller endpoint instead. Clients are bound to the loop they run on (httpx connections are), so the
cache is kept per loop and forgotten with it; when the runtime pool replaces its httpx client (e.g. after a server
shut down and closed it), the OpenAI client is rebuilt on the new one.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

from osmosis_compat.runtime.http import get_client

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["rollout_openai_client"]

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str | None], AsyncOpenAI]] = (
    weakref.WeakKeyDictionary()
)
_keyless_class: type | None = None
#: litellm's default request timeout, which upstream's model calls had.
_TIMEOUT_S = 600.0


def _keyless_client_class() -> type:
    """``AsyncOpenAI`` that sends no ``Authorization`` header (rollouts whose ``controller_api_key`` is null).

    Upstream handed ``api_key=None`` to litellm, which then fell back to ``OPENAI_API_KEY`` from the environment —
    sending the user's real OpenAI key to the controller. We send no key at all.
    """
    global _keyless_class
    if _keyless_class is None:
        from openai import AsyncOpenAI

        class _KeylessAsyncOpenAI(AsyncOpenAI):
            @property
            def auth_headers(self) -> dict[str, str]:
                return {}

        _keyless_class = _KeylessAsyncOpenAI
    return _keyless_class


def rollout_openai_client(base_url: str, api_key: str | None) -> AsyncOpenAI:
    """The shared ``AsyncOpenAI`` for ``base_url`` + ``api_key`` on the running loop (built on first use).

    Retries are the OpenAI client's defaults (2 retries on 408/409/429/5xx and connection errors), the same as
    litellm's defaults upstream used. Must be called from inside a running event loop.
    """
    loop = asyncio.get_running_loop()
    per_loop = _clients.get(loop)
    if per_loop is None:
        per_loop = _clients[loop] = {}
    http_client = get_client()
    key = (base_url, api_key)
    client = per_loop.get(key)
    if client is None or client._client is not http_client:
        if api_key:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(base_url=base_url, api_key=api_key, http_client=http_client, timeout=_TIMEOUT_S)
        else:
            client = _keyless_client_class()(
                base_url=base_url, api_key="<none>", http_client=http_client, timeout=_TIMEOUT_S
            )
        per_loop[key] = client
    return client
