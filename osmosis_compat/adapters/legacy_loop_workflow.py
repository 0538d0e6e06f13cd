"""A legacy ``RolloutAgentLoop`` served as an ``AgentWorkflow`` + ``Grader`` pair (issue 4, item 1).

``loop_as_workflow(loop)`` returns two classes for ``LocalBackend`` / ``create_rollout_server``:

- the **workflow** builds the legacy ``RolloutContext`` for each rollout and awaits ``loop.run(ctx)``:

  - ``ctx.request`` is a legacy ``RolloutRequest``: ``rollout_id`` = the workflow rollout id, ``server_url`` =
    the controller's ``chat_completions_url`` (loops must not call it themselves; it is only there because the
    field is required), ``messages`` = the prompt, ``completion_params`` / ``max_turns`` /
    ``max_tokens_total`` as configured (legacy defaults ``{}`` / 10 / 8192), ``metadata`` = the request
    metadata, plus **the request label as ``metadata[label_key]``** (``"ground_truth"`` by default) when the
    request has a label and the metadata lacks that key — legacy loops read their ground truth there;
  - ``ctx.tools`` is what ``loop.get_tools(request)`` returned (an ``async def get_tools`` is awaited);
  - ``ctx.llm`` is a :class:`~.workflow_chat_client.WorkflowChatClient`: every ``ctx.chat`` goes to
    ``{chat_completions_url}/chat/completions`` with the controller key, ``x-rollout-id`` / ``x-sample-id``
    headers and **the loop's tools in every request**;
  - the loop's ``ctx.complete(final_messages, finish_reason, reward)`` becomes one sample named
    ``loop.name``: ``messages`` = the final messages, ``metrics`` = the legacy metrics, ``extra_fields`` =
    ``{"legacy_finish_reason": …, "legacy_reward": …}``;
  - failures map to failure callbacks as listed in :mod:`.errors`.

- the **grader** sets each sample's reward to the reward the loop passed to ``ctx.complete``. A loop that
  passed none fails grading with a ``validation_error`` saying so; pair the workflow with your own ``Grader``
  to compute rewards instead.

The loop instance is shared by all rollouts (as on the legacy server); a class is instantiated once.
"""

from __future__ import annotations

import inspect
import time
import uuid
from typing import Any, ClassVar

from osmosis_compat.legacy.base import RolloutAgentLoop, RolloutContext
from osmosis_compat.legacy.config import RolloutClientSettings
from osmosis_compat.legacy.exceptions import (
    OsmosisServerError,
    OsmosisTimeoutError,
    OsmosisTransportError,
    OsmosisValidationError,
)
from osmosis_compat.legacy.schemas import RolloutRequest, normalize_tools
from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowContext,
    Grader,
    GraderContext,
    RolloutSample,
    SampleSource,
    get_rollout_context,
)

from .errors import LoopModelCallError, LoopModelTimeoutError, LoopReportedError, LoopResultError
from .tool_schemas import openai_tool_schemas
from .workflow_chat_client import WorkflowChatClient

__all__ = [
    "LegacyLoopGrader",
    "LegacyLoopWorkflow",
    "LoopResultSource",
    "legacy_request",
    "loop_as_workflow",
    "loop_reward",
    "run_loop",
]

#: ``RolloutSample.extra_fields`` keys carrying the loop's outcome to the paired grader (and the controller).
REWARD_FIELD = "legacy_reward"
FINISH_REASON_FIELD = "legacy_finish_reason"


class LoopResultSource(SampleSource):
    """The sample of one adapted-loop rollout: filled with the loop's ``RolloutResult`` when ``run`` returns."""

    def __init__(self) -> None:
        self.result: Any = None

    async def get_sample(self, name: str) -> RolloutSample:
        """The sample ``name``: the loop's final messages, metrics and outcome (``LoopResultError`` if the loop
        produced no result)."""
        result = self.result
        if result is None:
            raise LoopResultError(f"the legacy loop {name!r} finished without a result")
        metrics = result.metrics.model_dump() if getattr(result, "metrics", None) is not None else {}
        return RolloutSample(
            id=name,
            messages=list(result.final_messages or []),
            metrics=metrics,
            extra_fields={FINISH_REASON_FIELD: result.finish_reason, REWARD_FIELD: result.reward},
        )


def _label_of(ctx: AgentWorkflowContext) -> Any:
    """The request label, if the workflow API exposes it to the workflow phase."""
    label = getattr(ctx, "label", None)
    if label is not None:
        return label
    try:
        from osmosis_compat.workflow.backend.local import current_execution_request
    except ImportError:
        return None
    request = current_execution_request()
    return getattr(request, "label", None) if request is not None else None


class LegacyLoopWorkflow(AgentWorkflow):
    """Runs :attr:`loop` for one rollout (see the module docstring). Built by :func:`loop_as_workflow`."""

    loop: ClassVar[RolloutAgentLoop]
    completion_params: ClassVar[dict[str, Any] | None] = None
    max_turns: ClassVar[int | None] = None
    max_tokens_total: ClassVar[int | None] = None
    label_key: ClassVar[str] = "ground_truth"
    client_settings: ClassVar[RolloutClientSettings | None] = None

    def build_request(self, ctx: AgentWorkflowContext, rollout_id: str, chat_completions_url: str) -> RolloutRequest:
        """The legacy ``RolloutRequest`` the loop sees for this rollout."""
        return legacy_request(
            self.loop,
            rollout_id=rollout_id,
            server_url=chat_completions_url,
            prompt=ctx.prompt,
            metadata=ctx.metadata,
            label=_label_of(ctx),
            label_key=self.label_key,
            completion_params=self.completion_params,
            max_turns=self.max_turns,
            max_tokens_total=self.max_tokens_total,
        )

    async def run(self, ctx: AgentWorkflowContext) -> None:
        rollout_ctx = get_rollout_context()
        if rollout_ctx is None:
            raise RuntimeError("LegacyLoopWorkflow must run inside a rollout (no active RolloutContext)")
        sample_id = str(self.loop.name)
        source = LoopResultSource()
        rollout_ctx.register_sample_source(sample_id, source)
        rollout_id = rollout_ctx.rollout_id or f"adapted-{uuid.uuid4().hex}"
        request = self.build_request(ctx, rollout_id, rollout_ctx.chat_completions_url)
        source.result = await run_loop(
            self.loop,
            request,
            chat_completions_url=rollout_ctx.chat_completions_url,
            api_key=rollout_ctx.api_key,
            routing_headers=rollout_ctx.routing_headers,
            client_settings=self.client_settings,
        )


def legacy_request(
    loop: RolloutAgentLoop,
    *,
    rollout_id: str,
    server_url: str,
    prompt: list[dict[str, Any]],
    metadata: dict[str, Any] | None,
    label: Any = None,
    label_key: str = "ground_truth",
    completion_params: dict[str, Any] | None = None,
    max_turns: int | None = None,
    max_tokens_total: int | None = None,
) -> RolloutRequest:
    """The legacy ``RolloutRequest`` a loop sees when a workflow-era controller drives it (see the module
    docstring: the label goes into ``metadata[label_key]`` unless the metadata has that key)."""
    fields_metadata = dict(metadata or {})
    if label is not None and label_key not in fields_metadata:
        fields_metadata[label_key] = label
    fields: dict[str, Any] = {
        "rollout_id": rollout_id,
        "server_url": server_url,
        "messages": [dict(m) for m in prompt],
        "completion_params": dict(completion_params or {}),
        "metadata": fields_metadata,
    }
    if max_turns is not None:
        fields["max_turns"] = max_turns
    if max_tokens_total is not None:
        fields["max_tokens_total"] = max_tokens_total
    try:
        return RolloutRequest(**fields)
    except ValueError as exc:
        raise LoopResultError(f"cannot build the legacy RolloutRequest for {loop.name!r}: {exc}") from exc


async def run_loop(
    loop: RolloutAgentLoop,
    request: RolloutRequest,
    *,
    chat_completions_url: str,
    api_key: str | None,
    routing_headers: bool = True,
    client_settings: RolloutClientSettings | None = None,
) -> Any:
    """Run one rollout of ``loop`` against an OpenAI-compatible chat endpoint and return its COMPLETED
    ``RolloutResult``.

    ``ctx.chat`` goes to ``{chat_completions_url}/chat/completions`` (bearer ``api_key``, the loop's tools in every
    body; ``x-rollout-id`` / ``x-sample-id`` only with ``routing_headers``). Failures raise the
    :mod:`.errors` types (each carries its ``err_category``).
    """
    sample_id = str(loop.name)
    raw_tools = loop.get_tools(request)
    if inspect.isawaitable(raw_tools):
        raw_tools = await raw_tools
    try:
        normalize_tools(raw_tools)  # the legacy server's checks, so a loop fails the same way on both
        tools = openai_tool_schemas(raw_tools)
    except ValueError as exc:
        raise LoopResultError(f"{sample_id}.get_tools(): {exc}") from exc

    llm = WorkflowChatClient(
        chat_completions_url=chat_completions_url,
        api_key=api_key,
        rollout_id=request.rollout_id,
        sample_id=sample_id,
        tools=tools,
        settings=client_settings,
        routing_headers=routing_headers,
    )
    legacy_ctx = RolloutContext(request=request, tools=raw_tools, llm=llm, _start_time=time.monotonic())
    try:
        result = await loop.run(legacy_ctx)
    except OsmosisTimeoutError as exc:
        raise LoopModelTimeoutError(str(exc)) from exc
    except (OsmosisServerError, OsmosisValidationError) as exc:
        raise LoopModelCallError(str(exc), exc.status_code) from exc
    except OsmosisTransportError as exc:
        raise LoopModelCallError(str(exc)) from exc

    status = getattr(result, "status", None)
    if status is None or not hasattr(result, "final_messages"):
        raise LoopResultError(
            f"{type(loop).__name__}.run() must return a RolloutResult (ctx.complete(...) or ctx.error(...)), "
            f"got {type(result).__name__}"
        )
    status = getattr(status, "value", status)
    if status == "ERROR":
        raise LoopReportedError(result.error_message or "the agent loop reported an error", result.final_messages)
    if status != "COMPLETED":
        raise LoopResultError(f"{status!r} is not a valid RolloutStatus")
    return result


def loop_reward(sample_id: str, reward: Any) -> float:
    """The loop's ``ctx.complete(reward=…)`` as a float; ``ValueError`` when it passed none or a non-number."""
    if reward is None:
        raise ValueError(
            f"the legacy loop passed no reward to ctx.complete() for sample {sample_id!r}: "
            "return ctx.complete(messages, reward=...) or pair the workflow with a Grader"
        )
    try:
        return float(reward)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample {sample_id!r}: the loop's reward {reward!r} is not a number") from exc


class LegacyLoopGrader(Grader):
    """Sets each sample's reward to the reward the loop passed to ``ctx.complete`` (see the module docstring)."""

    async def grade(self, ctx: GraderContext) -> None:
        for sample_id, sample in ctx.get_samples().items():
            ctx.set_sample_reward(sample_id, loop_reward(sample_id, (sample.extra_fields or {}).get(REWARD_FIELD)))


def loop_as_workflow(
    loop: RolloutAgentLoop | type[RolloutAgentLoop],
    *,
    completion_params: dict[str, Any] | None = None,
    max_turns: int | None = None,
    max_tokens_total: int | None = None,
    label_key: str = "ground_truth",
    client_settings: RolloutClientSettings | None = None,
) -> tuple[type[AgentWorkflow], type[Grader]]:
    """Wrap a legacy agent loop as an ``(AgentWorkflow subclass, Grader subclass)`` pair.

    Use them as ``LocalBackend(workflow=W, grader=G)`` (optionally with a workflow config) and serve with
    ``create_rollout_server``. ``loop`` is an instance or a class (instantiated once, without arguments).
    ``completion_params``, ``max_turns`` and ``max_tokens_total`` fill the legacy ``RolloutRequest`` the loop
    sees (the workflow protocol carries none of them); ``label_key`` names the metadata key the request label is
    exposed under; ``client_settings`` (legacy ``RolloutClientSettings``) tunes the model-call timeout and
    retries (default: the legacy global settings). Behaviour is described in this module's docstring.

    Raises ``TypeError`` when ``loop`` is not a ``RolloutAgentLoop`` instance or subclass.
    """
    if isinstance(loop, type):
        if not issubclass(loop, RolloutAgentLoop):
            raise TypeError(f"{loop.__name__} is a class but not a RolloutAgentLoop subclass")
        loop = loop()
    if not isinstance(loop, RolloutAgentLoop):
        raise TypeError(f"loop must be a RolloutAgentLoop instance or subclass, got {type(loop).__name__}")
    base = type(loop).__name__
    module = type(loop).__module__
    workflow_cls = type(
        f"{base}Workflow",
        (LegacyLoopWorkflow,),
        {
            "__module__": module,
            "__doc__": f"The legacy agent loop {loop.name!r} as an AgentWorkflow (osmosis_compat.adapters).",
            "loop": loop,
            "completion_params": dict(completion_params) if completion_params is not None else None,
            "max_turns": max_turns,
            "max_tokens_total": max_tokens_total,
            "label_key": label_key,
            "client_settings": client_settings,
        },
    )
    grader_cls = type(
        f"{base}Grader",
        (LegacyLoopGrader,),
        {"__module__": module, "__doc__": f"Rewards of the legacy agent loop {loop.name!r} (osmosis_compat.adapters)."},
    )
    return workflow_cls, grader_cls
