"""Strands Agents integration (upstream ``osmosis_ai.rollout.integrations.agents.strands``, spec workflow-api §4.1).

- :class:`OsmosisRolloutModel` — placeholder model (``OsmosisRolloutModel(params={...})``); resolved per sample by
  :meth:`OsmosisRolloutModel.for_sample` into a model bound to the rollout's controller endpoint.
- :class:`OsmosisStrandsAgent` — ``strands.Agent`` that, given the placeholder, binds the model to the active
  rollout (``x-rollout-id`` / ``x-sample-id`` on every call) and registers itself as the sample source.
- :class:`StrandsAgentSampleSource` — the agent's ``messages`` as a :class:`RolloutSample`.

Model calls: :class:`RolloutLiteLLMModel` (what ``for_sample`` returns) is a real ``LiteLLMModel`` — same config,
same request formatting, same stream handling — but sends the request through one pooled ``AsyncOpenAI`` client
per loop and endpoint instead of ``litellm.acompletion`` (see ``docs/integrations.md``). Requests that use options
only litellm understands fall back to ``litellm.acompletion`` unchanged.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from osmosis_compat.workflow.context import RolloutContext, SampleSource, get_rollout_context
from osmosis_compat.workflow.integrations._deferred_litellm import import_deferring_litellm
from osmosis_compat.workflow.integrations._gc import freeze_import_heap
from osmosis_compat.workflow.integrations._openai_client import (
    auth_headers_for,
    chunk_stream_class,
    litellm_transport_forced,
    rollout_openai_client,
)
from osmosis_compat.workflow.types.sample import RolloutSample
from osmosis_compat.workflow.utils.messages import map_initial_messages_to_content_blocks

_strands_litellm = import_deferring_litellm("strands.models.litellm")

from strands import Agent as StrandsAgent  # noqa: E402  (after the deferred litellm import above)
from strands.models.model import Model  # noqa: E402

LiteLLMModel = _strands_litellm.LiteLLMModel

# The framework is imported now: keep its import heap out of full GC passes (event-loop pauses of 100+ ms under
# load otherwise; see _gc.py; OSMOSIS_COMPAT_GC_FREEZE=0 opts out).
freeze_import_heap("Strands integration imported")

__all__ = ["OsmosisRolloutModel", "OsmosisStrandsAgent", "RolloutLiteLLMModel", "StrandsAgentSampleSource"]

logger = logging.getLogger("osmosis_ai.rollout.integrations.agents.strands")

#: The placeholder model id the controller routes to the current policy (litellm strips ``openai/`` on the wire).
ROLLOUT_MODEL_ID = "openai/osmosis-rollout"

_PLACEHOLDER_ERROR = (
    "OsmosisRolloutModel is a placeholder and cannot be {what} directly. Pass it as "
    "OsmosisStrandsAgent(model=OsmosisRolloutModel(...)) inside AgentWorkflow.run(), where the agent resolves it "
    "to the rollout's endpoint (or call model.for_sample(sample_id, rollout_ctx) yourself)."
)

#: ``client_args`` keys the pooled-client path understands; anything else goes through litellm.
_FAST_CLIENT_ARGS = frozenset({"api_base", "base_url", "api_key", "extra_headers", "headers"})
#: Request keys sent as-is in the chat-completions body: the common OpenAI chat parameters, which litellm forwards
#: untouched for the ``openai/`` provider. A request with any other key (parameters litellm may translate, drop or
#: reject per model) takes the litellm path, so it behaves exactly as upstream.
_BODY_KEYS = frozenset(
    {
        "messages", "model", "stream", "stream_options", "tools", "tool_choice", "temperature", "top_p",
        "max_tokens", "max_completion_tokens", "stop", "seed", "n", "presence_penalty", "frequency_penalty",
        "logit_bias", "logprobs", "top_logprobs", "response_format", "parallel_tool_calls",
    }
)
#: Request keys that are client options rather than body fields.
_OPTION_KEYS = frozenset({"extra_headers", "extra_body"})


class OsmosisRolloutModel(LiteLLMModel):
    """Placeholder for the policy being trained: ``OsmosisRolloutModel(params={"temperature": 1.0})``.

    Built with the plain ``LiteLLMModel`` constructor (``config == {"params": {...}}``), without a ``model_id``:
    the controller decides which policy serves ``openai/osmosis-rollout``. It makes no calls itself —
    ``stream``, ``structured_output``, ``update_config`` and ``get_config`` raise ``NotImplementedError`` — until
    :meth:`for_sample` (called by :class:`OsmosisStrandsAgent`) builds the bound model.
    """

    def for_sample(self, sample_id: str, rollout_ctx: RolloutContext) -> LiteLLMModel:
        """A model bound to ``rollout_ctx``: ``client_args = {"api_base": chat_completions_url, "api_key": key,
        "extra_headers": {"x-sample-id": sample_id, "x-rollout-id": rollout_id}}`` (no headers for a 0.3.8 polling
        rollout: ``rollout_ctx.routing_headers`` is false), ``model_id = "openai/osmosis-rollout"``, plus this
        placeholder's config (``params``, ``stream``…).

        Passing ``model_id`` to the placeholder therefore raises ``TypeError`` (multiple values), as upstream.
        """
        client_args: dict[str, Any] = {"api_base": rollout_ctx.chat_completions_url, "api_key": rollout_ctx.api_key}
        if rollout_ctx.routing_headers:  # 0.3.8 rollouts carry their identity in the URL instead
            client_args["extra_headers"] = {"x-sample-id": sample_id, "x-rollout-id": rollout_ctx.rollout_id}
        return RolloutLiteLLMModel(
            client_args=client_args,
            model_id=ROLLOUT_MODEL_ID,
            **self.config,
        )

    def update_config(self, **model_config: Any) -> None:  # type: ignore[override]
        """Not available on the placeholder (raises ``NotImplementedError``)."""
        raise NotImplementedError(_PLACEHOLDER_ERROR.format(what="configured"))

    def get_config(self) -> Any:
        """Not available on the placeholder (raises ``NotImplementedError``)."""
        raise NotImplementedError(_PLACEHOLDER_ERROR.format(what="configured"))

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:  # type: ignore[override]
        """Not available on the placeholder (raises ``NotImplementedError``)."""
        raise NotImplementedError(_PLACEHOLDER_ERROR.format(what="called"))
        yield  # pragma: no cover - makes this an async generator like the parent

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:  # type: ignore[override]
        """Not available on the placeholder (raises ``NotImplementedError``)."""
        raise NotImplementedError(_PLACEHOLDER_ERROR.format(what="called"))
        yield  # pragma: no cover


class RolloutLiteLLMModel(LiteLLMModel):
    """The ``LiteLLMModel`` that :meth:`OsmosisRolloutModel.for_sample` returns.

    Identical to ``LiteLLMModel`` in configuration and in the requests it makes, but the HTTP call goes through a
    pooled ``AsyncOpenAI`` client (one per event loop and endpoint) instead of ``litellm.acompletion`` (whose per-call
    translation and bookkeeping cost ~9 ms of CPU per call). Requests that carry options only litellm
    understands (anything outside the OpenAI chat parameters, or ``client_args`` beyond base URL / key /
    headers), or made while ``OSMOSIS_COMPAT_MODEL_TRANSPORT=litellm``, are handed to litellm exactly as
    ``LiteLLMModel`` would.
    """

    def _fast_request(self, request: Mapping[str, Any]) -> tuple[str, str | None, dict[str, Any], dict[str, str], Any] | None:
        """``(base_url, api_key, body, headers, extra_body)`` for the pooled client, or ``None`` → use litellm."""
        client_args = self.client_args
        if litellm_transport_forced() or not client_args.keys() <= _FAST_CLIENT_ARGS:
            return None
        base_url = client_args.get("api_base") or client_args.get("base_url")
        model = request.get("model")
        if not base_url or not isinstance(model, str) or not model.startswith("openai/"):
            return None
        if not request.keys() <= _BODY_KEYS | _OPTION_KEYS:
            return None
        headers: dict[str, str] = {}
        for source in (client_args.get("headers"), client_args.get("extra_headers"), request.get("extra_headers")):
            if source:
                headers.update(source)
        # Body as litellm puts it on the wire: messages, model (provider prefix stripped), then the rest sorted;
        # ``None`` values and ``stream: false`` are left out.
        body: dict[str, Any] = {"messages": request["messages"], "model": model[len("openai/") :]}
        for key in sorted(request.keys() - {"messages", "model"} - _OPTION_KEYS):
            value = request[key]
            if value is None or (key == "stream" and value is False):
                continue
            body[key] = value
        return base_url, client_args.get("api_key"), body, headers, request.get("extra_body")

    async def _post(self, fast: tuple[str, str | None, dict[str, Any], dict[str, str], Any], stream: bool) -> Any:
        from openai.types.chat import ChatCompletion

        base_url, api_key, body, headers, extra_body = fast
        options: dict[str, Any] = {"headers": {**headers, **auth_headers_for(api_key)}}
        if extra_body:
            options["extra_json"] = extra_body
        client = rollout_openai_client(base_url, api_key)
        if stream:
            return await client.post(
                "/chat/completions",
                cast_to=ChatCompletion,
                body=body,
                options=options,
                stream=True,
                stream_cls=chunk_stream_class(),
            )
        return await client.post("/chat/completions", cast_to=ChatCompletion, body=body, options=options)

    async def _handle_streaming_response(self, litellm_request: dict[str, Any]) -> AsyncGenerator[Any, None]:
        fast = self._fast_request(litellm_request)
        if fast is None:
            async for event in super()._handle_streaming_response(litellm_request):
                yield event
            return
        response = await self._post(fast, stream=True)
        # From here on: LiteLLMModel._handle_streaming_response (strands 1.62), reading openai chunks, which
        # have the attributes litellm's chunks mirror.
        yield self.format_chunk({"chunk_type": "message_start"})
        tool_calls: dict[int, list[Any]] = {}
        data_type: str | None = None
        finish_reason: str | None = None
        async for event in response:
            if not getattr(event, "choices", None):
                continue
            choice = event.choices[0]
            async for updated_data_type, chunk in self._process_choice_content(
                choice, data_type, tool_calls, is_streaming=True
            ):
                data_type = updated_data_type
                yield chunk
            if choice.finish_reason:
                finish_reason = choice.finish_reason
                if data_type:
                    yield self.format_chunk({"chunk_type": "content_stop", "data_type": data_type})
                break
        async for chunk in self._process_tool_calls(tool_calls):
            yield chunk
        yield self.format_chunk({"chunk_type": "message_stop", "data": finish_reason})
        async for event in response:  # only the trailing usage chunk matters
            if usage := getattr(event, "usage", None):
                yield self.format_chunk({"chunk_type": "metadata", "data": usage})

    async def _handle_non_streaming_response(self, litellm_request: dict[str, Any]) -> AsyncGenerator[Any, None]:
        fast = self._fast_request(litellm_request)
        if fast is None:
            async for event in super()._handle_non_streaming_response(litellm_request):
                yield event
            return
        response = await self._post(fast, stream=False)
        # From here on: LiteLLMModel._handle_non_streaming_response (strands 1.62).
        yield self.format_chunk({"chunk_type": "message_start"})
        tool_calls: dict[int, list[Any]] = {}
        data_type: str | None = None
        finish_reason: str | None = None
        if getattr(response, "choices", None):
            choice = response.choices[0]
            if getattr(choice, "message", None):
                async for updated_data_type, chunk in self._process_choice_content(
                    choice, data_type, tool_calls, is_streaming=False
                ):
                    data_type = updated_data_type
                    yield chunk
            finish_reason = getattr(choice, "finish_reason", None)
        if data_type:
            yield self.format_chunk({"chunk_type": "content_stop", "data_type": data_type})
        async for chunk in self._process_tool_calls(tool_calls):
            yield chunk
        yield self.format_chunk({"chunk_type": "message_stop", "data": finish_reason})
        if getattr(response, "usage", None):
            yield self.format_chunk({"chunk_type": "metadata", "data": response.usage})


class StrandsAgentSampleSource(SampleSource):
    """The sample of one :class:`OsmosisStrandsAgent`: its native Strands ``messages`` at collection time.

    ``trajectory_messages`` is the same conversation in chat-completions form
    (``LiteLLMModel.format_request_messages``), or ``None`` if it cannot be converted (a warning is logged).
    """

    def __init__(self, agent: StrandsAgent) -> None:
        self.agent = agent

    async def get_sample(self, name: str | None = None) -> RolloutSample:
        """``RolloutSample(id=name, messages=list(agent.messages), trajectory_messages=<chat form or None>)``."""
        messages = list(self.agent.messages)
        try:
            trajectory: list[Any] | None = LiteLLMModel.format_request_messages(messages)
        except Exception as exc:
            logger.warning("Failed to convert Strands messages of sample %r to chat messages: %s", name, exc)
            trajectory = None
        return RolloutSample(id=name or "", messages=messages, trajectory_messages=trajectory)


class OsmosisStrandsAgent(StrandsAgent):
    """``strands.Agent`` for rollouts. Give it ``model=OsmosisRolloutModel(...)`` inside ``AgentWorkflow.run()``.

    With the placeholder model it: reads the active :class:`RolloutContext` (``RuntimeError`` if there is none);
    takes the sample id from ``name``, else ``agent_id``, else a random uuid hex; binds the model to the rollout
    (``for_sample``); registers a :class:`StrandsAgentSampleSource` under the sample id (``ValueError`` if the id is
    taken in this rollout). ``messages`` with string content (e.g. ``ctx.prompt``) are turned into Strands content
    blocks. With any other model it is a plain ``strands.Agent`` and registers nothing.
    """

    def __init__(
        self,
        *args: Any,
        messages: list[dict[str, Any]] | None = None,
        model: Model | str | None = None,
        **kwargs: Any,
    ) -> None:
        if messages:
            messages = map_initial_messages_to_content_blocks(messages)
        if isinstance(model, OsmosisRolloutModel):
            rollout_ctx = get_rollout_context()
            if rollout_ctx is None:
                raise RuntimeError(
                    "OsmosisStrandsAgent with an OsmosisRolloutModel needs an active RolloutContext: construct it "
                    "inside AgentWorkflow.run() (the execution backend installs the context), or enter "
                    "`with RolloutContext(...):` yourself."
                )
            sample_id = kwargs.get("name") or kwargs.get("agent_id") or uuid.uuid4().hex
            model = model.for_sample(sample_id, rollout_ctx)
            # Registered before Strands' own __init__, as upstream: a duplicate name fails fast.
            rollout_ctx.register_sample_source(sample_id, StrandsAgentSampleSource(self))
        super().__init__(*args, model=model, messages=messages, **kwargs)
