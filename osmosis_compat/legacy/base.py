"""The agent-facing core: ``RolloutAgentLoop``, ``RolloutContext``, ``RolloutResult`` (spec §2.2–2.4).

An agent subclasses :class:`RolloutAgentLoop`, gives it a class-level ``name``, declares its tools in
``get_tools(request)`` and does its work in ``async run(ctx)``, talking to the model through ``ctx.chat`` and
finishing with ``ctx.complete(...)`` or ``ctx.error(...)``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Optional

from .completions import CompletionsResult
from .llm_client import LLMClientProtocol
from .schemas import OpenAIFunctionToolSchema, RolloutMetrics, RolloutRequest

__all__ = ["RolloutAgentLoop", "RolloutContext", "RolloutResult"]

logger = logging.getLogger(__name__)


@dataclass
class RolloutResult:
    """What ``run()`` returns. ``status`` must be exactly ``"COMPLETED"`` or ``"ERROR"`` (not validated here; a
    wrong value turns into an ERROR callback)."""

    status: str
    final_messages: list[dict[str, Any]]
    finish_reason: str
    error_message: Optional[str] = None
    metrics: Optional[RolloutMetrics] = None
    reward: Optional[float] = None


def _debug_file_name(rollout_id: str) -> str:
    # Why: the id comes from the controller; path separators or ".." must not steer the write outside debug_dir.
    safe = rollout_id.replace("/", "_").replace("\\", "_")
    if safe in (".", ".."):
        safe = safe.replace(".", "_")
    return f"{safe}.jsonl"


@dataclass
class RolloutContext:
    """Everything one rollout of an agent loop sees.

    ``request`` is the init request, ``tools`` whatever ``get_tools`` returned, ``llm`` the model client
    (:class:`LLMClientProtocol`). The underscore fields are bookkeeping set by the server (start time, tool
    counters, debug directory).
    """

    request: RolloutRequest
    tools: list[OpenAIFunctionToolSchema]
    llm: LLMClientProtocol
    _start_time: float = field(default=0.0, repr=False)
    _tool_latency_ms: float = field(default=0.0, repr=False)
    _num_tool_calls: int = field(default=0, repr=False)
    _debug_dir: Optional[str] = field(default=None, repr=False)

    async def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> CompletionsResult:
        """One model turn: ``await self.llm.chat_completions(messages, **kwargs)``, unchanged.

        Pass the full, append-only conversation; with ``OsmosisLLMClient`` only ``model``, ``temperature``,
        ``top_p``, ``max_tokens``, ``stop`` and ``logprobs`` reach the controller.
        """
        return await self.llm.chat_completions(messages, **kwargs)

    def complete(
        self,
        final_messages: list[dict[str, Any]],
        finish_reason: str = "stop",
        reward: Optional[float] = None,
    ) -> RolloutResult:
        """A COMPLETED result with the metrics so far and an optional ``reward`` (not type-checked)."""
        return RolloutResult(
            status="COMPLETED",
            final_messages=final_messages,
            finish_reason=finish_reason,
            metrics=self._build_metrics(),
            reward=reward,
        )

    def error(self, error_message: str, final_messages: Optional[list[dict[str, Any]]] = None) -> RolloutResult:
        """An ERROR result: ``finish_reason="error"``, the given messages (or ``[]``), metrics, no reward."""
        return RolloutResult(
            status="ERROR",
            final_messages=final_messages or [],
            finish_reason="error",
            error_message=error_message,
            metrics=self._build_metrics(),
        )

    def record_tool_call(self, latency_ms: float = 0.0) -> None:
        """Count one tool call and add its latency to the metrics."""
        self._num_tool_calls += 1
        self._tool_latency_ms += latency_ms

    @property
    def debug_enabled(self) -> bool:
        """Whether the server was started with a debug directory (``log_event`` writes only then)."""
        return self._debug_dir is not None

    def _get_debug_file_path(self) -> Optional[str]:
        if self._debug_dir is None:
            return None
        return os.path.join(self._debug_dir, _debug_file_name(self.request.rollout_id))

    def log_event(self, event_type: str, **data: Any) -> None:
        """Append ``{"event": event_type, "rollout_id": ..., **data}`` as one JSON line to
        ``<debug_dir>/<rollout_id>.jsonl``. No-op without a debug directory; values that are not JSON become
        ``str``; I/O errors are logged as warnings, never raised."""
        path = self._get_debug_file_path()
        if path is None:
            return
        try:
            os.makedirs(self._debug_dir or ".", exist_ok=True)
            event = {"event": event_type, "rollout_id": self.request.rollout_id, **data}
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(event, default=str) + "\n")
        except OSError as exc:
            logger.warning("Failed to write debug event to %s: %s", path, exc)

    def _build_metrics(self) -> RolloutMetrics:
        llm_metrics = self.llm.get_metrics()
        total_latency_ms = (time.monotonic() - self._start_time) * 1000 if self._start_time > 0 else 0.0
        return RolloutMetrics(
            total_latency_ms=total_latency_ms,
            llm_latency_ms=llm_metrics.llm_latency_ms,
            tool_latency_ms=self._tool_latency_ms,
            num_llm_calls=llm_metrics.num_llm_calls,
            num_tool_calls=self._num_tool_calls,
            prompt_tokens=llm_metrics.prompt_tokens,
            response_tokens=llm_metrics.response_tokens,
        )


class RolloutAgentLoop(ABC):
    """Base class of a legacy agent loop.

    Every subclass — intermediate abstract bases included — must define a truthy class attribute ``name``, or
    class creation raises ``TypeError`` (upstream rule, kept). Implement ``get_tools(request)`` (sync; tool
    objects or dicts) and ``async run(ctx) -> RolloutResult``.
    """

    name: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Upstream meant to skip abstract classes, but ABCMeta sets __abstractmethods__ only after this hook
        # runs, so the skip never triggers: every subclass needs a name. Kept for compatibility.
        if getattr(cls, "__abstractmethods__", None):
            return
        if not getattr(cls, "name", None):
            raise TypeError(f"Agent loop class {cls.__name__} must define a 'name' class attribute")

    @abstractmethod
    def get_tools(self, request: RolloutRequest) -> list[OpenAIFunctionToolSchema]:
        """The tools offered to the model for this rollout (sent to the controller in the InitResponse)."""

    @abstractmethod
    async def run(self, ctx: RolloutContext) -> RolloutResult:
        """Run one rollout; return ``ctx.complete(...)`` or ``ctx.error(...)``."""

    def get_default_tools(self) -> list[OpenAIFunctionToolSchema]:
        """``get_tools`` for a placeholder request (rollout_id "discovery", server_url "http://localhost")."""
        return self.get_tools(
            RolloutRequest(
                rollout_id="discovery", server_url="http://localhost", messages=[], completion_params={}
            )
        )
