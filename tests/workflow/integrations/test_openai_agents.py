"""The OpenAI Agents integration (spec workflow-api §4.2) with the real openai-agents package, over real HTTP."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, ModelSettings, Runner
from agents.extensions.models.litellm_model import LitellmModel

from osmosis_compat.workflow import LocalBackend, RolloutContext
from osmosis_compat.workflow.integrations.openai_agents import (
    OsmosisAgent,
    OsmosisLitellmModel,
    OsmosisMemorySession,
    OsmosisRolloutModel,
    SessionSampleSource,
    current_sample_id,
)
from tests.workflow.conftest import prompt, rollout_server
from tests.workflow.integrations.flows import AgentsFlows, LabelInAnswerGrader


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Any]:
    backend = LocalBackend(workflow=AgentsFlows, grader=LabelInAnswerGrader)
    backend.artifact_root = tmp_path_factory.mktemp("osmosis")
    with rollout_server(backend) as served:
        yield served


async def run(controller, server, rollout_id: str, mode: str, text: str = "What is 2 + 3?", label: str = "5") -> Any:
    return await controller.run_rollout(
        server.url, rollout_id=rollout_id, initial_messages=prompt(text), label=label, metadata={"mode": mode}
    )


async def test_runner_round_trip(controller, server) -> None:
    record = await run(controller, server, "a-run", "run", "Compute (2 + 3) * 4", "20")

    assert record.rewards == {"calc": 1.0}
    assert len(record.chat_requests) == 3
    for chat in record.chat_requests:
        assert chat.headers["authorization"] == "Bearer ctrl-key"
        assert (chat.rollout_id, chat.sample_id) == ("a-run", "calc")
        assert chat.headers["user-agent"].startswith("Agents/Python")
        assert chat.body["model"] == "osmosis-rollout"
        assert chat.body["stream"] is True  # get_response is served from the stream, as upstream
        assert (chat.body["temperature"], chat.body["max_tokens"]) == (0.5, 256)
        assert all(t["function"]["strict"] is True for t in chat.body["tools"])
        # instructions first, then ctx.prompt with plain string content
        assert chat.body["messages"][:3] == [{"content": "Use the tools.", "role": "system"}, *prompt("Compute (2 + 3) * 4")]
    items = record.grader["samples"]["calc"]["messages"]
    assert [i.get("type") for i in items] == [
        None, None, "function_call", "function_call_output", "function_call", "function_call_output", "message"
    ]
    assert [json.loads(i["arguments"]) for i in items if i.get("type") == "function_call"] == [
        {"a": 2, "b": 3}, {"a": 5, "b": 4}
    ]


async def test_streamed_run(controller, server) -> None:
    record = await run(controller, server, "a-streamed", "streamed")

    assert record.rewards == {"calc": 1.0}
    assert len(record.chat_requests) == 2
    assert all(c.body["stream"] is True and c.sample_id == "calc" for c in record.chat_requests)


async def test_several_sessions_are_several_samples(controller, server) -> None:
    record = await run(controller, server, "a-two", "two_sessions")

    assert record.rewards == {"planner": 1.0, "executor": 1.0}
    assert record.sample_ids == ["planner", "executor"]
    assert [c.sample_id for c in record.chat_requests] == ["planner", "planner", "executor", "executor"]


async def test_two_turns_on_one_session(controller, server) -> None:
    record = await run(controller, server, "a-turns", "two_turns", label="2")

    assert record.rewards == {"calc": 1.0}
    items = record.grader["samples"]["calc"]["messages"]
    assert items[-1]["content"][0]["text"] == "The answer is 2."
    last_call = record.chat_requests[-1].body["messages"]
    assert {"role": "assistant", "content": "The answer is 5."} in last_call  # history replayed as chat messages


async def test_duplicate_session_name_fails_the_rollout(controller, server) -> None:
    record = await run(controller, server, "a-dup", "duplicate")

    assert record.completion["status"] == "failure"
    assert record.completion["err_category"] == "validation_error"
    assert "already exists" in record.completion["err_message"]


async def test_run_without_session_is_a_clear_failure(controller, server) -> None:
    record = await run(controller, server, "a-nosession", "no_session")

    assert record.completion["status"] == "failure"
    assert "OsmosisMemorySession" in record.completion["err_message"]
    assert record.chat_requests == []


async def test_anonymous_session_gets_a_uuid_sample_id(controller, server) -> None:
    record = await run(controller, server, "a-anon", "anonymous_session")

    [sample_id] = record.rewards
    assert re.fullmatch(r"[0-9a-f]{32}", sample_id)
    assert record.sample_ids == [sample_id]


def test_osmosis_agent_outside_a_rollout_is_a_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="RolloutContext"):
        OsmosisAgent(name="x", model=OsmosisRolloutModel())


def test_osmosis_agent_binds_the_placeholder_and_leaves_other_models() -> None:
    with RolloutContext(chat_completions_url="http://127.0.0.1:1/v1", api_key="k", rollout_id="r"):
        agent = OsmosisAgent(name="x", model=OsmosisRolloutModel(), model_settings=ModelSettings(temperature=1.0))
    model = agent.model
    assert isinstance(model, OsmosisLitellmModel) and isinstance(model, LitellmModel)
    assert (model.model, model.base_url, model.api_key, model.rollout_id) == (
        "openai/osmosis-rollout", "http://127.0.0.1:1/v1", "k", "r"
    )
    plain = OsmosisAgent(name="y", model="some-model")
    assert type(plain.model) is str
    assert isinstance(agent, Agent) and isinstance(agent.clone(name="z"), OsmosisAgent)


def test_merge_headers_needs_a_session_sample_id() -> None:
    with RolloutContext(chat_completions_url="http://127.0.0.1:1/v1", api_key="k", rollout_id="r"):
        model = OsmosisLitellmModel()
    with pytest.raises(RuntimeError, match="OsmosisMemorySession"):
        model._merge_headers(ModelSettings())
    token = current_sample_id.set("s1")
    try:
        headers = model._merge_headers(ModelSettings(extra_headers={"x-extra": "1"}))
    finally:
        current_sample_id.reset(token)
    assert headers["x-sample-id"] == "s1" and headers["x-rollout-id"] == "r" and headers["x-extra"] == "1"
    assert headers["User-Agent"].startswith("Agents/Python")


async def test_placeholder_cannot_be_called() -> None:
    placeholder = OsmosisRolloutModel()
    assert isinstance(placeholder, LitellmModel) and placeholder.litellm_kwargs == {}
    with pytest.raises(NotImplementedError, match="placeholder"):
        await placeholder.get_response(None, "hi", ModelSettings(), [], None, [], None)
    with pytest.raises(NotImplementedError, match="placeholder"):
        async for _ in placeholder.stream_response(None, "hi", ModelSettings(), [], None, [], None):
            pass


async def test_session_registration_and_guard() -> None:
    outside = OsmosisMemorySession(name="free")  # no rollout: a plain in-memory session
    await outside.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert await outside.get_items(limit=1) == [{"role": "user", "content": "b"}]
    assert await outside.pop_item() == {"role": "user", "content": "b"}
    await outside.clear_session()
    assert await outside.get_items() == [] and await outside.pop_item() is None

    with RolloutContext(rollout_id="r1") as first:
        session = OsmosisMemorySession(name="main")
        assert session.session_id == "main"
        assert isinstance(first.sample_sources["main"], SessionSampleSource)
        await session.add_items([{"role": "user", "content": "hi"}])
        assert current_sample_id.get() == "main"
    with RolloutContext(rollout_id="r2"):
        with pytest.raises(RuntimeError, match="not registered with the active rollout"):
            await session.get_items()
        with pytest.raises(RuntimeError, match="not registered"):
            await outside.add_items([])


async def test_session_sample_and_trajectory(caplog) -> None:
    with RolloutContext(rollout_id="r") as ctx:
        session = OsmosisMemorySession(name="main")
        await session.add_items([{"role": "user", "content": "hi"}])
        [sample] = (await ctx.get_samples()).values()
        assert sample.id == "main" and sample.messages == [{"role": "user", "content": "hi"}]
        assert sample.trajectory_messages == [{"role": "user", "content": "hi"}]
        await session.add_items([{"type": "no-such-item"}])
        with caplog.at_level(logging.WARNING):
            sample = await SessionSampleSource(session).get_sample("main")
    assert sample.trajectory_messages is None
    assert "Failed to convert OpenAI Agents" in caplog.text


async def test_null_controller_key_sends_no_authorization(controller) -> None:
    with RolloutContext(chat_completions_url=controller.chat_completions_url, api_key=None, rollout_id="a-nokey"):
        agent = OsmosisAgent(name="calc", model=OsmosisRolloutModel())
        with pytest.raises(Exception):
            await Runner.run(agent, "What is 2 + 3?", session=OsmosisMemorySession(name="calc"))
    [chat] = controller.chat_requests("a-nokey")
    assert chat.status_code == 401 and "authorization" not in chat.headers


def test_tracing_rule(monkeypatch) -> None:
    """Tracing is switched off unless the user decided: env var set, set_tracing_disabled() called, or custom
    trace processors installed."""
    from agents.tracing import setup
    from agents.tracing.processor_interface import TracingProcessor
    from agents.tracing.provider import DefaultTraceProvider

    from osmosis_compat.workflow.integrations.openai_agents import _disable_tracing_unless_configured

    def fresh() -> DefaultTraceProvider:
        provider = DefaultTraceProvider()
        monkeypatch.setattr(setup, "GLOBAL_TRACE_PROVIDER", provider)
        return provider

    def disabled(provider: DefaultTraceProvider) -> bool:
        provider._refresh_disabled_flag()
        return provider._disabled

    monkeypatch.delenv("OPENAI_AGENTS_DISABLE_TRACING", raising=False)
    monkeypatch.setattr(setup, "GLOBAL_TRACE_PROVIDER", None)
    _disable_tracing_unless_configured()
    assert disabled(setup.GLOBAL_TRACE_PROVIDER) is True  # nobody configured tracing: off

    provider = fresh()
    provider.set_disabled(False)  # the user turned it on explicitly
    _disable_tracing_unless_configured()
    assert disabled(provider) is False

    class Mine(TracingProcessor):
        def on_trace_start(self, trace): ...
        def on_trace_end(self, trace): ...
        def on_span_start(self, span): ...
        def on_span_end(self, span): ...
        def shutdown(self): ...
        def force_flush(self): ...

    provider = fresh()
    provider.set_processors([Mine()])  # the user sends traces somewhere of their own
    _disable_tracing_unless_configured()
    assert disabled(provider) is False

    provider = fresh()
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "0")  # the user's env decides
    _disable_tracing_unless_configured()
    assert disabled(provider) is False
