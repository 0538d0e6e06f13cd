"""One ``AsyncOpenAI`` client per (event loop, controller endpoint, key), on the runtime's shared HTTP pool.

Upstream's integrations went through ``litellm.acompletion`` for every model call (~9 ms of CPU per call here for
litellm's request translation, logging and bookkeeping, and ~170 MB to import litellm at all). The rollout models
here send the framework's request through one OpenAI client per controller endpoint instead. Clients are bound to the loop they run on (httpx connections are), so the
cache is kept per loop and forgotten with it; when the runtime pool replaces its httpx client (e.g. after a server
shut down and closed it), the OpenAI client is rebuilt on the new one.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import TYPE_CHECKING, Any

from osmosis_compat.runtime.http import get_client

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "RawChatClient",
    "TRANSPORT_ENV",
    "auth_headers_for",
    "litellm_transport_forced",
    "rollout_openai_client",
]

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


class RawChatClient:
    """Stands in for ``AsyncOpenAI`` inside ``OpenAIChatCompletionsModel``: ``chat.completions.create(**kwargs)``
    posts the arguments as the JSON body as they are, skipping the OpenAI client's recursive type-driven
    transform of the request (~3 ms of CPU per call for a short conversation with two tools).

    The body is laid out as litellm put it on the wire upstream: ``messages``, ``model``, then the other
    parameters in sorted order, without omitted values, and without ``"content": null`` on assistant tool-call
    messages. ``extra_headers`` / ``extra_query`` / ``extra_body`` / ``timeout`` are request options as in the
    OpenAI client.
    """

    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client
        self.base_url = client.base_url
        self.chat = self
        self.completions = self

    async def create(self, **kwargs: Any) -> Any:
        from openai import NotGiven, Omit
        from openai.types.chat import ChatCompletion

        options: dict[str, Any] = {}
        for option, key in (("extra_headers", "headers"), ("extra_query", "params"), ("extra_body", "extra_json")):
            value = kwargs.pop(option, None)
            if value:
                options[key] = value
        timeout = kwargs.pop("timeout", None)
        if timeout is not None and not isinstance(timeout, (Omit, NotGiven)):
            options["timeout"] = timeout
        given = {k: v for k, v in kwargs.items() if not isinstance(v, (Omit, NotGiven))}
        messages = [_without_null_tool_call_content(m) for m in given.pop("messages")]
        body: dict[str, Any] = {"messages": messages, "model": given.pop("model")}
        body.update(sorted(given.items()))
        stream = body.get("stream") is True
        return await self._client.post(
            "/chat/completions",
            cast_to=ChatCompletion,
            body=body,
            options=options,
            stream=stream,
            stream_cls=chunk_stream_class() if stream else None,
        )


def _without_null_tool_call_content(message: Any) -> Any:
    if isinstance(message, dict) and message.get("tool_calls") and "content" in message and message["content"] is None:
        return {k: v for k, v in message.items() if k != "content"}
    return message


#: Set to ``litellm`` to send every rollout model call through ``litellm.acompletion`` as upstream did (for code
#: that relies on litellm callbacks/logging or catches litellm's exception classes). Read at call time.
TRANSPORT_ENV = "OSMOSIS_COMPAT_MODEL_TRANSPORT"


def litellm_transport_forced() -> bool:
    """Whether ``OSMOSIS_COMPAT_MODEL_TRANSPORT=litellm`` asks for upstream's litellm path."""
    return os.environ.get(TRANSPORT_ENV, "").strip().lower() == "litellm"


#: How long to wait, after ``data: [DONE]``, for the body to end so the connection can be reused.
_DRAIN_AFTER_DONE_S = 0.25
_stream_class: type | None = None


def chunk_stream_class() -> type:
    """``AsyncStream[ChatCompletionChunk]`` that reads the body to its end before stopping at ``data: [DONE]``.

    The OpenAI client stops reading at ``[DONE]`` and closes the response before the HTTP message is complete, so
    httpx drops the connection and every streamed model call opens a new one. Reading on to the end of the body
    (bounded by ``_DRAIN_AFTER_DONE_S``; a server that keeps the body open after ``[DONE]`` just loses the
    connection, as before) lets the pooled connection be reused.
    """
    global _stream_class
    if _stream_class is None:
        from openai import AsyncStream
        from openai.types.chat import ChatCompletionChunk

        class _DrainingChunkStream(AsyncStream[ChatCompletionChunk]):  # type: ignore[misc]
            async def _iter_events(self) -> Any:
                events = self._decoder.aiter_bytes(self.response.aiter_bytes())
                async for sse in events:
                    if sse.data.startswith("[DONE]"):
                        try:
                            await asyncio.wait_for(_drain(events), _DRAIN_AFTER_DONE_S)
                        except Exception:  # timeout or a broken tail: the connection is dropped, as before
                            pass
                    yield sse

        _stream_class = _DrainingChunkStream
    return _stream_class


async def _drain(events: Any) -> None:
    async for _ in events:
        pass
