"""An ``AgentWorkflow`` (+ optional ``Grader``) served as a legacy ``RolloutAgentLoop`` (issue 4, item 2).

``workflow_as_loop(workflow, grader=…)`` returns a loop that ``create_app`` / ``osmosis-compat serve`` serve to a
legacy TrainGate. Per rollout:

1. **Tools** for the InitResponse: ``tools=`` if given, else every tool found in the workflow config
   (Strands ``@tool`` → ``tool_spec``; OpenAI Agents ``FunctionTool`` → ``params_json_schema``; OpenAI tool
   dicts), else the tool objects (not dicts) defined at module level next to the workflow class; converted to
   whole OpenAI function schemas (:mod:`.tool_schemas`).
2. The workflow runs through the workflow API's own ``LocalBackend.run_workflow`` inside a workflow
   ``RolloutContext`` whose ``chat_completions_url`` is a route of the runtime's **streaming bridge**
   (:mod:`osmosis_compat.runtime.bridge`), so the framework integrations' model calls — streaming or not, tools
   in the body, ``x-*`` headers — arrive at the bridge. Each one is translated into ``ctx.chat(...)`` on the
   legacy context: non-streaming ``POST {server_url}/v1/chat/completions`` with ``rollout_id`` in the body,
   through the legacy client (runtime ``PolicyClient`` + ``LegacyDialect``, the one retry loop), counted in the
   rollout metrics. Translation: ``model``, ``messages``, ``temperature``, ``top_p``, ``max_tokens`` (or
   ``max_completion_tokens``), ``stop`` and ``logprobs`` (a bool) travel; ``tools``/``tool_choice``/``stream``
   and the rest are dropped (tools were declared at init); **list-of-parts content made only of text parts is
   flattened to a string** (TrainGate's chat template expects strings; parts carrying anything else are kept).
   The reply goes back as JSON, or as SSE synthesised from it when the request streamed; a reply carrying tool
   calls with ``finish_reason: "stop"`` (the legacy mock TrainGate does that) is reported as ``"tool_calls"``.
3. The grader (if any) runs through ``LocalBackend.run_grader`` with ``label`` = ``metadata[label_key]``
   (``"ground_truth"``, stringified) and ``metadata`` = the request metadata.
4. The result: the **first registered sample** is the rollout's conversation (legacy rollouts carry one;
   further samples are logged and dropped). ``final_messages`` = its ``trajectory_messages`` (the chat-shaped
   copy the integrations record) or else its ``messages``, with text-only content lists flattened; ``reward`` =
   its graded reward (``None`` without a grader: TrainGate then computes the reward itself). The framework
   runs the tools, so ``metrics.num_tool_calls`` counts the ``tool`` messages (latency not measured).
   Workflow failure → ``ctx.error(err_message)``; no sample → ``ctx.error`` saying so; grading failure →
   ``ctx.error("grading failed: …", final_messages)``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from osmosis_compat.legacy.base import RolloutAgentLoop, RolloutContext, RolloutResult
from osmosis_compat.legacy.exceptions import (
    OsmosisServerError,
    OsmosisTimeoutError,
    OsmosisTransportError,
    OsmosisValidationError,
)
from osmosis_compat.legacy.schemas import RolloutRequest
from osmosis_compat.runtime.bridge import BridgeError, get_bridge
from osmosis_compat.workflow import (
    AgentWorkflow,
    AgentWorkflowConfig,
    ExecutionRequest,
    Grader,
    GraderConfig,
    LocalBackend,
)
from osmosis_compat.workflow import RolloutContext as WorkflowRolloutContext

from .chat_shape import to_chat_messages
from .tool_schemas import find_module_tools, find_tools, openai_tool_schemas

__all__ = ["WorkflowAgentLoop", "workflow_as_loop"]

logger = logging.getLogger("osmosis_compat.adapters.workflow_loop")

_UNSAFE_ID = re.compile(r"[/\\\x00]")


def _chat_kwargs(body: Mapping[str, Any]) -> dict[str, Any]:
    """The legacy ``ctx.chat`` keyword arguments for an OpenAI request body (see the module docstring)."""
    kwargs: dict[str, Any] = {}
    if isinstance(body.get("model"), str):
        kwargs["model"] = body["model"]
    for key in ("temperature", "top_p"):
        if isinstance(body.get(key), (int, float)) and not isinstance(body.get(key), bool):
            kwargs[key] = body[key]
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        kwargs["max_tokens"] = max_tokens
    if body.get("stop") is not None:
        kwargs["stop"] = body["stop"]
    if isinstance(body.get("logprobs"), bool):
        kwargs["logprobs"] = body["logprobs"]
    return kwargs


def _completion(result: Any, model: str, rollout_id: str, turn: int) -> dict[str, Any]:
    """A ``chat.completion`` dict for a legacy ``CompletionsResult``."""
    import json

    message = dict(result.message)
    message.setdefault("role", "assistant")
    message.setdefault("content", None)
    tool_calls = message.get("tool_calls")
    if tool_calls:
        fixed = []
        for call in tool_calls:
            call = dict(call)
            function = dict(call.get("function") or {})
            if not isinstance(function.get("arguments"), str):  # OpenAI clients need a JSON string
                function["arguments"] = json.dumps(function.get("arguments") or {})
            call["function"] = function
            call.setdefault("type", "function")
            fixed.append(call)
        message["tool_calls"] = fixed
    finish_reason = result.finish_reason or "stop"
    if tool_calls and finish_reason == "stop":
        finish_reason = "tool_calls"
    usage = dict(result.usage or {})
    prompt = int(usage.get("prompt_tokens", 0) or 0)
    completion = int(usage.get("completion_tokens", 0) or 0)
    usage.setdefault("prompt_tokens", prompt)
    usage.setdefault("completion_tokens", completion)
    usage.setdefault("total_tokens", prompt + completion)
    return {
        "id": f"chatcmpl-bridge-{rollout_id}-{turn}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    }


def _bridge_error(exc: Exception) -> BridgeError:
    if isinstance(exc, OsmosisTimeoutError):
        return BridgeError(f"TrainGate timed out: {exc}", 504, error_type="timeout")
    status = getattr(exc, "status_code", None)
    if isinstance(exc, OsmosisValidationError) and isinstance(status, int) and 400 <= status < 500:
        return BridgeError(str(exc), status, error_type="invalid_request_error")
    return BridgeError(str(exc) or type(exc).__name__, 502)


def _execution_id(rollout_id: str) -> str:
    """The rollout id as a single path segment (the workflow API requires one; legacy ids are free text)."""
    safe = _UNSAFE_ID.sub("_", rollout_id)
    return "_" + safe if safe in (".", "..") else safe


def _tool_names(tools: Any) -> set[str]:
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


class WorkflowAgentLoop(RolloutAgentLoop):
    """A workflow (+ grader) as a legacy agent loop; build it with :func:`workflow_as_loop`."""

    name = "workflow"

    def __init__(
        self,
        workflow: type[AgentWorkflow] | str,
        *,
        grader: type[Grader] | str | None = None,
        workflow_config: AgentWorkflowConfig | None = None,
        grader_config: GraderConfig | None = None,
        tools: Sequence[Any] | None = None,
        name: str | None = None,
        label_key: str = "ground_truth",
    ) -> None:
        self.backend = LocalBackend(
            workflow=workflow, workflow_config=workflow_config, grader=grader, grader_config=grader_config
        )
        config_name = getattr(self.backend.workflow_config, "name", None)
        if not name and isinstance(config_name, str) and config_name.strip():
            name = config_name.strip()
        self.name = name or self.backend.workflow_cls.__name__
        found = list(tools) if tools is not None else find_tools(self.backend.workflow_config)
        if tools is None and not found:
            found = find_module_tools(self.backend.workflow_cls)
            if found:
                logger.info(
                    "%s: declaring the tools defined in %s (%s); pass tools=[...] to choose them explicitly",
                    self.name, self.backend.workflow_cls.__module__,
                    ", ".join(t["function"]["name"] for t in openai_tool_schemas(found)),
                )
        self.tools = openai_tool_schemas(found)
        self.label_key = label_key
        self._warned_tools = False
        self._warned_samples = False

    def get_tools(self, request: RolloutRequest) -> list[dict[str, Any]]:
        """The workflow's tools as OpenAI function schemas (fixed at construction)."""
        return [dict(tool) for tool in self.tools]

    def execution_request(self, request: RolloutRequest) -> Any:
        """The workflow API's ``ExecutionRequest`` for a legacy init request."""
        metadata = dict(request.metadata or {})
        label = metadata.get(self.label_key)
        return ExecutionRequest(
            id=_execution_id(request.rollout_id),
            prompt=[dict(m) for m in request.messages],
            label=None if label is None else str(label),
            metadata=metadata,
        )

    def _check_tools(self, body: Mapping[str, Any]) -> None:
        offered = _tool_names(body.get("tools"))
        declared = _tool_names(self.tools)
        if offered - declared and not self._warned_tools:
            self._warned_tools = True
            logger.warning(
                "%s: the workflow offers tools %s that were not declared to TrainGate at init (declared: %s); "
                "pass tools=[...] to workflow_as_loop. Logged once.",
                self.name, sorted(offered - declared), sorted(declared),
            )

    async def run(self, ctx: RolloutContext) -> RolloutResult:
        rollout_id = ctx.request.rollout_id
        turns = 0

        async def handle(body: dict[str, Any]) -> dict[str, Any]:
            nonlocal turns
            self._check_tools(body)
            messages = to_chat_messages(body["messages"])
            kwargs = _chat_kwargs(body)
            try:
                result = await ctx.chat(messages, **kwargs)
            except (OsmosisTimeoutError, OsmosisServerError, OsmosisValidationError, OsmosisTransportError) as exc:
                raise _bridge_error(exc) from exc
            turns += 1
            return _completion(result, kwargs.get("model", "default"), rollout_id, turns)

        request = self.execution_request(ctx.request)
        bridge = await get_bridge()
        async with bridge.route(handle) as route:
            rollout_ctx = WorkflowRolloutContext(
                chat_completions_url=route.base_url, api_key=route.api_key, rollout_id=rollout_id
            )
            with rollout_ctx:
                outcome = await self.backend.run_workflow(request)
        if _status(outcome) != "success":
            return ctx.error(outcome.err_message or "the workflow failed")
        samples = dict(outcome.samples or {})
        if not samples:
            return ctx.error(
                "the workflow registered no sample: build its agents with OsmosisStrandsAgent / OsmosisAgent + "
                "OsmosisMemorySession, or register a SampleSource"
            )
        if len(samples) > 1 and not self._warned_samples:
            self._warned_samples = True
            logger.warning(
                "%s: the workflow produced %d samples %s; a legacy rollout carries one, so only the first (%r) is "
                "sent. Logged once.",
                self.name, len(samples), list(samples), next(iter(samples)),
            )
        sample_id, sample = next(iter(samples.items()))
        final_messages = _final_messages(sample)
        for message in final_messages:  # the framework ran the tools: count them for the legacy metrics
            if message.get("role") == "tool":
                ctx.record_tool_call()
        reward = None
        if self.backend.grader_cls is not None:
            graded = await self.backend.run_grader(request, outcome)
            if _status(graded) != "success":
                return ctx.error(f"grading failed: {graded.err_message or 'unknown error'}", final_messages)
            reward = graded.samples[sample_id].reward
        return ctx.complete(final_messages, finish_reason="stop", reward=reward)


def _status(result: Any) -> str:
    status = getattr(result, "status", None)
    return str(getattr(status, "value", status))


def _final_messages(sample: Any) -> list[dict[str, Any]]:
    messages = getattr(sample, "trajectory_messages", None)
    if messages is None:
        messages = sample.messages
    return to_chat_messages(messages)


def workflow_as_loop(
    workflow: type[AgentWorkflow] | str,
    *,
    grader: type[Grader] | str | None = None,
    workflow_config: AgentWorkflowConfig | None = None,
    grader_config: GraderConfig | None = None,
    tools: Sequence[Any] | None = None,
    name: str | None = None,
    label_key: str = "ground_truth",
) -> WorkflowAgentLoop:
    """Wrap a workflow class (+ optional grader class) as a legacy ``RolloutAgentLoop``.

    Classes may be given as ``"module:attr"`` strings (resolved like ``LocalBackend`` does). ``tools`` overrides
    the tools found in ``workflow_config``; ``name`` defaults to the config's name, else the workflow class
    name; ``label_key`` is the metadata key holding the grader's label. Behaviour is described in this module's
    docstring. Raises ``ToolSchemaError`` (a ``ValueError``) when a tool cannot be converted.
    """
    return WorkflowAgentLoop(
        workflow,
        grader=grader,
        workflow_config=workflow_config,
        grader_config=grader_config,
        tools=tools,
        name=name,
        label_key=label_key,
    )
