"""Request plumbing shared by the fake controllers."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from osmosis_compat.runtime.auth import keys_match
from osmosis_compat.testing.structured import offered_tools

if TYPE_CHECKING:
    from osmosis_compat.testing.policy import ChatPolicy
    from osmosis_compat.testing.recording import StatusScript

INVALID_KEY = {"detail": "Invalid or missing API key"}

#: Chat-body fields handed to a policy that sets ``accepts_request_params = True`` (as ``params=``).
REQUEST_PARAMS = (
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "n",
    "presence_penalty", "frequency_penalty", "tool_choice", "parallel_tool_calls", "response_format",
)


def parse_json(raw: bytes) -> tuple[Any, str | None]:
    """``(body, None)`` for a JSON object, else ``(body_or_None, error message)``."""
    try:
        body = json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"request body is not valid JSON: {exc}"
    if not isinstance(body, dict):
        return body, "request body must be a JSON object"
    return body, None


def bearer_matches(header: str | None, expected: str) -> bool:
    """True when ``header`` is exactly ``Bearer <expected>`` (scheme case-insensitive).

    Stricter than the legacy server's lenient parsing (runtime.auth): real controllers receive keys from
    OpenAI-style clients, which always send the scheme, so a bare key here means a client bug to surface.
    """
    parts = (header or "").split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return False
    return keys_match(parts[1], expected)


def validation_error(loc: list[str], message: str, value: Any = None) -> dict[str, Any]:
    """A FastAPI-style 422 body, so clients that parse ``detail`` see the familiar shape."""
    return {"detail": [{"type": "value_error", "loc": loc, "msg": message, "input": value}]}


def callback_reply(status: int) -> tuple[int, Any]:
    """``(status, json body or None)`` for a scripted callback answer."""
    if status == 204:
        return status, None
    if 200 <= status < 300:
        return status, {"status": "ok"}
    return status, {"detail": f"scripted failure (HTTP {status})"}


def json_or_text(response: Any) -> Any:
    """An httpx response's JSON body, or its text when it is not JSON."""
    try:
        return response.json()
    except ValueError:
        return response.text


async def read_request(request: Request) -> tuple[dict[str, str], Any, str | None]:
    """``(lower-cased headers, JSON body, error message or None)`` of an incoming request."""
    body, error = parse_json(await request.body())
    return dict(request.headers), body, error


def json_response(status: int, body: Any) -> Response:
    """A JSON response, or an empty one when ``body`` is ``None`` (e.g. 204)."""
    return Response(status_code=status) if body is None else JSONResponse(body, status_code=status)


def chat_response(status: int, reply: Any, request_body: Any) -> Response:
    """The answer to a chat call: SSE chunks when the call streams and succeeded (a JSON reply to a streaming
    request fails silently in both frameworks, spec/frameworks.md P6; a usage chunk iff
    ``stream_options.include_usage``), else JSON."""
    if status == 200 and isinstance(request_body, dict) and request_body.get("stream"):
        from osmosis_compat.runtime.sse import completion_to_chunks, encode_sse

        include_usage = bool((request_body.get("stream_options") or {}).get("include_usage"))
        sse = encode_sse(completion_to_chunks(reply, include_usage=include_usage))
        return Response(sse, media_type="text/event-stream", headers={"cache-control": "no-cache"})
    return json_response(status, reply)


async def answer_chat(
    policy: ChatPolicy, body: dict[str, Any], tools: Any, *, default_model: str, script: StatusScript
) -> tuple[int, Any]:
    """Validate a chat body's ``messages``/``tools`` and ask ``policy``: ``(200, completion)``,
    ``(422 | 500, error body)``, or — when the next status of ``script`` is not 200 — that status with an
    OpenAI-shaped error body (no body for 204)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return 422, validation_error(["body", "messages"], "messages must be a list of objects", messages)
    if tools is not None and not isinstance(tools, list):
        return 422, validation_error(["body", "tools"], "tools must be a list", tools)
    scripted_status = script.next_status()
    if scripted_status == 204:
        return 204, None
    if scripted_status != 200:
        kind = "server_error" if scripted_status >= 500 else "invalid_request_error"
        message = f"scripted failure (HTTP {scripted_status})"
        return scripted_status, {"error": {"message": message, "type": kind, "code": scripted_status}}
    tools = offered_tools(tools, body.get("tool_choice"))
    kwargs: dict[str, Any] = {"model": body.get("model") or default_model}
    if getattr(policy, "accepts_request_params", False):
        # A policy forwarding to a real model (osmosis_compat.evaluation.policies.ForwardingPolicy) also gets the
        # sampling parameters the agent sent; the scripted policy reads the output ones (tool_choice,
        # response_format) to answer a request for structured output.
        kwargs["params"] = {key: body[key] for key in REQUEST_PARAMS if body.get(key) is not None}
    try:
        return 200, await policy.areply(messages, tools, **kwargs)
    except Exception as exc:  # a broken override must show up as a clear 500, not a dropped socket
        return 500, {"detail": f"policy failed: {type(exc).__name__}: {exc}"}


@functools.lru_cache(maxsize=1)
def driver_ssl_context() -> Any:
    """One SSL context shared by the drivers' per-rollout httpx clients: building one loads the CA bundle
    (~40 ms of CPU), which otherwise dominated the cost of driving a rollout."""
    import httpx

    return httpx.create_ssl_context()
