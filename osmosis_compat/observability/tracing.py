"""The spans of a rollout (with the ``opentelemetry`` extra and an OTLP endpoint, :mod:`.otel`).

- ``rollout`` — one per rollout, from admission to its end (attributes ``osmosis.rollout_id``,
  ``osmosis.protocol``, ``osmosis.agent``, ``osmosis.outcome``); a child of the controller's trace when the
  admission request carried a W3C ``traceparent``;
- ``chat`` — each model call to the controller's chat endpoint (``http.request.method``, ``url.full`` without
  its query, ``http.response.status_code``), unless a framework's own span for that call is current (Strands
  records its model calls itself: its spans nest under ``rollout`` and are not duplicated);
- ``execute_tool <name>`` — each tool call a legacy loop runs through ``execute_tool_calls``;
- ``callback <kind>`` — each callback delivery (legacy ``completed``, 0.2.x ``completion`` / ``grader``);
- ``poll`` — each ``GET /rollout/{id}/result``, a child of the rollout's span when it runs in this process.

Every helper is a no-op (``nullcontext``) when tracing is off, so call sites need no condition.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any

from . import otel

__all__ = ["chat_span_wanted", "current_span_context", "incoming", "span", "start_span", "tool_span"]

_STRANDS_SCOPE = "strands.telemetry.tracer"


@contextlib.contextmanager
def incoming(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Inside the block, the trace context a request's ``traceparent`` / ``tracestate`` names is current, so a
    rollout task started there continues the controller's trace."""
    if headers is None or "traceparent" not in headers or not otel.enabled():
        yield
        return
    from opentelemetry import context as otel_context
    from opentelemetry.propagate import extract

    token = otel_context.attach(extract({k: v for k, v in headers.items() if k in ("traceparent", "tracestate")}))
    try:
        yield
    finally:
        otel_context.detach(token)


@contextlib.contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None, *, kind: str = "internal", parent: Any = None) -> Iterator[Any]:
    """A span named ``name`` (current for the block), or nothing when tracing is off. ``parent`` is a span
    context to hang it under instead of the current one. The span records an escaping exception and ends with the
    block; ``yield`` gives it (``None`` when off) so the block can add attributes."""
    tracer = otel.tracer()
    if tracer is None:
        yield None
        return
    from opentelemetry import trace

    kinds = {"internal": trace.SpanKind.INTERNAL, "client": trace.SpanKind.CLIENT, "server": trace.SpanKind.SERVER}
    context = None
    if parent is not None:
        context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
    with tracer.start_as_current_span(name, context=context, kind=kinds[kind], attributes=dict(attributes or {})) as current:
        yield current


def start_span(name: str, attributes: Mapping[str, Any] | None = None, *, kind: str = "client") -> Any:
    """A started span that is *not* made current (the caller ends it with ``.end()``, possibly from another
    context, e.g. when a streamed reply is closed), or ``None`` when tracing is off."""
    tracer = otel.tracer()
    if tracer is None:
        return None
    from opentelemetry import trace

    kinds = {"internal": trace.SpanKind.INTERNAL, "client": trace.SpanKind.CLIENT, "server": trace.SpanKind.SERVER}
    return tracer.start_span(name, kind=kinds[kind], attributes=dict(attributes or {}))


def current_span_context() -> Any:
    """The current span's context (to hang later spans under it), or ``None`` when tracing is off."""
    if not otel.enabled():
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return context if context.is_valid else None


def chat_span_wanted() -> bool:
    """Whether a model call made now gets a ``chat`` span: tracing is on and no framework span (Strands, which
    records the call itself) is current."""
    if not otel.enabled():
        return False
    from opentelemetry import trace

    current = trace.get_current_span()
    scope = getattr(current, "instrumentation_scope", None)
    return getattr(scope, "name", None) != _STRANDS_SCOPE


def tool_span(name: str) -> Any:
    """The span of one legacy tool call (``execute_tool <name>``)."""
    return span(f"execute_tool {name}", {"gen_ai.tool.name": name})


def now_ns() -> int:
    return time.time_ns()
