"""Reading agent output out of a sample, whatever framework produced it.

Three message shapes reach graders and adapters:

- chat-completions dicts: ``{"role": "assistant", "content": "…"}`` or ``content`` as a list of
  ``{"type": "text", "text": "…"}`` parts;
- Strands messages: ``{"role": "assistant", "content": [{"text": "…"}, {"toolUse": …}]}``;
- OpenAI Agents Responses-API items: ``{"type": "message", "role": "assistant",
  "content": [{"type": "output_text", "text": "…"}]}`` (among ``function_call`` / ``reasoning`` items).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["last_assistant_text", "message_text"]

_TEXT_PART_TYPES = frozenset({"text", "output_text", "input_text"})


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one message in any of the three shapes (text parts joined; tool/image parts skipped)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, Iterable) or isinstance(content, (bytes, Mapping)):
        return ""
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, Mapping):
            continue
        text = part.get("text")
        if not isinstance(text, str):
            continue
        part_type = part.get("type")
        # Strands blocks have no "type"; chat/Responses parts say "text"/"output_text".
        if part_type is None or part_type in _TEXT_PART_TYPES:
            texts.append(text)
    return "".join(texts)


def _is_assistant_message(message: Any) -> bool:
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return False
    # Responses-API items carry a "type"; only "message" items hold assistant text.
    item_type = message.get("type")
    return item_type is None or item_type == "message"


def last_assistant_text(messages: Iterable[Any] | None) -> str:
    """The text of the last assistant message that has any text, from chat dicts, Strands messages or
    OpenAI Agents Responses items (mixed lists work too); ``""`` if there is none.

    An assistant turn made only of tool calls is skipped, so the answer before a trailing tool call is not lost.
    """
    if not messages:
        return ""
    for message in reversed(list(messages)):
        if _is_assistant_message(message):
            text = message_text(message)
            if text:
                return text
    return ""
