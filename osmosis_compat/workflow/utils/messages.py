"""Prompt reshaping for Strands (upstream ``utils/messages.py``, spec §2.14)."""

from __future__ import annotations

from typing import Any

__all__ = ["map_initial_messages_to_content_blocks"]


def map_initial_messages_to_content_blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """String ``content`` → ``{"role": role, "content": [{"text": content}]}`` (other keys dropped, as upstream);
    any other message passes through untouched."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            converted.append({"role": message.get("role"), "content": [{"text": content}]})
        else:
            converted.append(message)
    return converted
