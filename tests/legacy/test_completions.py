"""CompletionsResult (spec §2.5)."""

import dataclasses

import pytest

from osmosis_compat.legacy.completions import CompletionsResult


def result(message):
    return CompletionsResult(message=message, token_ids=[1], logprobs=[0.0], usage={"prompt_tokens": 1},
                             finish_reason="stop")


def test_fields_in_order():
    assert [f.name for f in dataclasses.fields(CompletionsResult)] == [
        "message", "token_ids", "logprobs", "usage", "finish_reason"]


def test_tool_call_properties():
    calls = [{"id": "c", "function": {"name": "f"}}]
    r = result({"role": "assistant", "content": "x", "tool_calls": calls})
    assert r.has_tool_calls is True and r.tool_calls == calls and r.content == "x"
    empty = result({"role": "assistant"})
    assert empty.has_tool_calls is False and empty.tool_calls == [] and empty.content is None
    null = result({"role": "assistant", "content": None, "tool_calls": None})
    assert null.has_tool_calls is False and null.tool_calls is None
    assert result({"tool_calls": []}).has_tool_calls is False


def test_frozen():
    r = result({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.message = {"x": 1}
