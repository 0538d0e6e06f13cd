"""Text-only content part lists flatten to strings; anything carrying more is kept whole."""

from __future__ import annotations

from osmosis_compat.adapters import flatten_text_content, to_chat_messages


def test_text_parts_flatten() -> None:
    assert flatten_text_content([{"type": "text", "text": "a"}, {"text": "b"}, "c"]) == "abc"
    assert flatten_text_content("plain") == "plain"
    assert flatten_text_content(None) is None
    assert flatten_text_content([]) == []


def test_other_parts_are_kept() -> None:
    image = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:,"}}]
    assert flatten_text_content(image) is image
    tool_use = [{"toolUse": {"toolUseId": "t", "name": "add", "input": {}}}]
    assert flatten_text_content(tool_use) is tool_use
    cached = [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]
    assert flatten_text_content(cached) is cached  # an extra key is information: keep the part


def test_messages_are_copied_not_mutated() -> None:
    original = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, {"role": "assistant"}]
    converted = to_chat_messages(original)
    assert converted == [{"role": "user", "content": "hi"}, {"role": "assistant"}]
    assert original[0]["content"] == [{"type": "text", "text": "hi"}]
