"""What the pooled-client path sends equals what upstream's litellm path sends; litellm-only options still work.

These tests import the real litellm (seconds): the comparison needs upstream's path as the reference.
"""

from __future__ import annotations


import pytest

from osmosis_compat.testing import FakeWorkflowController
from osmosis_compat.workflow import RolloutContext
from osmosis_compat.workflow.integrations.strands import OsmosisRolloutModel, OsmosisStrandsAgent
from tests.workflow.conftest import prompt
from tests.workflow.integrations.flows import add, multiply

# Headers that identify the call; transport details (x-stainless-*, content-length, host) are the client's own.
IDENTITY = ("authorization", "content-type", "user-agent", "x-rollout-id", "x-sample-id")


async def _run(controller: FakeWorkflowController, rollout_id: str, model_factory) -> list:
    with RolloutContext(
        chat_completions_url=controller.chat_completions_url, api_key="ctrl-key", rollout_id=rollout_id
    ) as ctx:
        agent = OsmosisStrandsAgent(
            name="calc", model=model_factory(ctx), tools=[add, multiply], messages=prompt("Compute (2 + 3) * 4"),
            callback_handler=None, retry_strategy=None,
        )
        result = await agent.invoke_async()
    assert "20" in str(result)
    return controller.chat_requests(rollout_id)


@pytest.mark.parametrize("stream", [True, False])
async def test_strands_requests_equal_upstreams_litellm_requests(controller, stream: bool) -> None:
    from strands.models.litellm import LiteLLMModel

    params = {"temperature": 0.7, "max_tokens": 128, "top_p": 0.9}

    def upstream(ctx: RolloutContext) -> LiteLLMModel:
        # What upstream's OsmosisRolloutModel.for_sample built: a plain LiteLLMModel (litellm.acompletion per call).
        return LiteLLMModel(
            client_args={"api_base": ctx.chat_completions_url, "api_key": ctx.api_key,
                         "extra_headers": {"x-sample-id": "calc", "x-rollout-id": ctx.rollout_id}},
            model_id="openai/osmosis-rollout", params=params, stream=stream,
        )

    theirs = await _run(controller, f"litellm-{stream}", upstream)
    ours = await _run(controller, f"pooled-{stream}", lambda ctx: OsmosisRolloutModel(params=params, stream=stream))

    assert len(ours) == len(theirs) == 3
    for mine, reference in zip(ours, theirs):
        assert mine.body == reference.body
        assert list(mine.body) == list(reference.body)  # same key order on the wire, too
        assert {h: mine.headers.get(h) for h in IDENTITY if h not in ("x-rollout-id",)} == {
            h: reference.headers.get(h) for h in IDENTITY if h not in ("x-rollout-id",)
        }
        assert mine.headers.get("x-stainless-read-timeout") == reference.headers.get("x-stainless-read-timeout")


async def test_litellm_only_options_take_the_litellm_path(controller) -> None:
    def bound_with_litellm_option(ctx: RolloutContext):
        model = OsmosisRolloutModel(params={"temperature": 0.7}).for_sample("calc", ctx)
        model.client_args["num_retries"] = 0  # a litellm option the pooled client does not know
        return model

    requests = await _run(controller, "litellm-option", bound_with_litellm_option)

    assert len(requests) == 3
    for chat in requests:
        assert chat.headers["x-stainless-raw-response"] == "true"  # litellm's raw-response call made it
        assert (chat.rollout_id, chat.sample_id) == ("litellm-option", "calc")
        assert chat.headers["authorization"] == "Bearer ctrl-key"
        assert chat.body["model"] == "osmosis-rollout"


async def test_agents_extra_args_take_the_litellm_path_with_identity_headers(controller) -> None:
    from agents import ModelSettings, Runner

    from osmosis_compat.workflow.integrations.openai_agents import (
        OsmosisAgent,
        OsmosisMemorySession,
        OsmosisRolloutModel,
    )
    from tests.workflow.integrations.flows import oa_add

    with RolloutContext(
        chat_completions_url=controller.chat_completions_url, api_key="ctrl-key", rollout_id="agents-litellm"
    ):
        agent = OsmosisAgent(
            name="calc", model=OsmosisRolloutModel(), tools=[oa_add],
            model_settings=ModelSettings(temperature=0.3, extra_args={"num_retries": 0}),
        )
        result = await Runner.run(agent, "What is 2 + 3?", session=OsmosisMemorySession(name="calc"))

    assert result.final_output == "The answer is 5."
    requests = controller.chat_requests("agents-litellm")
    assert len(requests) == 2
    for chat in requests:
        assert chat.headers["x-stainless-raw-response"] == "true"  # went through litellm.acompletion
        assert chat.sample_id == "calc" and chat.headers["authorization"] == "Bearer ctrl-key"
        assert chat.body["model"] == "osmosis-rollout" and chat.body["stream"] is True
        assert chat.body["temperature"] == 0.3


def test_module_importing_litellm_after_litellm_is_loaded(tmp_path, monkeypatch) -> None:
    import litellm

    from osmosis_compat.workflow.integrations._deferred_litellm import import_deferring_litellm

    (tmp_path / "uses_litellm_late.py").write_text(
        "import litellm\n"
        "from litellm.exceptions import ContextWindowExceededError\n"
        "from litellm.utils import supports_response_schema\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = import_deferring_litellm("uses_litellm_late")

    assert module.litellm is litellm  # litellm already loaded: a plain import, nothing deferred
    assert module.ContextWindowExceededError is litellm.exceptions.ContextWindowExceededError
    assert module.supports_response_schema is litellm.utils.supports_response_schema
    assert litellm.suppress_debug_info is True


async def test_agents_requests_equal_upstreams_litellm_requests(controller) -> None:
    from agents import Agent, ModelSettings, Runner
    from agents.extensions.models.litellm_model import LitellmModel
    from agents.items import ModelResponse
    from agents.usage import Usage

    from osmosis_compat.workflow.integrations.openai_agents import (
        OsmosisAgent,
        OsmosisMemorySession,
        OsmosisRolloutModel,
    )
    from tests.workflow.integrations.flows import oa_add, oa_multiply

    class Upstream(LitellmModel):
        """Upstream's OsmosisLitellmModel: litellm per call, get_response aggregated from the stream."""

        async def get_response(self, *args, **kwargs):
            final = None
            async for event in self.stream_response(*args, **kwargs):
                if event.type == "response.completed":
                    final = event.response
            return ModelResponse(output=final.output, usage=Usage(requests=1), response_id=None)

    settings = {"temperature": 0.7, "max_tokens": 128}
    question = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "Compute (2 + 3) * 4"}]
    with RolloutContext(chat_completions_url=controller.chat_completions_url, api_key="ctrl-key", rollout_id="up"):
        reference = Agent(
            name="calc", instructions="Use the tools.", tools=[oa_add, oa_multiply],
            model=Upstream(model="openai/osmosis-rollout", base_url=controller.chat_completions_url, api_key="ctrl-key"),
            model_settings=ModelSettings(**settings, extra_headers={"x-sample-id": "calc", "x-rollout-id": "up"}),
        )
        upstream_session = OsmosisMemorySession(name="calc")
        await Runner.run(reference, question, session=upstream_session)
    with RolloutContext(chat_completions_url=controller.chat_completions_url, api_key="ctrl-key", rollout_id="ours"):
        agent = OsmosisAgent(
            name="calc", instructions="Use the tools.", tools=[oa_add, oa_multiply], model=OsmosisRolloutModel(),
            model_settings=ModelSettings(**settings),
        )
        session = OsmosisMemorySession(name="calc")
        await Runner.run(agent, question, session=session)

    theirs, ours = controller.chat_requests("up"), controller.chat_requests("ours")
    assert len(ours) == len(theirs) == 3
    for mine, ref in zip(ours, theirs):
        assert mine.body == ref.body and list(mine.body) == list(ref.body)
        for header in ("authorization", "content-type", "user-agent", "x-sample-id"):
            assert mine.headers.get(header) == ref.headers.get(header)

    def strip_ids(items):
        return [{k: v for k, v in i.items() if k != "provider_data"} | (
            {"provider_model": i["provider_data"]["model"]} if "provider_data" in i else {}) for i in items]

    # the recorded sample (what graders see) is the same, provider_data.model included
    assert strip_ids(session.items) == strip_ids(upstream_session.items)


async def test_transport_switch_sends_every_call_through_litellm(controller, monkeypatch) -> None:
    from agents import Runner

    from osmosis_compat.workflow.integrations.openai_agents import (
        OsmosisAgent,
        OsmosisMemorySession,
    )
    from osmosis_compat.workflow.integrations.openai_agents import OsmosisRolloutModel as AgentsPlaceholder
    from tests.workflow.integrations.flows import oa_add

    monkeypatch.setenv("OSMOSIS_COMPAT_MODEL_TRANSPORT", "litellm")
    strands_requests = await _run(controller, "switch-strands", lambda ctx: OsmosisRolloutModel())
    with RolloutContext(
        chat_completions_url=controller.chat_completions_url, api_key="ctrl-key", rollout_id="switch-agents"
    ):
        agent = OsmosisAgent(name="calc", model=AgentsPlaceholder(), tools=[oa_add])
        await Runner.run(agent, "What is 2 + 3?", session=OsmosisMemorySession(name="calc"))

    for chat in [*strands_requests, *controller.chat_requests("switch-agents")]:
        assert chat.headers["x-stainless-raw-response"] == "true"  # litellm made the call
        assert chat.sample_id == "calc" and chat.headers["authorization"] == "Bearer ctrl-key"


@pytest.mark.parametrize(
    "params",
    [
        {"stop": ["\n\n"], "seed": 7, "presence_penalty": 0.1, "frequency_penalty": 0.2,
         "parallel_tool_calls": False, "max_completion_tokens": 64},
        {"temperature": 0.0, "logprobs": True, "top_logprobs": 2, "n": 1},
    ],
)
async def test_common_openai_params_reach_the_wire_as_litellm_sent_them(controller, params) -> None:
    from strands.models.litellm import LiteLLMModel

    tag = "-".join(sorted(params))[:40]

    def upstream(ctx: RolloutContext) -> LiteLLMModel:
        return LiteLLMModel(
            client_args={"api_base": ctx.chat_completions_url, "api_key": ctx.api_key,
                         "extra_headers": {"x-sample-id": "calc", "x-rollout-id": ctx.rollout_id}},
            model_id="openai/osmosis-rollout", params=params,
        )

    theirs = await _run(controller, f"p-litellm-{tag}", upstream)
    ours = await _run(controller, f"p-pooled-{tag}", lambda ctx: OsmosisRolloutModel(params=params))
    assert [r.body for r in ours] == [r.body for r in theirs]
    assert "x-stainless-raw-response" not in ours[0].headers  # and ours did not go through litellm


@pytest.mark.parametrize(
    "settings, via_litellm",
    [
        ({"top_p": 0.9, "frequency_penalty": 0.1, "presence_penalty": 0.2, "tool_choice": "auto",
          "parallel_tool_calls": True}, False),
        ({"metadata": {"run": "x"}}, True),  # litellm keeps metadata for itself: only its path sends it as upstream
    ],
)
async def test_agents_settings_reach_the_wire_as_upstream_sent_them(controller, settings, via_litellm) -> None:
    from agents import Agent, ModelSettings, Runner
    from agents.extensions.models.litellm_model import LitellmModel

    from osmosis_compat.workflow.integrations.openai_agents import (
        OsmosisAgent,
        OsmosisMemorySession,
        OsmosisRolloutModel,
    )
    from tests.workflow.integrations.flows import oa_add

    tag = "-".join(sorted(settings))[:30]
    with RolloutContext(chat_completions_url=controller.chat_completions_url, api_key="ctrl-key", rollout_id=f"up-{tag}"):
        reference = Agent(
            name="calc", tools=[oa_add],
            model=LitellmModel(model="openai/osmosis-rollout", base_url=controller.chat_completions_url,
                               api_key="ctrl-key"),
            model_settings=ModelSettings(**settings, extra_headers={"x-sample-id": "calc", "x-rollout-id": f"up-{tag}"}),
        )
        await Runner.run(reference, "What is 2 + 3?", session=OsmosisMemorySession(name="calc"))
    with RolloutContext(chat_completions_url=controller.chat_completions_url, api_key="ctrl-key", rollout_id=f"our-{tag}"):
        agent = OsmosisAgent(name="calc", tools=[oa_add], model=OsmosisRolloutModel(),
                             model_settings=ModelSettings(**settings))
        await Runner.run(agent, "What is 2 + 3?", session=OsmosisMemorySession(name="calc"))

    theirs, ours = controller.chat_requests(f"up-{tag}"), controller.chat_requests(f"our-{tag}")
    assert len(ours) == len(theirs) == 2
    for mine, ref in zip(ours, theirs):
        # upstream's LitellmModel.get_response was non-streaming here; upstream's Osmosis model streamed
        assert {k: v for k, v in mine.body.items() if k != "stream"} == ref.body
        assert mine.body["stream"] is True
        assert ("x-stainless-raw-response" in mine.headers) is via_litellm
