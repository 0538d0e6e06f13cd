"""OpenAI Agents SDK integration (upstream ``osmosis_ai.rollout.integrations.agents.openai_agents``, spec §4.2).

- :class:`OsmosisAgent` — ``agents.Agent`` that swaps an :class:`OsmosisRolloutModel` placeholder for an
  :class:`OsmosisLitellmModel` bound to the active rollout.
- :class:`OsmosisMemorySession` — in-memory session; its ``name`` is the sample id; it registers a
  :class:`SessionSampleSource` on construction inside a rollout, and publishes its name in
  :data:`current_sample_id` whenever the runner reads or writes it (that is where ``x-sample-id`` comes from).
- :class:`OsmosisLitellmModel` — a ``LitellmModel`` for ``openai/osmosis-rollout`` at the rollout's
  ``chat_completions_url`` with the controller key, adding ``x-sample-id`` / ``x-rollout-id`` to every call.

Tracing: importing this module disables OpenAI Agents tracing unless the user configured tracing explicitly
(``OPENAI_AGENTS_DISABLE_TRACING`` set to anything, ``set_tracing_disabled(...)`` already called, or custom
trace processors installed). Rollouts thus never try to export traces to api.openai.com (spec/frameworks.md P3).
Call ``agents.set_tracing_disabled(False)`` after the import to turn it back on.

Garbage collection: importing this module freezes the heap the framework import left (``gc.freeze()``, see
``_gc.py``), so full collections during rollouts do not pause the event loop for 100+ ms
(``OSMOSIS_COMPAT_GC_FREEZE=0`` opts out).

Model calls go through one pooled ``AsyncOpenAI`` client per loop and endpoint (``OpenAIChatCompletionsModel``
streaming, as upstream's ``get_response`` streamed) instead of ``litellm.acompletion``; settings that litellm
handles its own way (``extra_args``, ``metadata``, ``reasoning``…) take the litellm path unchanged.
See ``docs/integrations.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from osmosis_compat.workflow.context import RolloutContext, SampleSource, get_rollout_context  # noqa: E402
from osmosis_compat.workflow.integrations._deferred_litellm import import_deferring_litellm  # noqa: E402
from osmosis_compat.workflow.integrations._gc import freeze_import_heap  # noqa: E402
from osmosis_compat.workflow.integrations._openai_client import (  # noqa: E402
    RawChatClient,
    auth_headers_for,
    litellm_transport_forced,
    rollout_openai_client,
)
from osmosis_compat.workflow.types.sample import RolloutSample  # noqa: E402

_agents_litellm = import_deferring_litellm("agents.extensions.models.litellm_model")

from agents import Agent, ModelSettings  # noqa: E402
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent  # noqa: E402
from agents.memory.session import SessionABC  # noqa: E402
from agents.models.chatcmpl_converter import Converter  # noqa: E402
from agents.usage import Usage  # noqa: E402

LitellmModel = _agents_litellm.LitellmModel

__all__ = [
    "OsmosisAgent",
    "OsmosisLitellmModel",
    "OsmosisMemorySession",
    "OsmosisRolloutModel",
    "SessionSampleSource",
    "current_sample_id",
]

logger = logging.getLogger("osmosis_ai.rollout.integrations.agents.openai_agents")

ROLLOUT_MODEL = "openai/osmosis-rollout"
#: What the controller sees in the body's ``model`` (litellm strips the provider prefix).
_WIRE_MODEL = "osmosis-rollout"

current_sample_id: ContextVar[str | None] = ContextVar("osmosis_current_sample_id", default=None)
"""The sample id of the :class:`OsmosisMemorySession` the runner touched last in this task (``None`` if none)."""


def _disable_tracing_unless_configured() -> None:
    """Turn Agents tracing off unless the user already decided (see the module docstring for the rule)."""
    if "OPENAI_AGENTS_DISABLE_TRACING" in os.environ:
        return
    from agents import set_tracing_disabled
    from agents.tracing import setup

    provider = setup.GLOBAL_TRACE_PROVIDER
    if provider is not None:
        if getattr(provider, "_manual_disabled", None) is not None:
            return
        processors = getattr(getattr(provider, "_multi_processor", None), "_processors", ())
        if any(type(p).__name__ != "BatchTraceProcessor" for p in processors):
            return
    set_tracing_disabled(True)


_disable_tracing_unless_configured()


def _build_trace_provider_now() -> None:
    """Create the SDK's global trace provider at import rather than inside the first ``Runner.run``: its default
    exporter builds an ``httpx.Client`` (an SSL context, 40-60 ms of CPU) — a stall of the server's event loop in
    the first rollout otherwise (it is built even with tracing disabled)."""
    try:
        from agents.tracing.setup import get_trace_provider
    except ImportError:  # pragma: no cover - older/newer SDK layouts: the first run builds it, as before
        return
    get_trace_provider()


_build_trace_provider_now()

# The framework is imported now: keep its ~190k objects out of full GC passes (100-200 ms event-loop pauses under
# load otherwise; see _gc.py).
freeze_import_heap("OpenAI Agents integration imported")


# -- sessions -------------------------------------------------------------------------------------------------


class SessionSampleSource(SampleSource):
    """The sample of one :class:`OsmosisMemorySession`: its items (Responses-API input items) at collection time.

    ``trajectory_messages`` is the same conversation as chat-completions messages (``Converter.items_to_messages``),
    or ``None`` if it cannot be converted (a warning is logged).
    """

    def __init__(self, session: OsmosisMemorySession) -> None:
        self.session = session

    async def get_sample(self, name: str | None = None) -> RolloutSample:
        """``RolloutSample(id=name, messages=<session items>, trajectory_messages=<chat form or None>)``."""
        items = await self.session.get_items()
        try:
            trajectory: list[Any] | None = [
                dict(m) for m in Converter.items_to_messages(items, preserve_tool_output_all_content=True)
            ]
        except Exception as exc:
            logger.warning("Failed to convert OpenAI Agents items of sample %r to chat messages: %s", name, exc)
            trajectory = None
        return RolloutSample(id=name or self.session.name, messages=items, trajectory_messages=trajectory)


class OsmosisMemorySession(SessionABC):
    """In-memory OpenAI Agents session whose ``name`` is the rollout sample id.

    ``name`` defaults to a random uuid hex; ``session_id == name``. Constructed while a :class:`RolloutContext` is
    active, it registers a :class:`SessionSampleSource` under ``name`` (``ValueError`` if the name is taken in this
    rollout). ``get_items`` / ``add_items`` set :data:`current_sample_id` to ``name`` (so model calls carry
    ``x-sample-id``) and raise ``RuntimeError`` when used inside a *different* rollout than the one it registered
    with. Outside rollouts it is a plain in-memory session.
    """

    session_settings = None

    def __init__(self, name: str | None = None) -> None:
        self.name: str = name or uuid.uuid4().hex
        self.session_id = self.name
        self.items: list[TResponseInputItem] = []
        self._rollout_ctx: RolloutContext | None = None
        ctx = get_rollout_context()
        if ctx is not None:
            ctx.register_sample_source(self.name, SessionSampleSource(self))
            self._rollout_ctx = ctx

    def _guard(self) -> None:
        ctx = get_rollout_context()
        if ctx is not None and ctx is not self._rollout_ctx:
            raise RuntimeError(
                f"OsmosisMemorySession {self.name!r} was not registered with the active rollout context; "
                "construct the session inside AgentWorkflow.run() so it belongs to the rollout that uses it."
            )

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """A copy of all items, or of the last ``limit`` items (chronological order)."""
        self._guard()
        current_sample_id.set(self.name)
        if limit is None:
            return list(self.items)
        return list(self.items[-limit:]) if limit > 0 else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items``."""
        self._guard()
        current_sample_id.set(self.name)
        self.items.extend(items)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the last item (``None`` when empty)."""
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        """Remove every item."""
        self.items.clear()


# -- models ---------------------------------------------------------------------------------------------------

_PLACEHOLDER_ERROR = (
    "OsmosisRolloutModel is a placeholder and cannot be called directly: pass it as "
    "OsmosisAgent(model=OsmosisRolloutModel(), ...) inside AgentWorkflow.run(); OsmosisAgent replaces it with a "
    "model bound to the rollout. Sampling options belong in ModelSettings."
)


class OsmosisRolloutModel(LitellmModel):
    """Placeholder for the policy being trained: ``OsmosisAgent(model=OsmosisRolloutModel(), ...)``.

    Takes only ``LitellmModel`` constructor keyword arguments (kept in ``litellm_kwargs`` and passed to the bound
    model, e.g. ``should_replay_reasoning_content``); sampling options go in ``ModelSettings``.
    ``get_response`` / ``stream_response`` raise ``NotImplementedError``.
    """

    def __init__(self, **litellm_kwargs: Any) -> None:
        self.litellm_kwargs = litellm_kwargs
        self.model = ROLLOUT_MODEL
        self.base_url = None
        self.api_key = None
        self.should_replay_reasoning_content = litellm_kwargs.get("should_replay_reasoning_content")

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """Not available on the placeholder (raises ``NotImplementedError``)."""
        raise NotImplementedError(_PLACEHOLDER_ERROR)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:  # type: ignore[override]
        """Not available on the placeholder (raises ``NotImplementedError``)."""
        raise NotImplementedError(_PLACEHOLDER_ERROR)
        yield  # pragma: no cover


class OsmosisLitellmModel(LitellmModel):
    """``LitellmModel("openai/osmosis-rollout", base_url=<chat_completions_url>, api_key=<controller key>)`` for the
    active rollout (``RuntimeError`` without one), adding ``x-sample-id`` (from :data:`current_sample_id`) and
    ``x-rollout-id`` to every call.

    ``get_response`` is served from ``stream_response`` (the controller sees streaming requests, as upstream).
    Both go through a pooled ``AsyncOpenAI`` client unless the settings need litellm (``extra_args``, ``metadata``,
    ``reasoning``, ``verbosity``, ``store``, prompt-cache options) or ``OSMOSIS_COMPAT_MODEL_TRANSPORT=litellm``,
    in which case ``LitellmModel``'s own litellm path runs (with the same headers).
    """

    def __init__(self, **litellm_kwargs: Any) -> None:
        ctx = get_rollout_context()
        if ctx is None:
            raise RuntimeError(
                "OsmosisLitellmModel needs an active RolloutContext: build the agent inside AgentWorkflow.run()."
            )
        self.rollout_id = ctx.rollout_id
        self.routing_headers = ctx.routing_headers
        super().__init__(
            model=ROLLOUT_MODEL, base_url=ctx.chat_completions_url, api_key=ctx.api_key, **litellm_kwargs
        )

    def _merge_headers(self, model_settings: ModelSettings) -> dict[str, str]:
        if not self.routing_headers:  # a 0.3.8 polling rollout: the identity is in the URL (0.3.8 sends none)
            return super()._merge_headers(model_settings)
        sample_id = current_sample_id.get()
        if sample_id is None:
            raise RuntimeError(
                "No sample id for this model call: pass session=OsmosisMemorySession(name=...) to Runner.run() "
                "(the session names the sample the call belongs to)."
            )
        return {**super()._merge_headers(model_settings), "x-sample-id": sample_id, "x-rollout-id": self.rollout_id}

    def _chat_model(self) -> Any:
        from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

        client = RawChatClient(rollout_openai_client(self.base_url or "", self.api_key))
        return OpenAIChatCompletionsModel(
            model=_WIRE_MODEL,
            openai_client=client,  # type: ignore[arg-type]
            should_replay_reasoning_content=self.should_replay_reasoning_content,
        )

    async def stream_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any | None = None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """Stream one model call (pooled client; litellm only for ``extra_args``)."""
        headers = self._merge_headers(model_settings)
        if litellm_transport_forced() or _needs_litellm(model_settings):
            stream = super().stream_response(
                system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id, prompt=prompt,
            )
        else:
            settings = dataclasses.replace(model_settings, extra_headers={**headers, **auth_headers_for(self.api_key)})
            stream = self._chat_model().stream_response(
                system_instructions, input, settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id, prompt=prompt,
            )
        async for event in stream:
            if event.type == "response.completed":
                _stamp_provider_model(event.response.output)
            yield event

    async def get_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any | None = None,
    ) -> ModelResponse:
        """One model call, aggregated from :meth:`stream_response` (the controller always sees a stream)."""
        final = None
        async for event in self.stream_response(
            system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
            previous_response_id=previous_response_id, conversation_id=conversation_id, prompt=prompt,
        ):
            if event.type == "response.completed":
                final = event.response
        if final is None:
            raise RuntimeError("The model stream ended without a response.completed event")
        usage = final.usage
        return ModelResponse(
            output=list(final.output),
            usage=(
                Usage(
                    requests=1,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    total_tokens=usage.total_tokens,
                    input_tokens_details=usage.input_tokens_details,
                    output_tokens_details=usage.output_tokens_details,
                )
                if usage is not None
                else Usage()
            ),
            response_id=None,
        )


#: ``ModelSettings`` fields that LitellmModel and the chat-completions model put on the wire differently (litellm
#: consumes ``metadata`` itself, LitellmModel does not send the others or maps them its own way).
_LITELLM_SETTINGS = ("extra_args", "metadata", "verbosity", "prompt_cache_retention", "prompt_cache_options", "store",
                     "reasoning")


def _needs_litellm(model_settings: ModelSettings) -> bool:
    """Whether these settings must go through litellm to reach the wire as upstream sent them."""
    return any(getattr(model_settings, name, None) not in (None, {}) for name in _LITELLM_SETTINGS)


def _stamp_provider_model(output: list[Any]) -> None:
    """Items keep ``provider_data.model == "openai/osmosis-rollout"`` as upstream's litellm path recorded it."""
    for item in output:
        provider_data = getattr(item, "provider_data", None)
        if isinstance(provider_data, dict) and provider_data.get("model") == _WIRE_MODEL:
            provider_data["model"] = ROLLOUT_MODEL


class OsmosisAgent(Agent):
    """``agents.Agent`` for rollouts: an :class:`OsmosisRolloutModel` ``model`` is replaced by
    ``OsmosisLitellmModel(**placeholder.litellm_kwargs)`` bound to the active rollout (``RuntimeError`` outside
    one). Any other ``model`` leaves it a plain ``agents.Agent``."""

    def __init__(self, *args: Any, model: Any = None, **kwargs: Any) -> None:
        if isinstance(model, OsmosisRolloutModel):
            model = OsmosisLitellmModel(**model.litellm_kwargs)
        super().__init__(*args, model=model, **kwargs)
