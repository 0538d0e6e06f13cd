"""runtime/sse.py: chunk sequences that reassemble to the original completion, and SSE framing."""

from __future__ import annotations

import json

import pytest

from osmosis_compat.runtime.sse import chunks_to_completion, completion_to_chunks, decode_sse, encode_sse

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def completion(message: dict, finish_reason: str) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}], "usage": USAGE}


TEXT = completion({"role": "assistant", "content": "The answer is 5."}, "stop")
TOOLS = completion(
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
        {"id": "call_2", "type": "function", "function": {"name": "mul", "arguments": '{"x": 1, "y": 4}'}},
    ]},
    "tool_calls",
)


@pytest.mark.parametrize("original", [TEXT, TOOLS], ids=["text", "tool_calls"])
@pytest.mark.parametrize("include_usage", [True, False])
def test_chunks_reassemble_to_the_same_message(original, include_usage):
    chunks = decode_sse(encode_sse(completion_to_chunks(original, include_usage=include_usage)))
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == "chatcmpl-1" for c in chunks)
    rebuilt = chunks_to_completion(chunks)
    assert rebuilt["choices"] == original["choices"]
    assert rebuilt.get("usage") == (USAGE if include_usage else None)


def test_tool_call_deltas_open_with_id_and_name_then_stream_arguments():
    chunks = completion_to_chunks(TOOLS, include_usage=True)
    deltas = [c["choices"][0]["delta"] if c["choices"] else None for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": ""}}]}
    assert deltas[1] == {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 2, "b": 3}'}}]}
    assert deltas[2]["tool_calls"][0]["index"] == 1 and deltas[2]["tool_calls"][0]["id"] == "call_2"
    assert "role" not in deltas[2]
    # finish chunk, then the usage chunk with no choices
    assert chunks[-2]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == USAGE
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-2])


def test_text_reply_is_role_and_content_then_stop():
    chunks = completion_to_chunks(TEXT, include_usage=False)
    assert [c["choices"][0]["delta"] for c in chunks] == [{"role": "assistant", "content": "The answer is 5."}, {}]
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_empty_content_still_announces_the_role():
    chunks = completion_to_chunks(completion({"role": "assistant", "content": ""}, "stop"), include_usage=False)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks_to_completion(chunks)["choices"][0]["message"]["content"] == ""


def test_minimal_completion_without_envelope_or_usage():
    minimal = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    chunks = completion_to_chunks(minimal, include_usage=True)
    assert all(set(c) == {"object", "choices"} for c in chunks)  # no usage chunk without usage
    with pytest.raises(ValueError):
        completion_to_chunks({"id": "x"}, include_usage=False)


def test_encode_frames_each_chunk_and_ends_with_done():
    body = encode_sse([{"a": 1}, {"b": "é"}])
    assert body == b'data: {"a":1}\n\n' + 'data: {"b":"é"}\n\n'.encode() + b"data: [DONE]\n\n"
    assert encode_sse([]) == b"data: [DONE]\n\n"


def test_decode_skips_comments_and_rejects_truncated_or_garbled_streams():
    assert decode_sse(b': ping\n\ndata: {"a": 1}\r\n\r\ndata: [DONE]\n\n') == [{"a": 1}]
    with pytest.raises(ValueError, match="DONE"):
        decode_sse(b'data: {"a": 1}\n\n')
    with pytest.raises(ValueError, match="not JSON"):
        decode_sse(b"data: {nope\n\ndata: [DONE]\n\n")


def test_every_frame_is_compact_single_line_json():
    for line in encode_sse(completion_to_chunks(TOOLS, include_usage=True)).split(b"\n\n")[:-2]:
        assert line.startswith(b"data: ") and b"\n" not in line
        json.loads(line[6:])


def test_sse_event_frames_one_chunk_for_incremental_writers():
    from osmosis_compat.runtime.sse import SSE_DONE, sse_event

    chunks = completion_to_chunks(TEXT, include_usage=True)
    assert b"".join(sse_event(c) for c in chunks) + SSE_DONE == encode_sse(chunks)


# -- property: any completion survives chunking, SSE framing and reassembly ----------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_text = st.text(min_size=0, max_size=40)
_call = st.fixed_dictionaries({
    "id": st.text(alphabet="abcdef0123456789", min_size=1, max_size=8).map(lambda s: f"call_{s}"),
    "type": st.just("function"),
    "function": st.fixed_dictionaries({"name": st.sampled_from(["add", "search", "calc"]),
                                       "arguments": st.dictionaries(st.sampled_from("abxy"), st.integers(),
                                                                    max_size=3).map(json.dumps)}),
})


@st.composite
def completions(draw):
    calls = draw(st.lists(_call, max_size=3))
    content = draw(st.one_of(st.none(), _text.filter(bool)))
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return completion(message, "tool_calls" if calls else "stop")


@settings(max_examples=80, deadline=None)
@given(original=completions(), include_usage=st.booleans())
def test_any_completion_round_trips(original, include_usage):
    rebuilt = chunks_to_completion(decode_sse(encode_sse(completion_to_chunks(original, include_usage=include_usage))))
    expected = original["choices"][0]["message"]
    message = rebuilt["choices"][0]["message"]
    assert message.get("tool_calls") == expected.get("tool_calls")
    assert (message["content"] or None) == expected["content"]
    assert rebuilt["choices"][0]["finish_reason"] == original["choices"][0]["finish_reason"]
