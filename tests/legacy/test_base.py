"""RolloutAgentLoop name rule, RolloutContext helpers and RolloutResult (spec §2.2–2.4)."""

import dataclasses
import json
import time
from abc import abstractmethod

import pytest

from osmosis_compat.legacy.base import RolloutAgentLoop, RolloutContext, RolloutResult
from osmosis_compat.legacy.completions import CompletionsResult
from osmosis_compat.legacy.llm_client import LLMClientProtocol
from osmosis_compat.legacy.schemas import RolloutMetrics, RolloutRequest


class RecordingLLM:
    def __init__(self):
        self.calls = []

    async def chat_completions(self, messages, **kwargs):
        self.calls.append((messages, kwargs))
        return CompletionsResult(message={"role": "assistant", "content": "hi"}, token_ids=[], logprobs=[],
                                 usage={}, finish_reason="stop")

    def get_metrics(self):
        return RolloutMetrics(llm_latency_ms=12.5, num_llm_calls=2, prompt_tokens=30, response_tokens=7,
                              total_latency_ms=999.0, max_context_tokens=55)


def make_request(rollout_id="r-1"):
    return RolloutRequest(rollout_id=rollout_id, server_url="http://tg", messages=[], completion_params={})


def make_ctx(**kwargs):
    return RolloutContext(request=make_request(kwargs.pop("rollout_id", "r-1")), tools=[], llm=RecordingLLM(),
                          **kwargs)


# --- name rule -------------------------------------------------------------------------------------------------


def test_subclass_without_name_fails_with_upstream_text():
    with pytest.raises(TypeError) as info:
        class NoName(RolloutAgentLoop):
            def get_tools(self, request):
                return []

            async def run(self, ctx):
                return ctx.complete([])

    assert str(info.value) == "Agent loop class NoName must define a 'name' class attribute"


def test_intermediate_abstract_base_also_needs_a_name():
    with pytest.raises(TypeError, match="Agent loop class Base must define a 'name' class attribute"):
        class Base(RolloutAgentLoop):
            @abstractmethod
            def extra(self): ...


def test_empty_name_rejected_and_non_string_truthy_accepted():
    with pytest.raises(TypeError):
        class Empty(RolloutAgentLoop):
            name = ""

            def get_tools(self, request):
                return []

            async def run(self, ctx):
                return ctx.complete([])

    class Numbered(RolloutAgentLoop):
        name = 123

        def get_tools(self, request):
            return []

        async def run(self, ctx):
            return ctx.complete([])

    assert Numbered().name == 123


def test_name_set_only_in_init_is_not_enough_but_inherited_name_is():
    with pytest.raises(TypeError):
        class InitOnly(RolloutAgentLoop):
            def __init__(self):
                self.name = "x"

            def get_tools(self, request):
                return []

            async def run(self, ctx):
                return ctx.complete([])

    class Parent(RolloutAgentLoop):
        name = "parent"

        def get_tools(self, request):
            return []

        async def run(self, ctx):
            return ctx.complete([])

    class Child(Parent):
        def __init__(self):
            self.name = "child-instance"

    assert Child().name == "child-instance"


def test_missing_abstract_method_is_standard_abc_error():
    class OnlyTools(RolloutAgentLoop):
        name = "only-tools"

        def get_tools(self, request):
            return []

    with pytest.raises(TypeError, match="abstract.*run"):
        OnlyTools()


def test_get_default_tools_uses_discovery_request():
    seen = []

    class Loop(RolloutAgentLoop):
        name = "loop"

        def get_tools(self, request):
            seen.append(request)
            return ["tool"]

        async def run(self, ctx):
            return ctx.complete([])

    assert Loop().get_default_tools() == ["tool"]
    [request] = seen
    assert (request.rollout_id, request.server_url, request.messages, request.completion_params) == (
        "discovery", "http://localhost", [], {})
    assert (request.max_turns, request.max_tokens_total, request.metadata) == (10, 8192, {})


# --- RolloutContext ------------------------------------------------------------------------------------------


def test_context_fields_in_order_with_private_defaults():
    names = [f.name for f in dataclasses.fields(RolloutContext)]
    assert names == ["request", "tools", "llm", "_start_time", "_tool_latency_ms", "_num_tool_calls", "_debug_dir"]
    ctx = make_ctx()
    assert (ctx._start_time, ctx._tool_latency_ms, ctx._num_tool_calls, ctx._debug_dir) == (0.0, 0.0, 0, None)
    assert "_start_time" not in repr(ctx) and "request=" in repr(ctx)
    assert not hasattr(ctx, "metadata")


def test_recording_llm_satisfies_protocol():
    assert isinstance(RecordingLLM(), LLMClientProtocol)
    assert not isinstance(object(), LLMClientProtocol)


async def test_chat_passes_through_messages_and_kwargs():
    ctx = make_ctx()
    messages = [{"role": "user", "content": "x"}]
    result = await ctx.chat(messages, temperature=0.2, tools=["t"], seed=1)
    assert result.content == "hi"
    [(sent, kwargs)] = ctx.llm.calls
    assert sent is messages
    assert kwargs == {"temperature": 0.2, "tools": ["t"], "seed": 1}


def test_complete_builds_metrics_from_llm_and_context():
    ctx = make_ctx()
    ctx.record_tool_call()
    ctx.record_tool_call(latency_ms=4.5)
    result = ctx.complete([{"role": "assistant"}], reward=0.5)
    assert result.status == "COMPLETED" and result.finish_reason == "stop" and result.reward == 0.5
    assert result.error_message is None
    assert result.metrics == RolloutMetrics(
        total_latency_ms=0.0, llm_latency_ms=12.5, tool_latency_ms=4.5, num_llm_calls=2, num_tool_calls=2,
        prompt_tokens=30, response_tokens=7, max_context_tokens=0,
    )
    assert ctx.complete([], finish_reason="max_turns", reward="not checked").reward == "not checked"


def test_total_latency_from_start_time():
    ctx = make_ctx(_start_time=time.monotonic() - 0.05)
    latency = ctx.complete([]).metrics.total_latency_ms
    assert 40 <= latency < 5000


def test_error_result():
    ctx = make_ctx()
    result = ctx.error("boom")
    assert (result.status, result.final_messages, result.finish_reason, result.error_message, result.reward) == (
        "ERROR", [], "error", "boom", None)
    assert result.metrics.num_llm_calls == 2
    assert ctx.error("x", [{"role": "user"}]).final_messages == [{"role": "user"}]


def test_log_event_is_noop_without_debug_dir(tmp_path):
    ctx = make_ctx()
    assert ctx.debug_enabled is False
    assert ctx._get_debug_file_path() is None
    ctx.log_event("turn", n=1)
    assert list(tmp_path.iterdir()) == []


def test_log_event_writes_jsonl(tmp_path):
    debug_dir = tmp_path / "debug" / "nested"
    ctx = make_ctx(_debug_dir=str(debug_dir))
    assert ctx.debug_enabled is True
    ctx.log_event("llm_call", turn=1, obj=object)
    ctx.log_event("done", event="overridden", rollout_id="other")
    path = debug_dir / "r-1.jsonl"
    assert ctx._get_debug_file_path() == str(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"event": "llm_call", "rollout_id": "r-1", "turn": 1, "obj": str(object)}
    assert lines[1] == {"event": "overridden", "rollout_id": "other"}


def test_log_event_swallows_os_errors(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    ctx = make_ctx(_debug_dir=str(blocker / "sub"))
    ctx.log_event("x")
    assert "Failed to write debug event" in caplog.text


def test_debug_file_stays_inside_debug_dir(tmp_path):
    ctx = make_ctx(rollout_id="../../escape", _debug_dir=str(tmp_path))
    ctx.log_event("x")
    assert [p.name for p in tmp_path.iterdir()] == [".._.._escape.jsonl"]


# --- RolloutResult ----------------------------------------------------------------------------------------------


def test_rollout_result_fields_and_defaults():
    assert [f.name for f in dataclasses.fields(RolloutResult)] == [
        "status", "final_messages", "finish_reason", "error_message", "metrics", "reward"]
    result = RolloutResult("COMPLETED", [], "stop")
    assert (result.error_message, result.metrics, result.reward) == (None, None, None)
    assert RolloutResult(status="completed", final_messages=[], finish_reason="x").status == "completed"
