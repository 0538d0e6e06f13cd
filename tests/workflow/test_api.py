"""The Python API without HTTP (spec workflow-api §2, §6): configs, contexts, samples, LocalBackend, utilities."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pydantic
import pytest

from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    ConcurrencyConfig,
    ControllerAuth,
    ExecutionRequest,
    ExecutionResult,
    Grader,
    GraderConfig,
    GraderContext,
    LocalBackend,
    RolloutContext,
    RolloutErrorCategory,
    RolloutSample,
    RolloutStatus,
    SampleSource,
    get_rollout_context,
    rollout_contextvar,
)
from osmosis_compat.workflow.backend.local import categorize_exception
from osmosis_compat.workflow.types import GraderStatus, MultiTurnMode
from osmosis_compat.workflow.utils.identifiers import ensure_single_path_segment, is_single_path_segment
from osmosis_compat.workflow.utils.imports import resolve_object, to_import_path
from osmosis_compat.workflow.utils.messages import map_initial_messages_to_content_blocks
from osmosis_compat.workflow.utils.rewards import validate_samples_have_rewards
from tests.workflow.workflows import EchoWorkflow, LabelGrader, echo_config

# -- configs -------------------------------------------------------------------------------------------------------


def test_config_name_required_extra_allowed_assignment_validated() -> None:
    with pytest.raises(pydantic.ValidationError):
        AgentWorkflowConfig()  # type: ignore[call-arg]
    config = AgentWorkflowConfig(name="w", temperature=0.7, tools=[object()])
    assert config.temperature == 0.7
    assert config.model_dump()["temperature"] == 0.7
    assert config.concurrency.max_concurrent is None
    assert config.description is None
    with pytest.raises(pydantic.ValidationError):
        config.name = 3  # type: ignore[assignment]
    assert GraderConfig(name="g").concurrency == ConcurrencyConfig()


@pytest.mark.parametrize("value", [0, -1])
def test_concurrency_must_be_positive(value: int) -> None:
    with pytest.raises(pydantic.ValidationError):
        ConcurrencyConfig(max_concurrent=value)


def test_subclassed_config_with_defaults_and_generic_workflow() -> None:
    class SearchConfig(AgentWorkflowConfig):
        name: str = "search"
        max_iterations: int = 8
        concurrency: ConcurrencyConfig = ConcurrencyConfig(max_concurrent=4)

    class Search(AgentWorkflow[SearchConfig]):
        async def run(self, ctx: AgentWorkflowContext[SearchConfig]) -> None:
            return None

    workflow = Search(SearchConfig())
    assert workflow.config is not None and workflow.config.max_iterations == 8
    assert Search().config is None
    with pytest.raises(TypeError):
        AgentWorkflow()  # type: ignore[abstract]


def test_enums_are_strings() -> None:
    assert RolloutStatus.SUCCESS == "success" and str(RolloutStatus.FAILURE) == "failure"
    # 0.3.8 order; lease_expired and internal_error are 0.3.8 additions
    assert [c.value for c in RolloutErrorCategory] == [
        "timeout", "lease_expired", "validation_error", "http_error", "agent_error", "internal_error"
    ]
    assert [s.value for s in GraderStatus] == ["pending", "success", "failure"]
    assert MultiTurnMode.SINGLE_SAMPLE == "single_sample"


# -- samples and requests ------------------------------------------------------------------------------------------


def test_rollout_sample_defaults_and_trajectory_copy() -> None:
    messages = [{"role": "user", "content": "hi"}]
    sample = RolloutSample(id="s", messages=messages)
    assert sample.trajectory_messages == messages
    assert sample.trajectory_messages is not sample.messages
    assert (sample.label, sample.reward, sample.remove_sample, sample.metrics, sample.extra_fields) == (
        None,
        None,
        False,
        {},
        {},
    )
    assert RolloutSample(id="s", messages=messages, trajectory_messages=None).trajectory_messages is None
    # 0.3 removed the id: a sample without one is valid and takes its registration name when collected
    assert RolloutSample().id is None
    with pytest.raises(pydantic.ValidationError):
        RolloutSample(id=3.5)  # type: ignore[arg-type]
    sample.reward = True  # no assignment validation: stored as given
    assert sample.reward is True


def test_execution_request_validates_id_as_rollout_id() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        ExecutionRequest(id="../x", prompt=[])
    assert "rollout_id must be a single path segment" in str(info.value)
    request = ExecutionRequest(id="r", prompt=[{"role": "user", "content": "q"}])
    assert (request.label, request.metadata, request.agent_timeout_sec, request.grader_timeout_sec) == (None,) * 4
    assert ExecutionResult(status="failure").samples == {}


@pytest.mark.parametrize(
    ("name", "ok"),
    [("abc", True), ("a.b", True), ("", False), (".", False), ("..", False), ("a/b", False), ("a\\b", False), ("a\x00", False)],
)
def test_single_path_segment(name: str, ok: bool) -> None:
    assert is_single_path_segment(name) is ok
    if not ok:
        with pytest.raises(ValueError, match="id must be a single path segment"):
            ensure_single_path_segment(name)


# -- contexts ------------------------------------------------------------------------------------------------------


class NamedSource(SampleSource):
    async def get_sample(self, name: str) -> RolloutSample:
        return RolloutSample(id=name, messages=[{"role": "assistant", "content": name}])


class UnnamedSource(SampleSource):
    async def get_sample(self) -> RolloutSample:  # type: ignore[override]
        return RolloutSample(id="unnamed", messages=[])


def test_rollout_context_env_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_CHAT_COMPLETIONS_URL", "http://env/v1")
    monkeypatch.setenv("OSMOSIS_API_KEY", "env-key")
    monkeypatch.setenv("OSMOSIS_ROLLOUT_ID", "env-id")
    ctx = RolloutContext()
    assert (ctx.chat_completions_url, ctx.api_key, ctx.rollout_id) == ("http://env/v1", "env-key", "env-id")
    explicit = RolloutContext(chat_completions_url="http://x", api_key="k", rollout_id="r")
    assert (explicit.chat_completions_url, explicit.api_key, explicit.rollout_id) == ("http://x", "k", "r")
    monkeypatch.delenv("OSMOSIS_API_KEY")
    assert RolloutContext().api_key is None


async def test_context_manager_and_sample_collection_in_order() -> None:
    assert get_rollout_context() is None
    with RolloutContext(rollout_id="r") as ctx:
        assert get_rollout_context() is ctx
        ctx.register_sample_source("b", NamedSource())
        ctx.register_sample_source("a", NamedSource())
        with pytest.raises(ValueError, match="already exists"):
            ctx.register_sample_source("a", NamedSource())
    assert get_rollout_context() is None  # exit sets None (upstream), it does not restore
    samples = await ctx.get_samples()
    assert list(samples) == ["b", "a"] and samples["a"].id == "a"


def test_contextvar_token_reset_restores_outer() -> None:
    outer = RolloutContext(rollout_id="outer")
    token = rollout_contextvar.set(outer)
    inner = rollout_contextvar.set(RolloutContext(rollout_id="inner"))
    rollout_contextvar.reset(inner)
    assert get_rollout_context() is outer
    rollout_contextvar.reset(token)


async def test_03_aliases_on_rollout_context() -> None:
    ctx = RolloutContext(rollout_id="r03")
    assert await ctx.get_sample() is None and ctx.sample_source is None
    ctx.set_sample_source(UnnamedSource())
    with pytest.raises(ValueError, match="one per rollout"):
        ctx.set_sample_source(UnnamedSource())
    assert list(await ctx.get_samples()) == ["r03"]
    sample = await ctx.get_sample()
    assert sample is not None and sample.id == "unnamed"
    ctx.register_sample_source("second", NamedSource())
    with pytest.raises(ValueError, match="single-sample view"):
        await ctx.get_sample()


async def test_register_agent_wraps_messages() -> None:
    class Agent:
        messages: list[dict[str, Any]] = []

    agent = Agent()
    ctx = RolloutContext(rollout_id="r")
    ctx.register_agent("s", agent)
    agent.messages = [{"role": "assistant", "content": "late"}]  # read at collection time
    ctx.register_agent("s", agent)  # 0.2.18 overwrote silently
    assert ctx.registered_agents == {"s": agent}
    assert (await ctx.get_samples())["s"].messages == [{"role": "assistant", "content": "late"}]


async def test_source_returning_wrong_type_is_a_type_error() -> None:
    class Bad(SampleSource):
        async def get_sample(self, name: str) -> Any:
            return {"id": name}

    ctx = RolloutContext()
    ctx.register_sample_source("x", Bad())
    with pytest.raises(TypeError, match="expected a RolloutSample"):
        await ctx.get_samples()


def test_workflow_context_fields() -> None:
    ctx = AgentWorkflowContext([{"role": "user", "content": "q"}])
    assert (ctx.config, ctx.metadata, ctx.artifacts_dir) == (None, None, None)
    assert AgentWorkflowContext([], echo_config, {"k": 1}, Path("/tmp")).metadata == {"k": 1}


def test_grader_context_both_eras() -> None:
    samples = {"only": RolloutSample(id="only")}
    ctx = GraderContext(label="5", samples=samples)
    assert ctx.get_samples() is samples
    with pytest.raises(ValueError, match="^Sample nope not found$"):
        ctx.set_sample_reward("nope", 1.0)
    assert ctx.sample is samples["only"]
    ctx.set_reward(0.5)
    assert samples["only"].reward == 0.5
    assert GraderContext().sample is None
    with pytest.raises(ValueError, match="no sample"):
        GraderContext().set_reward(1.0)
    many = GraderContext(samples={"a": RolloutSample(id="a"), "b": RolloutSample(id="b")})
    with pytest.raises(ValueError, match="2 samples"):
        _ = many.sample
    with pytest.raises(ValueError, match="set_sample_reward"):
        many.set_reward(1.0)
    assert GraderContext(project_path="/p").workspace_path == "/p"


def test_controller_auth() -> None:
    assert ControllerAuth(api_key="k").as_bearer_headers() == {"Authorization": "Bearer k"}
    assert ControllerAuth(api_key="").as_bearer_headers() is None
    assert ControllerAuth().as_bearer_headers() is None
    assert repr(ControllerAuth(api_key="secret")) == "ControllerAuth(api_key=<redacted>)"
    assert repr(ControllerAuth()) == "ControllerAuth(api_key=None)"


# -- LocalBackend --------------------------------------------------------------------------------------------------


def test_local_backend_concurrency_rules() -> None:
    assert LocalBackend(workflow=EchoWorkflow).limiter.max_concurrent == 4
    assert LocalBackend(workflow=EchoWorkflow).max_concurrency == 4
    assert LocalBackend(workflow=EchoWorkflow, workflow_config=echo_config).max_concurrency == 0
    limited = AgentWorkflowConfig(name="x", concurrency=ConcurrencyConfig(max_concurrent=7))
    assert LocalBackend(workflow=EchoWorkflow, workflow_config=limited).max_concurrency == 7
    with pytest.raises(TypeError):
        LocalBackend(EchoWorkflow)  # type: ignore[misc]  # keyword-only
    with pytest.raises(TypeError, match="AgentWorkflow subclass"):
        LocalBackend(workflow=EchoWorkflow())  # type: ignore[arg-type]
    assert LocalBackend(workflow=EchoWorkflow, grader="", grader_config=None).grader_cls is None


@pytest.mark.parametrize(
    ("exc", "category"),
    [
        (TimeoutError(), "timeout"),
        (asyncio.TimeoutError(), "timeout"),
        (ValueError(), "validation_error"),
        (TypeError(), "validation_error"),
        (AssertionError(), "validation_error"),
        (KeyError(), "agent_error"),
        (RuntimeError(), "agent_error"),
    ],
)
def test_categorize_exception(exc: BaseException, category: str) -> None:
    assert categorize_exception(exc) == category


class ConfigEcho(AgentWorkflow[AgentWorkflowConfig]):
    seen: list[Any] = []

    async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
        ConfigEcho.seen.append((self.config, ctx.config, ctx.prompt, ctx.metadata, ctx.artifacts_dir))
        return [{"role": "assistant", "content": "from return"}]


async def test_local_backend_without_server(tmp_path: Path) -> None:
    config = AgentWorkflowConfig(name="cfg", knob=[1])
    backend = LocalBackend(workflow=ConfigEcho, workflow_config=config, grader=LabelGrader)
    backend.artifact_root = tmp_path
    reported: list[tuple[str, ExecutionResult]] = []

    async def on_workflow(result: ExecutionResult) -> None:
        reported.append(("workflow", result))

    async def on_grader(result: ExecutionResult) -> None:
        reported.append(("grader", result))

    request = ExecutionRequest(id="local", prompt=[{"role": "user", "content": "q"}], label="return")
    await backend.execute(request, on_workflow, on_grader)
    [(own_config, ctx_config, prompt, metadata, artifacts)] = ConfigEcho.seen
    assert own_config is ctx_config and ctx_config is not config and ctx_config == config  # a deep copy
    assert prompt == request.prompt and metadata is None
    assert artifacts == tmp_path / "local" / "artifacts" and artifacts.is_dir()
    assert [kind for kind, _ in reported] == ["workflow", "grader"]
    [(_, workflow_result), (_, graded)] = reported
    assert workflow_result.status == "success" and list(workflow_result.samples) == ["local"]
    assert graded.samples["local"].reward == 1.0
    assert backend.health() == {"status": "ok", "concurrency": {"max_concurrent": None, "queued": 0, "running": 0}}

    reported.clear()
    await backend.execute(request, on_workflow)  # no grader callback: no grading at all
    assert [kind for kind, _ in reported] == ["workflow"]


async def test_returned_list_is_ignored_when_a_source_is_registered(tmp_path: Path) -> None:
    class Both(AgentWorkflow[Any]):
        async def run(self, ctx: AgentWorkflowContext[Any]) -> Any:
            get_rollout_context().register_sample_source("src", NamedSource())  # type: ignore[union-attr]
            return [{"role": "assistant", "content": "ignored"}]

    backend = LocalBackend(workflow=Both)
    backend.artifact_root = tmp_path
    result = await backend.run_workflow(ExecutionRequest(id="both", prompt=[]))
    assert list(result.samples) == ["src"]


@pytest.mark.parametrize("returned", ["text", {"messages": []}, [], ["a"], None])
async def test_other_return_values_are_ignored(tmp_path: Path, returned: Any) -> None:
    class Returns(AgentWorkflow[Any]):
        async def run(self, ctx: AgentWorkflowContext[Any]) -> Any:
            return copy.deepcopy(returned)

    backend = LocalBackend(workflow=Returns)
    backend.artifact_root = tmp_path
    result = await backend.run_workflow(ExecutionRequest(id="ret", prompt=[]))
    assert (result.status, result.samples) == ("success", {})


async def test_no_timeout_means_no_limit(tmp_path: Path) -> None:
    backend = LocalBackend(workflow=ConfigEcho)
    backend.artifact_root = tmp_path
    result = await backend.run_workflow(ExecutionRequest(id="t", prompt=[], agent_timeout_sec=None))
    assert result.status == "success"


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_timeouts_are_rejected(timeout: float) -> None:
    """0.3.8: NaN/infinity are not deadlines (NaN crashed the event loop's selector upstream)."""
    with pytest.raises(pydantic.ValidationError, match="timeout must be finite"):
        ExecutionRequest(id="t", prompt=[], agent_timeout_sec=timeout)


async def test_sample_collection_failure_is_a_workflow_failure(tmp_path: Path) -> None:
    class Broken(SampleSource):
        async def get_sample(self, name: str) -> RolloutSample:
            raise RuntimeError("source broke")

    class UsesBroken(AgentWorkflow[Any]):
        async def run(self, ctx: AgentWorkflowContext[Any]) -> None:
            get_rollout_context().register_sample_source("b", Broken())  # type: ignore[union-attr]

    backend = LocalBackend(workflow=UsesBroken)
    backend.artifact_root = tmp_path
    result = await backend.run_workflow(ExecutionRequest(id="b", prompt=[]))
    assert (result.status, result.err_message, result.err_category) == ("failure", "source broke", "agent_error")


# -- utilities -----------------------------------------------------------------------------------------------------


def test_resolve_object_and_to_import_path() -> None:
    assert resolve_object("tests.workflow.workflows:EchoWorkflow") is EchoWorkflow
    assert resolve_object(EchoWorkflow) is EchoWorkflow
    with pytest.raises(ValueError, match="expected 'module:attr'"):
        resolve_object("tests.workflow.workflows.EchoWorkflow")
    with pytest.raises(ImportError):
        resolve_object("tests.workflow.workflows:Nope")
    with pytest.raises(ImportError):
        resolve_object("tests.workflow.no_such_module:X")
    assert to_import_path(EchoWorkflow) == "tests.workflow.workflows:EchoWorkflow"
    with pytest.raises(ValueError):
        to_import_path(object())


def test_map_initial_messages_to_content_blocks() -> None:
    blocks = [{"text": "already"}]
    assert map_initial_messages_to_content_blocks(
        [{"role": "system", "content": "s", "name": "dropped"}, {"role": "user", "content": blocks}]
    ) == [{"role": "system", "content": [{"text": "s"}]}, {"role": "user", "content": blocks}]


def test_validate_samples_have_rewards() -> None:
    with pytest.raises(ValueError, match="^No samples after grading$"):
        validate_samples_have_rewards({})
    with pytest.raises(ValueError, match="^Sample b has no reward after grading$"):
        validate_samples_have_rewards({"a": RolloutSample(id="a", reward=1), "b": RolloutSample(id="b", remove_sample=True)})
    validate_samples_have_rewards({"a": RolloutSample(id="a", reward=0.0)})


def test_grader_base() -> None:
    class G(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            return None

    assert G().config is None
    config = GraderConfig(name="g")
    assert G(config).config is config


async def test_upstream_http_helper_retries_like_the_callbacks(controller: Any) -> None:
    import httpx

    from osmosis_compat.workflow.utils.http import close_shared_client, get_shared_client, post_json_with_retry

    url = controller.completion_callback_url("http")
    headers = {"Authorization": "Bearer ctrl-key"}
    controller.completion_script = [503, 429]
    response = await post_json_with_retry(url=url, payload={"x": 1}, headers=headers, base_delay_seconds=0.001)
    assert response.status_code == 200 and len(controller.completion_callbacks("http")) == 3
    controller.completion_script = [401]
    with pytest.raises(Exception):
        await post_json_with_retry(url=url, payload={"x": 1}, headers=headers, base_delay_seconds=0.001)
    assert len(controller.completion_callbacks("http")) == 4  # not retried
    assert isinstance(get_shared_client(), httpx.AsyncClient)
    await close_shared_client()


def test_driver_contract_via_shim() -> None:
    from osmosis_ai.rollout.driver import RolloutDriver, RolloutOutcome

    class D(RolloutDriver):
        async def run(self, messages: Any, label: Any = None, rollout_id: str = "") -> RolloutOutcome:
            return RolloutOutcome(status="success", rollout_id=rollout_id)

    assert D().max_concurrency == 0
    assert asyncio.run(D().run([], rollout_id="x")).rollout_id == "x"


@pytest.mark.parametrize("timeout", [None, 30.0])
async def test_grader_sees_no_rollout_context_with_or_without_a_timeout(tmp_path: Path, timeout: float | None) -> None:
    seen: list[Any] = []

    class Peek(Grader):
        async def grade(self, ctx: GraderContext) -> None:
            seen.append(get_rollout_context())
            ctx.set_reward(1.0)

    backend = LocalBackend(workflow=ConfigEcho, grader=Peek)
    backend.artifact_root = tmp_path
    rollout = RolloutContext(rollout_id="peek")
    reported: list[ExecutionResult] = []

    async def record(result: ExecutionResult) -> None:
        reported.append(result)

    with rollout:
        request = ExecutionRequest(id="peek", prompt=[], label="x", agent_timeout_sec=timeout)
        await backend.execute(request, record, record)
    assert seen == [None]
    assert [r.status for r in reported] == ["success", "success"]
