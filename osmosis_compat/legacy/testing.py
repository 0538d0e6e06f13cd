"""Helpers for testing agent loops against a mock TrainGate (spec/legacy-protocol.md §2.18).

``create_mock_trainer_app`` is a FastAPI app that plays TrainGate: it answers chat completions (a canned
calculator conversation; a ``tool_call_generator`` decides the tool calls) and stores completion callbacks.
``patch_httpx_for_mock_trainer`` routes the SDK's httpx POSTs to it through a ``TestClient``, so a rollout runs
end to end in-process. FastAPI and httpx are imported only when these helpers are used.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from .schemas import CompletionsRequest, RolloutResponse

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "RolloutCompletionTracker",
    "create_mock_trainer_app",
    "fake_prompt_token_ids",
    "fake_token_ids",
    "patch_httpx_for_mock_trainer",
]

_CALCULATION_KEYWORDS = ("calculate", "add", "sum", "plus", "subtract", "multiply", "divide")

MOCK_TOOL_CALL = {
    "id": "call_mock_add",
    "type": "function",
    "function": {"name": "add", "arguments": '{"a": 5, "b": 3}'},
}


def fake_token_ids(text: str) -> list[int]:
    """One fake token id per character: ``list(range(len(text)))``."""
    return list(range(len(text)))


def fake_prompt_token_ids(messages: list[dict[str, Any]]) -> list[int]:
    """Ten fake prompt token ids per message (at least ten)."""
    return list(range(10 * max(1, len(messages))))


@dataclass
class RolloutCompletionTracker:
    """Collects completion callbacks received by the mock trainer; ``wait()`` blocks until one arrives."""

    event: threading.Event = field(default_factory=threading.Event)
    responses: list[dict[str, Any]] = field(default_factory=list)

    def record(self, response: dict[str, Any]) -> None:
        """Store a callback payload and wake up waiters."""
        self.responses.append(response)
        self.event.set()

    def clear(self) -> None:
        """Forget all payloads and reset the event."""
        self.responses.clear()
        self.event.clear()

    def wait(self, timeout: float = 5.0) -> bool:
        """Wait until a callback has been recorded; ``False`` on timeout."""
        return self.event.wait(timeout)


ToolCallGenerator = Callable[[dict[str, Any]], Optional[Any]]
"""Upstream's ``tool_call_generator``: the last message in, a list of tool calls (or ``None``/``[]`` for none) out."""

_TOOL_CALL_CONTENT = "I'll help you with that calculation."


def _default_tool_calls(last_message: dict[str, Any]) -> Optional[list[dict[str, Any]]]:
    """The built-in generator: a call to ``add`` when a user message asks for a calculation."""
    content = last_message.get("content")
    if last_message.get("role") == "user" and isinstance(content, str):
        lowered = content.lower()
        if any(keyword in lowered for keyword in _CALCULATION_KEYWORDS):
            return [dict(MOCK_TOOL_CALL, function=dict(MOCK_TOOL_CALL["function"]))]
    return None


def _reply(last_message: dict[str, Any], generator: Optional[ToolCallGenerator]) -> dict[str, Any]:
    """The assistant message for ``last_message``: tool calls from the generator (the built-in one by default);
    without any, "The calculation is complete." after a tool message, "OK." otherwise."""
    produced = (generator or _default_tool_calls)(last_message)
    if isinstance(produced, dict) and "role" in produced:
        return produced  # osmosis-compat extension: a generator may return the whole assistant message
    if produced:
        if not isinstance(produced, list):
            raise TypeError(
                f"tool_call_generator must return a list of tool calls or None, got {type(produced).__name__}"
            )
        return {"role": "assistant", "content": _TOOL_CALL_CONTENT, "tool_calls": produced}
    if last_message.get("role") == "tool":
        return {"role": "assistant", "content": "The calculation is complete."}
    return {"role": "assistant", "content": "OK."}


def create_mock_trainer_app(
    tracker: Optional[RolloutCompletionTracker] = None,
    tool_call_generator: Optional[ToolCallGenerator] = None,
) -> FastAPI:
    """A FastAPI app titled "Mock Trainer Server" that plays TrainGate.

    Routes: ``POST /v1/chat/completions`` (body validated as ``CompletionsRequest``). ``tool_call_generator``,
    as upstream, takes the last message and returns the tool calls to make (a list of OpenAI tool-call dicts) or
    ``None``; it replaces the built-in one, which calls ``add`` for a user message mentioning a calculation. With
    tool calls the reply is "I'll help you with that calculation." + the calls; without, "The calculation is
    complete." after a tool message and "OK." otherwise. (A generator may also return a whole assistant message
    dict, used as is — an osmosis-compat extension.)
    ``POST /v1/rollout/completed`` (validated as ``RolloutResponse``; stored and recorded in ``tracker``),
    ``GET /v1/rollout/completed/{rollout_id}`` (stored payload or ``{}``), ``GET /health``.
    """
    try:
        from fastapi import FastAPI
    except ImportError as exc:  # pragma: no cover - fastapi is a dependency of osmosis-compat
        raise ImportError(
            "FastAPI is required for create_mock_trainer_app(). Install it with: pip install fastapi"
        ) from exc

    # Deferred models (defer_build) would build their body adapters at the first request, outside FastAPI's
    # suppression of pydantic's "'alias' ... has no effect" warning: build them with the routes instead.
    for model in (CompletionsRequest, RolloutResponse):
        model.model_config["defer_build"] = False
    app = FastAPI(title="Mock Trainer Server")
    completed: dict[str, dict[str, Any]] = {}

    async def chat_completions(request: CompletionsRequest) -> dict[str, Any]:
        messages = request.messages
        last_message = messages[-1] if messages else {"role": "user", "content": ""}
        reply = _reply(last_message, tool_call_generator)
        content = reply.get("content")
        token_ids = fake_token_ids(content if isinstance(content, str) else "")
        prompt_token_ids = fake_prompt_token_ids(messages)
        return {
            "id": request.rollout_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": len(prompt_token_ids),
                "completion_tokens": len(token_ids),
                "total_tokens": len(prompt_token_ids) + len(token_ids),
            },
            "token_ids": token_ids,
            "logprobs": [0.0] * len(token_ids),
            "prompt_token_ids": prompt_token_ids,
        }

    async def rollout_completed(response: RolloutResponse) -> dict[str, str]:
        payload = response.model_dump(mode="json", exclude_none=True)
        completed[response.rollout_id] = payload
        if tracker is not None:
            tracker.record(payload)
        return {"status": "ok"}

    async def get_completed(rollout_id: str) -> dict[str, Any]:
        return completed.get(rollout_id, {})

    async def health() -> dict[str, str]:
        return {"status": "healthy", "service": "mock-trainer"}

    app.add_api_route("/v1/chat/completions", chat_completions, methods=["POST"])
    app.add_api_route("/v1/rollout/completed", rollout_completed, methods=["POST"])
    app.add_api_route("/v1/rollout/completed/{rollout_id}", get_completed, methods=["GET"])
    app.add_api_route("/health", health, methods=["GET"])
    return app


def patch_httpx_for_mock_trainer(test_client: Any, monkeypatch: Any) -> None:
    """Route ``httpx.AsyncClient.post`` calls to ``/v1/chat/completions`` and ``/v1/rollout/completed`` into
    ``test_client`` (a ``fastapi.testclient.TestClient`` of the mock trainer), same keyword arguments; any other
    URL uses the real method. Undone by ``monkeypatch`` at the end of the test."""
    import httpx

    original_post = httpx.AsyncClient.post

    async def routed_post(self: httpx.AsyncClient, url: Any, **kwargs: Any) -> httpx.Response:
        url_text = str(url)
        for path in ("/v1/chat/completions", "/v1/rollout/completed"):
            if path in url_text:
                reply = test_client.post(path, **kwargs)
                request = httpx.Request("POST", url_text)
                if reply.headers.get("content-type", "").startswith("application/json"):
                    return httpx.Response(reply.status_code, json=reply.json(), request=request)
                # Non-JSON answers (e.g. a plain-text 500) are passed on as they are instead of crashing here.
                return httpx.Response(
                    reply.status_code, content=reply.content, headers=dict(reply.headers), request=request
                )
        return await original_post(self, url, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "post", routed_post)
