"""Messages in plain chat-completions shape: what the legacy protocol (and legacy agents) expect.

Legacy agents and TrainGate work with OpenAI chat messages whose ``content`` is a string. Framework
integrations send list-of-parts content (``[{"type": "text", "text": …}]``, Strands' ``[{"text": …}]``).
A list made only of text parts carries nothing a string cannot, so it is joined into one string; any list
holding another part (an image, a Strands ``toolUse`` block …) is kept whole, because flattening it would lose
data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["flatten_text_content", "to_chat_message", "to_chat_messages"]


def _text_of_part(part: Any) -> str | None:
    """The text of a pure text part (``{"type": "text", "text": s}`` or ``{"text": s}``), else ``None``."""
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return None
    text = part.get("text")
    if not isinstance(text, str):
        return None
    kind = part.get("type", "text")
    if kind != "text" or set(part) - {"type", "text"}:
        return None
    return text


def flatten_text_content(content: Any) -> Any:
    """``content`` as a string when it is a list of text parts only (joined without separator); else unchanged."""
    if not isinstance(content, list) or not content:
        return content
    texts = [_text_of_part(part) for part in content]
    if any(text is None for text in texts):
        return content
    return "".join(texts)  # type: ignore[arg-type]


def to_chat_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A plain ``dict`` copy of ``message`` with text-only list content flattened to a string."""
    out = dict(message)
    if "content" in out:
        out["content"] = flatten_text_content(out["content"])
    return out


def to_chat_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`to_chat_message` over a conversation."""
    return [to_chat_message(m) for m in messages]
