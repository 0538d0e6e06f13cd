"""Model calls to a controller's chat endpoint, in the controller's dialect.

Two dialects exist (DESIGN.md, "One rollout, as data"):

- **legacy** — ``POST {server_url}/v1/chat/completions``, non-streaming, ``rollout_id`` in the body, no tools
  (TrainGate learnt them at init), ``Authorization: Bearer <request.api_key>``;
- **workflow** — ``POST {chat_completions_url}/chat/completions``, OpenAI-compatible, tools in every request,
  ``x-rollout-id`` / ``x-sample-id`` headers, ``Authorization: Bearer <controller key>``.

A dialect only knows URLs and headers; the body is built by the API layer (which owns its defaults) and the
retry rules come from a :class:`~.delivery.DeliveryPolicy`, so both APIs share one client, one retry loop and
one reply parser.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .auth import bearer_headers
from .delivery import DeliveryPolicy, post_json
from .messages import ChatReply, parse_chat_reply

__all__ = ["ChatDialect", "LegacyDialect", "PolicyClient", "PolicyCall", "WorkflowDialect"]


class ChatDialect(Protocol):
    """Where a model call goes and which headers identify it."""

    def url(self) -> str: ...

    def headers(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class LegacyDialect:
    """The legacy TrainGate: identity travels only as ``rollout_id`` in the body (no custom headers)."""

    server_url: str
    api_key: str | None = None

    def url(self) -> str:
        # Path appended verbatim to the right-stripped base, as upstream (a path prefix is preserved).
        return self.server_url.rstrip("/") + "/v1/chat/completions"

    def headers(self) -> dict[str, str]:
        return bearer_headers(self.api_key)


@dataclass(frozen=True)
class WorkflowDialect:
    """The 0.2.x workflow controller: an OpenAI-compatible base URL plus routing headers."""

    chat_completions_url: str
    api_key: str | None = None
    rollout_id: str = ""
    sample_id: str = ""
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    def url(self) -> str:
        return self.chat_completions_url.rstrip("/") + "/chat/completions"

    def headers(self) -> dict[str, str]:
        headers = bearer_headers(self.api_key)
        if self.rollout_id:
            headers["x-rollout-id"] = self.rollout_id
        if self.sample_id:
            headers["x-sample-id"] = self.sample_id
        headers.update(self.extra_headers)
        return headers


@dataclass(frozen=True)
class PolicyCall:
    """A finished model call: the parsed reply and how long the round trip took."""

    reply: ChatReply
    latency_ms: float


class PolicyClient:
    """Sends chat-completion requests through the shared HTTP pool and parses the replies."""

    def __init__(self, policy: DeliveryPolicy) -> None:
        self.policy = policy

    async def chat(self, dialect: ChatDialect, body: Mapping[str, Any]) -> PolicyCall:
        """POST ``body`` to the dialect's endpoint with the client's retry policy; parse the reply.

        Raises the policy's errors for HTTP/transport failures and
        :class:`~.messages.MalformedReplyError` for a 2xx body that is not a chat completion.
        """
        started = time.perf_counter()
        response = await post_json(dialect.url(), body, policy=self.policy, headers=dialect.headers())
        latency_ms = (time.perf_counter() - started) * 1000.0
        return PolicyCall(reply=parse_chat_reply(response.json()), latency_ms=latency_ms)
