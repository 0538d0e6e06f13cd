"""Small helpers over chat-message dicts (spec/legacy-protocol.md §2.11)."""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "count_messages_by_role",
    "get_message_content",
    "get_message_role",
    "is_assistant_message",
    "is_tool_message",
    "is_user_message",
    "normalize_stop",
    "parse_tool_calls",
]


def parse_tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The message's ``tool_calls`` when it is a list, else ``[]`` (elements are not checked)."""
    tool_calls = message.get("tool_calls") or []
    return tool_calls if isinstance(tool_calls, list) else []


def normalize_stop(stop: Any) -> Optional[list[str]]:
    """``None`` → ``None``; a string → ``[string]``; a list → each element as ``str``; anything else → ``None``."""
    if stop is None:
        return None
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list):
        return [str(item) for item in stop]
    return None


def get_message_content(message: dict[str, Any]) -> str:
    """The content when it is a string, else ``""`` (missing, ``None`` or multi-part content)."""
    content = message.get("content")
    return content if isinstance(content, str) else ""


def get_message_role(message: dict[str, Any]) -> str:
    """The role when it is a string, else ``"unknown"``."""
    role = message.get("role")
    return role if isinstance(role, str) else "unknown"


def is_assistant_message(message: dict[str, Any]) -> bool:
    """Whether the role is ``"assistant"``."""
    return get_message_role(message) == "assistant"


def is_tool_message(message: dict[str, Any]) -> bool:
    """Whether the role is ``"tool"``."""
    return get_message_role(message) == "tool"


def is_user_message(message: dict[str, Any]) -> bool:
    """Whether the role is ``"user"``."""
    return get_message_role(message) == "user"


def count_messages_by_role(messages: list[dict[str, Any]]) -> dict[str, int]:
    """Messages per role, in first-seen order (``"unknown"`` for a missing/non-string role)."""
    counts: dict[str, int] = {}
    for message in messages:
        role = get_message_role(message)
        counts[role] = counts.get(role, 0) + 1
    return counts
