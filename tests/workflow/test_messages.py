"""``last_assistant_text`` over the three message shapes samples come in."""

from __future__ import annotations

from typing import Any

import pytest

from osmosis_compat.workflow import last_assistant_text
from osmosis_compat.workflow.messages import message_text

CHAT_STRING = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
    {"role": "tool", "tool_call_id": "c1", "content": "5"},
    {"role": "assistant", "content": "The answer is 5."},
]
CHAT_PARTS = [
    {"role": "user", "content": [{"type": "text", "text": "q"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "The answer "}, {"type": "text", "text": "is 5."}]},
]
STRANDS = [
    {"role": "user", "content": [{"text": "What is 2 + 3?"}]},
    {"role": "assistant", "content": [{"text": "Let me add."}, {"toolUse": {"toolUseId": "t", "name": "add", "input": {}}}]},
    {"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": [{"text": "5"}]}}]},
    {"role": "assistant", "content": [{"text": "The answer is 5."}], "metadata": {"usage": {}}},
]
RESPONSES = [
    {"role": "user", "content": "What is 2 + 3?"},
    {"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": "thinking"}]},
    {"type": "function_call", "call_id": "c", "name": "add", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c", "output": "5"},
    {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "The answer is 5.", "annotations": [], "logprobs": []}],
    },
]


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (CHAT_STRING, "The answer is 5."),
        (CHAT_PARTS, "The answer is 5."),
        (STRANDS, "The answer is 5."),
        (RESPONSES, "The answer is 5."),
        (STRANDS[:3], "Let me add."),  # the text beside a tool call counts
        (CHAT_STRING[:4], ""),  # a tool-call-only assistant turn has no text
        ([], ""),
        (None, ""),
        ([{"role": "user", "content": "only a question"}], ""),
        ([{"role": "assistant", "content": [{"type": "image_url", "image_url": {}}]}], ""),
        ([{"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}], ""),
        (({"role": "assistant", "content": "from a tuple"},), "from a tuple"),
    ],
)
def test_last_assistant_text(messages: Any, expected: str) -> None:
    assert last_assistant_text(messages) == expected


def test_skips_trailing_assistant_turns_without_text() -> None:
    messages = [*STRANDS, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "x", "name": "n", "input": {}}}]}]
    assert last_assistant_text(messages) == "The answer is 5."


def test_message_text_ignores_non_text_parts() -> None:
    assert message_text({"content": [{"text": "a"}, {"image": {"source": {"bytes": b"x"}}}, "b", 3]}) == "ab"
    assert message_text({"content": {"text": "a dict is not a part list"}}) == ""
    assert message_text({}) == ""
