"""The one place that turns a chat-completions reply into a message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChatReply", "MalformedReplyError", "parse_chat_reply"]


class MalformedReplyError(ValueError):
    """The controller answered 200 with a body that is not a chat completion."""


@dataclass(frozen=True)
class ChatReply:
    """One model turn as the agent sees it."""

    message: dict[str, Any]
    finish_reason: str
    usage: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)


def parse_chat_reply(data: Any) -> ChatReply:
    """Extract ``choices[0].message`` and friends from a chat.completion body.

    A missing or ``null`` ``usage`` becomes ``{}`` (upstream crashed on ``"usage": null``); a missing
    ``finish_reason`` becomes ``"stop"``. Raises :class:`MalformedReplyError` when there is no first choice
    with a message object.
    """
    if not isinstance(data, dict):
        raise MalformedReplyError(f"chat completion must be a JSON object, got {type(data).__name__}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedReplyError("chat completion has no choices[0]")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedReplyError("chat completion choices[0] has no message object")
    usage = data.get("usage")
    return ChatReply(
        message=message,
        finish_reason=choice.get("finish_reason") or "stop",
        usage=usage if isinstance(usage, dict) else {},
        raw=data,
    )
