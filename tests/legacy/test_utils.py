"""Message utilities (spec §2.11)."""

from osmosis_compat.legacy.utils import (
    count_messages_by_role,
    get_message_content,
    get_message_role,
    is_assistant_message,
    is_tool_message,
    is_user_message,
    normalize_stop,
    parse_tool_calls,
)


def test_parse_tool_calls():
    calls = [{"id": 1}, "not checked"]
    assert parse_tool_calls({"tool_calls": calls}) is calls
    assert parse_tool_calls({}) == []
    assert parse_tool_calls({"tool_calls": None}) == []
    assert parse_tool_calls({"tool_calls": {"id": 1}}) == []


def test_normalize_stop():
    assert normalize_stop(None) is None
    assert normalize_stop("END") == ["END"]
    assert normalize_stop(["a", 1]) == ["a", "1"]
    assert normalize_stop(("a",)) is None
    assert normalize_stop(5) is None


def test_content_and_role():
    assert get_message_content({"content": "x"}) == "x"
    for message in ({}, {"content": None}, {"content": [{"type": "text", "text": "x"}]}):
        assert get_message_content(message) == ""
    assert get_message_role({"role": "user"}) == "user"
    assert get_message_role({}) == "unknown" and get_message_role({"role": 1}) == "unknown"
    assert is_assistant_message({"role": "assistant"}) and not is_assistant_message({"role": "user"})
    assert is_tool_message({"role": "tool"}) and not is_tool_message({})
    assert is_user_message({"role": "user"}) and not is_user_message({"role": "system"})


def test_count_messages_by_role_in_first_seen_order():
    counts = count_messages_by_role([{"role": "system"}, {"role": "user"}, {}, {"role": "user"}])
    assert counts == {"system": 1, "user": 2, "unknown": 1}
    assert list(counts) == ["system", "user", "unknown"]
    assert count_messages_by_role([]) == {}
