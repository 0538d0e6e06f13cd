"""Schemas of spec/legacy-protocol.md §1.2.1 and §2.8: fields, defaults, validation texts, tool normalisation."""

import json
import threading

import pytest
from pydantic import ValidationError

from osmosis_compat.legacy import schemas
from osmosis_compat.legacy.schemas import (
    DEFAULT_MAX_METADATA_SIZE_BYTES,
    CompletionsChoice,
    CompletionsRequest,
    CompletionsResponse,
    CompletionUsage,
    InitResponse,
    OpenAIFunctionCallSchema,
    OpenAIFunctionParametersSchema,
    OpenAIFunctionParsedSchema,
    OpenAIFunctionPropertySchema,
    OpenAIFunctionSchema,
    OpenAIFunctionToolCall,
    OpenAIFunctionToolSchema,
    RolloutMetrics,
    RolloutRequest,
    RolloutResponse,
    RolloutStatus,
    ToolResponse,
    get_max_metadata_size_bytes,
    normalize_tools,
    set_max_metadata_size_bytes,
)


def request(**overrides):
    data = {"rollout_id": "r-1", "server_url": "http://tg:8080", "messages": [], "completion_params": {}}
    data.update(overrides)
    return RolloutRequest(**data)


def messages_of(exc: ValidationError) -> list[str]:
    return [e["msg"] for e in exc.errors()]


# --- RolloutRequest ------------------------------------------------------------------------------------------


def test_rollout_request_defaults():
    r = request()
    assert r.tool_server_url is None
    assert r.max_turns == 10
    assert r.max_tokens_total == 8192
    assert r.metadata == {}
    assert r.api_key is None and r.idempotency_key is None
    assert list(RolloutRequest.model_fields) == [
        "rollout_id", "server_url", "messages", "completion_params", "tool_server_url", "max_turns",
        "max_tokens_total", "metadata", "api_key", "idempotency_key",
    ]


def test_rollout_request_ignores_unknown_fields_and_coerces_max_turns():
    r = RolloutRequest.model_validate(
        {"rollout_id": "r", "server_url": "https://x/prefix", "messages": [{"role": "user"}],
         "completion_params": {"t": 1}, "max_turns": "5", "surprise": 1}
    )
    assert r.max_turns == 5
    assert r.server_url == "https://x/prefix"
    assert not hasattr(r, "surprise")


@pytest.mark.parametrize("missing", ["rollout_id", "server_url", "messages", "completion_params"])
def test_rollout_request_required_fields(missing):
    data = {"rollout_id": "r", "server_url": "http://x", "messages": [], "completion_params": {}}
    del data[missing]
    with pytest.raises(ValidationError) as info:
        RolloutRequest(**data)
    assert info.value.errors()[0]["loc"] == (missing,)


@pytest.mark.parametrize("rollout_id", [" ", "\t\n"])
def test_rollout_id_whitespace_only(rollout_id):
    with pytest.raises(ValidationError) as info:
        request(rollout_id=rollout_id)
    assert messages_of(info.value) == ["Value error, rollout_id cannot be empty or whitespace only"]


def test_rollout_id_length_bounds():
    with pytest.raises(ValidationError) as info:
        request(rollout_id="")
    assert info.value.errors()[0]["type"] == "string_too_short"
    with pytest.raises(ValidationError) as info:
        request(rollout_id="x" * 257)
    assert info.value.errors()[0]["type"] == "string_too_long"
    assert request(rollout_id="x" * 256).rollout_id == "x" * 256


@pytest.mark.parametrize(
    "url, message",
    [
        ("ftp://tg", "server_url must use http or https scheme"),
        ("tg:8080", "server_url must use http or https scheme"),
        ("http://", "server_url must have a valid host"),
        ("https:///path", "server_url must have a valid host"),
    ],
)
def test_server_url_validation(url, message):
    with pytest.raises(ValidationError) as info:
        request(server_url=url)
    assert messages_of(info.value) == [f"Value error, {message}"]


def test_messages_must_be_objects():
    with pytest.raises(ValidationError):
        request(messages=["hello"])


def test_metadata_size_limit(monkeypatch):
    monkeypatch.setattr(schemas, "_max_metadata_size_bytes", 2 * 1024 * 1024)
    request(metadata={"blob": "x" * (1024 * 1024 + 10)})
    set_max_metadata_size_bytes(1024 * 1024)
    with pytest.raises(ValidationError) as info:
        request(metadata={"blob": "x" * (1024 * 1024 + 10)})
    assert messages_of(info.value) == ["Value error, metadata size exceeds maximum allowed size of 1MB"]


def test_metadata_must_be_json_serializable():
    with pytest.raises(ValidationError) as info:
        request(metadata={"s": {1, 2}})
    assert messages_of(info.value)[0].startswith("Value error, metadata must be JSON serializable: ")


def test_metadata_limit_setter(monkeypatch):
    monkeypatch.setattr(schemas, "_max_metadata_size_bytes", DEFAULT_MAX_METADATA_SIZE_BYTES)
    assert DEFAULT_MAX_METADATA_SIZE_BYTES == 1048576
    assert get_max_metadata_size_bytes() == 1048576
    for bad in (0, -1):
        with pytest.raises(ValueError, match="^max_metadata_size_bytes must be positive$"):
            set_max_metadata_size_bytes(bad)
    set_max_metadata_size_bytes(10)
    assert get_max_metadata_size_bytes() == 10
    with pytest.raises(ValidationError):
        request(metadata={"k": "long enough"})
    threads = [threading.Thread(target=set_max_metadata_size_bytes, args=(n,)) for n in range(100, 120)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 100 <= get_max_metadata_size_bytes() < 120


# --- responses and completions --------------------------------------------------------------------------------


def test_rollout_response_field_order_and_dump():
    response = RolloutResponse(rollout_id="r", status="COMPLETED", reward=1, metrics=RolloutMetrics())
    assert list(RolloutResponse.model_fields) == [
        "rollout_id", "status", "final_messages", "finish_reason", "error_message", "reward", "metrics",
        "extra_fields",
    ]
    dumped = response.model_dump(mode="json", exclude_none=True)
    assert list(dumped) == ["rollout_id", "status", "final_messages", "reward", "metrics", "extra_fields"]
    assert dumped["reward"] == 1.0 and isinstance(dumped["reward"], float)
    assert dumped["status"] == "COMPLETED"
    assert dumped["extra_fields"] == {}
    assert list(dumped["metrics"]) == [
        "total_latency_ms", "llm_latency_ms", "tool_latency_ms", "num_llm_calls", "num_tool_calls",
        "prompt_tokens", "response_tokens", "max_context_tokens",
    ]


def test_rollout_status():
    assert RolloutStatus("COMPLETED") is RolloutStatus.COMPLETED
    assert RolloutStatus.ERROR == "ERROR"
    with pytest.raises(ValueError, match="'completed' is not a valid RolloutStatus"):
        RolloutStatus("completed")
    with pytest.raises(ValidationError):
        RolloutResponse(rollout_id="r", status="DONE")


def test_completions_request_defaults_and_validation():
    body = CompletionsRequest(messages=[], rollout_id="r")
    assert body.model_dump() == {
        "model": "default", "messages": [], "rollout_id": "r", "temperature": 1.0, "top_p": 1.0,
        "max_tokens": 512, "stop": None, "logprobs": True,
    }
    with pytest.raises(ValidationError) as info:
        CompletionsRequest(messages=[], rollout_id="  ")
    assert messages_of(info.value) == ["Value error, rollout_id cannot be empty or whitespace only"]
    with pytest.raises(ValidationError):
        CompletionsRequest(messages=[], rollout_id="r", temperature=None)
    assert CompletionsRequest(messages=[], rollout_id="r", seed=3).model_dump().get("seed") is None


def test_completions_response_models():
    response = CompletionsResponse(id="r", created=1, choices=[CompletionsChoice(message={"role": "assistant"})])
    assert response.object == "chat.completion" and response.model == "default"
    assert response.choices[0].index == 0 and response.choices[0].finish_reason == "stop"
    assert response.usage is None and response.token_ids is None and response.prompt_token_ids is None
    assert CompletionUsage().model_dump() == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    with pytest.raises(ValidationError):
        CompletionsResponse(id="r", choices=[])  # created is required


def test_init_response_default_tools():
    assert InitResponse(rollout_id="r").model_dump() == {"rollout_id": "r", "tools": []}


def test_metrics_defaults():
    assert RolloutMetrics().model_dump() == {
        "total_latency_ms": 0.0, "llm_latency_ms": 0.0, "tool_latency_ms": 0.0, "num_llm_calls": 0,
        "num_tool_calls": 0, "prompt_tokens": 0, "response_tokens": 0, "max_context_tokens": 0,
    }


# --- tool schemas ----------------------------------------------------------------------------------------------


def test_function_call_schema_decoding():
    call, err = OpenAIFunctionCallSchema.from_openai_function_parsed_schema(
        OpenAIFunctionParsedSchema(name="f", arguments='{"a": 1}')
    )
    assert (call.name, call.arguments, err) == ("f", {"a": 1}, False)
    for raw in ("not json", "[1, 2]", "3"):
        call, err = OpenAIFunctionCallSchema.from_openai_function_parsed_schema(
            OpenAIFunctionParsedSchema(name="f", arguments=raw)
        )
        assert call.arguments == {} and err is True


def test_tool_call_model():
    call = OpenAIFunctionToolCall(id="c1", function=OpenAIFunctionCallSchema(name="f", arguments={}))
    assert call.type == "function"
    with pytest.raises(ValidationError):
        OpenAIFunctionToolCall(id="c1", type="other", function={"name": "f", "arguments": {}})


def test_tool_response():
    assert ToolResponse().is_empty()
    assert ToolResponse(text="hi").is_text_only()
    assert not ToolResponse(text="hi", image=["x"]).is_text_only()
    assert not ToolResponse(image=["x"]).is_empty()
    with pytest.raises(ValidationError, match="image must be a list"):
        ToolResponse(image="x")
    with pytest.raises(ValidationError, match="video must be a list"):
        ToolResponse(video={"a": 1})


def test_function_schema_defaults_and_required():
    function = OpenAIFunctionSchema(name="f", description="d")
    assert function.strict is False
    assert function.parameters.model_dump() == {"type": "object", "properties": {}, "required": []}
    with pytest.raises(ValidationError):
        OpenAIFunctionSchema(name="f")
    with pytest.raises(ValidationError):
        OpenAIFunctionParametersSchema(type="object", properties={})  # required is required


def test_tool_object_dump_matches_upstream_shape():
    tool = OpenAIFunctionToolSchema(
        type="function",
        function=OpenAIFunctionSchema(
            name="add",
            description="Add",
            parameters=OpenAIFunctionParametersSchema(
                type="object",
                properties={"a": OpenAIFunctionPropertySchema(type="number")},
                required=["a"],
            ),
        ),
    )
    assert normalize_tools([tool]) == [
        {"type": "function",
         "function": {"name": "add", "description": "Add",
                      "parameters": {"type": "object",
                                     "properties": {"a": {"type": "number", "description": None, "enum": None}},
                                     "required": ["a"]},
                      "strict": False}}
    ]


RICH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search",
        "parameters": {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}, "default": [], "description": "t"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "filter": {"type": "object", "properties": {"lang": {"type": "string"}},
                           "additionalProperties": False},
                "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "nullable": {"type": ["string", "null"]},
                "level": {"type": "integer", "enum": [1, 2, 3]},
                "ref": {"$ref": "#/$defs/Thing"},
            },
            "required": ["tags"],
            "additionalProperties": False,
            "$defs": {"Thing": {"type": "object", "properties": {"x": {"type": "number"}}}},
        },
    },
}


def test_normalize_tools_keeps_whole_json_schema():
    [tool] = normalize_tools([RICH_TOOL])
    params = tool["function"]["parameters"]
    source = RICH_TOOL["function"]["parameters"]
    assert params["additionalProperties"] is False
    assert params["$defs"] == source["$defs"]
    assert params["required"] == ["tags"]
    for name, prop in source["properties"].items():
        for key, value in prop.items():
            assert params["properties"][name][key] == value, (name, key)
        # the upstream keys are always present
        assert "description" in params["properties"][name] and "enum" in params["properties"][name]
    assert "type" not in params["properties"]["mode"]  # absent type is not invented as null
    assert tool["function"]["strict"] is False
    json.dumps(tool, allow_nan=False)


def test_normalize_tools_round_trips_through_model_dump():
    model = OpenAIFunctionToolSchema.model_validate(RICH_TOOL)
    again = OpenAIFunctionToolSchema.model_validate(model.model_dump())
    assert again.model_dump() == model.model_dump()
    assert model.function.parameters.properties["tags"].model_dump()["items"] == {"type": "string"}


def test_normalize_tools_mixed_and_omitted_parameters():
    tools = normalize_tools(
        (
            {"type": "function", "function": {"name": "noop", "description": "x"}},
            OpenAIFunctionToolSchema(type="function", function=OpenAIFunctionSchema(name="b", description="y")),
        )
    )
    assert [t["function"]["name"] for t in tools] == ["noop", "b"]
    assert tools[0]["function"]["parameters"] == {"type": "object", "properties": {}, "required": []}
    assert normalize_tools([]) == []


@pytest.mark.parametrize(
    "tools, fragment",
    [
        (None, "must return a list of tools, got NoneType"),
        ({"type": "function"}, "got a single dict"),
        ("tools", "must return a list of tools, got str"),
        ([42], "tools[0]: expected an OpenAIFunctionToolSchema or a dict, got int"),
        ([{"type": "function", "function": {"name": "f"}}], "tools[0]: function.description: Field required"),
        ([{"type": "function", "function": {"description": "d"}}], "tools[0]: function.name: Field required"),
        ([{"type": "function", "function": {"name": "  ", "description": "d"}}], "tools[0]: function.name must be"),
        ([{"function": {"name": "f", "description": "d"}}], "tools[0]: type: Field required"),
        ([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
         "tools[0]: function.parameters.properties: Field required"),
        ([RICH_TOOL, {"type": "function", "function": {"name": "g", "description": "d", "parameters": "x"}}],
         "tools[1]: function.parameters"),
        ([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {
            "type": "object", "properties": {"p": {"type": "number", "default": float("nan")}}, "required": []}}}],
         "tools[0] (f): not JSON-encodable"),
    ],
)
def test_normalize_tools_errors_name_the_tool(tools, fragment):
    with pytest.raises(ValueError) as info:
        normalize_tools(tools)
    assert fragment in str(info.value)


# --- property: any JSON-schema keys survive normalisation ----------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
_json = st.recursive(_json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=8)
_extra_keys = st.dictionaries(
    st.text(min_size=1, max_size=12).filter(lambda k: k not in {"type", "description", "enum"}), _json, max_size=4)


@settings(max_examples=60, deadline=None)
@given(prop_extras=_extra_keys, param_extras=_extra_keys.map(
    lambda d: {k: v for k, v in d.items() if k not in {"properties", "required"}}))
def test_extra_schema_keys_round_trip(prop_extras, param_extras):
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {
        "type": "object", "properties": {"p": {"type": "string", **prop_extras}}, "required": [], **param_extras}}}
    [out] = normalize_tools([tool])
    params = out["function"]["parameters"]
    for key, value in param_extras.items():
        assert params[key] == value
    for key, value in prop_extras.items():
        assert params["properties"]["p"][key] == value
    assert params["properties"]["p"]["description"] is None and params["properties"]["p"]["enum"] is None
