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
from typing import TYPE_CHECKING, Any

from osmosis_compat.runtime.http import get_client

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["auth_headers_for", "rollout_openai_client"]

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str | None], AsyncOpenAI]] = (
    weakref.WeakKeyDictionary()
)
#: litellm's default request timeout, which upstream's model calls had.
_TIMEOUT_S = 600.0


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
        from openai import AsyncOpenAI, omit

        if api_key:
            client = AsyncOpenAI(base_url=base_url, api_key=api_key, http_client=http_client, timeout=_TIMEOUT_S)
        else:
            # The client insists on some key; the header it would make is omitted (see auth_headers_for).
            client = AsyncOpenAI(
                base_url=base_url,
                api_key="unused",
                http_client=http_client,
                timeout=_TIMEOUT_S,
                default_headers={"Authorization": omit},
            )
        per_loop[key] = client
    return client


def auth_headers_for(api_key: str | None) -> dict[str, Any]:
    """Per-call headers for ``api_key``: nothing with a key; with none, an explicit "omit" of ``Authorization``.

    Without a controller key we send no ``Authorization`` at all. Upstream handed ``api_key=None`` to litellm,
    which then fell back to ``OPENAI_API_KEY`` from the environment — sending the user's real OpenAI key to the
    controller. (The OpenAI client only accepts a missing key when the call itself omits the header.)
    """
    if api_key:
        return {}
    from openai import omit

    return {"Authorization": omit}
