"""Chat-completions streaming (SSE) as pure data transforms.

OpenAI-compatible clients that send ``"stream": true`` must get ``text/event-stream`` back, or they fail
silently with an empty answer (spec/frameworks.md §4.3, P6). These functions turn one non-streaming
``chat.completion`` dict into the equivalent ``chat.completion.chunk`` sequence and back, and encode /
decode the SSE framing. No I/O and no framework imports, so both the runtime's streaming bridge and the
fake controllers in :mod:`osmosis_compat.testing` use the same code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["completion_to_chunks", "encode_sse", "sse_event", "decode_sse", "chunks_to_completion", "SSE_DONE"]

#: The terminating SSE event of every OpenAI-compatible stream.
SSE_DONE = b"data: [DONE]\n\n"


def completion_to_chunks(completion: dict[str, Any], *, include_usage: bool) -> list[dict[str, Any]]:
    """Return the ``chat.completion.chunk`` sequence equivalent to a non-streaming ``completion``.

    Per choice: a first delta with ``role`` (and the text ``content`` when there is any), one opening
    delta per tool call carrying ``index``, ``id``, ``type`` and ``function.name`` with empty
    ``arguments``, then one delta per tool call with the ``arguments`` string, then a chunk with an empty
    delta and the choice's ``finish_reason``. When ``include_usage`` is true (the request had
    ``stream_options.include_usage``) and the completion has ``usage``, a last chunk with
    ``"choices": []`` and that usage follows. Every chunk repeats ``id``/``created``/``model`` when the
    completion has them. Raises ``ValueError`` when ``completion`` has no ``choices`` list.
    """
    choices = completion.get("choices")
    if not isinstance(choices, list):
        raise ValueError("completion must have a 'choices' list")
    envelope: dict[str, Any] = {}
    if completion.get("id") is not None:
        envelope["id"] = completion["id"]
    envelope["object"] = "chat.completion.chunk"
    for key in ("created", "model", "system_fingerprint"):
        if completion.get(key) is not None:
            envelope[key] = completion[key]

    def chunk(index: int, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**envelope, "choices": [{"index": index, "delta": delta, "finish_reason": finish_reason}]}

    chunks: list[dict[str, Any]] = []
    for position, choice in enumerate(choices):
        index = choice.get("index", position)
        message = choice.get("message") or {}
        content = message.get("content")
        tool_calls = message.get("tool_calls") or []
        first: dict[str, Any] = {"role": message.get("role", "assistant")}
        if isinstance(content, str) and content:
            first["content"] = content
            chunks.append(chunk(index, first))
            first = {}
        for call_index, call in enumerate(tool_calls):
            function = call.get("function") or {}
            opening = {
                **first,
                "tool_calls": [
                    {
                        "index": call_index,
                        "id": call.get("id"),
                        "type": call.get("type", "function"),
                        "function": {"name": function.get("name"), "arguments": ""},
                    }
                ],
            }
            if "role" in first:
                # Same shape as OpenAI's first tool-call delta (spec/frameworks.md §4.3).
                opening["content"] = None
            chunks.append(chunk(index, opening))
            first = {}
            arguments = function.get("arguments") or ""
            if arguments:
                chunks.append(
                    chunk(index, {"tool_calls": [{"index": call_index, "function": {"arguments": arguments}}]})
                )
        if first:
            # Neither text nor tool calls (e.g. empty content): still announce the role.
            first["content"] = content if isinstance(content, str) else ""
            chunks.append(chunk(index, first))
        chunks.append(chunk(index, {}, choice.get("finish_reason") or "stop"))
    if include_usage and completion.get("usage") is not None:
        chunks.append({**envelope, "choices": [], "usage": completion["usage"]})
    return chunks


def sse_event(chunk: dict[str, Any]) -> bytes:
    """One SSE event, ``data: <compact json>\\n\\n`` (for writers that stream chunk by chunk, then
    send :data:`SSE_DONE`)."""
    return b"data: " + json.dumps(chunk, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def encode_sse(chunks: Iterable[dict[str, Any]]) -> bytes:
    """Encode chunks as SSE: ``data: <compact json>\\n\\n`` per chunk, then ``data: [DONE]\\n\\n``."""
    return b"".join([*(sse_event(c) for c in chunks), SSE_DONE])


def decode_sse(body: bytes | str) -> list[dict[str, Any]]:
    """Parse an SSE body back into chunk dicts, stopping at ``[DONE]``.

    Comment lines (``: ping``) and non-``data`` fields are skipped. Raises ``ValueError`` when a
    ``data:`` line is not valid JSON or the stream has no ``[DONE]`` terminator, so a truncated or
    malformed stream never passes for a short one.
    """
    text = body.decode() if isinstance(body, bytes) else body
    chunks: list[dict[str, Any]] = []
    for event in text.replace("\r\n", "\n").split("\n\n"):
        data_lines = [line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")]
        if not data_lines:
            continue
        data = "\n".join(data_lines)
        if data == "[DONE]":
            return chunks
        try:
            chunks.append(json.loads(data))
        except json.JSONDecodeError as exc:
            raise ValueError(f"SSE data is not JSON: {data[:200]!r}") from exc
    raise ValueError("SSE stream ended without 'data: [DONE]'")


def chunks_to_completion(chunks: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Reassemble ``chat.completion.chunk`` dicts into one non-streaming ``chat.completion`` dict.

    Content pieces are concatenated; tool-call deltas are grouped by ``index`` (``id``/``type``/``name``
    taken from the first delta that has them, ``arguments`` concatenated); the last non-null
    ``finish_reason`` per choice wins; a ``usage`` object anywhere in the stream is kept.
    """
    completion: dict[str, Any] = {"object": "chat.completion"}
    choices: dict[int, dict[str, Any]] = {}
    for c in chunks:
        for key in ("id", "created", "model", "system_fingerprint"):
            if key in c and key not in completion:
                completion[key] = c[key]
        if c.get("usage") is not None:
            completion["usage"] = c["usage"]
        for choice in c.get("choices") or []:
            state = choices.setdefault(
                choice.get("index", 0),
                {"role": "assistant", "content": None, "tool_calls": {}, "finish_reason": None},
            )
            delta = choice.get("delta") or {}
            if delta.get("role"):
                state["role"] = delta["role"]
            if isinstance(delta.get("content"), str):
                state["content"] = (state["content"] or "") + delta["content"]
            for call in delta.get("tool_calls") or []:
                slot = state["tool_calls"].setdefault(
                    call.get("index", 0), {"id": None, "type": "function", "function": {"name": None, "arguments": ""}}
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                if call.get("type"):
                    slot["type"] = call["type"]
                function = call.get("function") or {}
                if function.get("name"):
                    slot["function"]["name"] = function["name"]
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                state["finish_reason"] = choice["finish_reason"]
    out_choices = []
    for index in sorted(choices):
        state = choices[index]
        message: dict[str, Any] = {"role": state["role"], "content": state["content"]}
        if state["tool_calls"]:
            message["tool_calls"] = [state["tool_calls"][i] for i in sorted(state["tool_calls"])]
        out_choices.append({"index": index, "message": message, "finish_reason": state["finish_reason"]})
    completion["choices"] = out_choices
    return completion
