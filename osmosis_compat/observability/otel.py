"""The process's OpenTelemetry setup, shared by everything in osmosis-compat that exports to OpenTelemetry.

Needs the optional extra: ``pip install 'osmosis-compat[opentelemetry]'`` (``opentelemetry-sdk`` and the OTLP/HTTP
exporter). Configuration is the standard ``OTEL_*`` environment variables, read by the SDK and the exporter
themselves: ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (where to send),
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME`` (default ``osmosis-compat``), ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER`` …, and ``OTEL_SDK_DISABLED=true`` to turn it all off.

:func:`tracer_provider` decides once per process:

- a tracer provider someone already installed globally (your own setup, or Strands' ``StrandsTelemetry``) is used
  as it is — osmosis-compat never replaces it;
- else, with the extra installed and an OTLP endpoint set, an SDK ``TracerProvider`` exporting over OTLP/HTTP
  (batched) is installed globally, so the frameworks' own spans (Strands) land in the same traces;
- else ``None``: tracing is off and costs nothing.

Other signals (e.g. OTLP log records) take their endpoint and resource from the same variables; :func:`resource`
is the one resource every provider made here uses.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

__all__ = ["available", "enabled", "resource", "shutdown", "tracer", "tracer_provider"]

logger = logging.getLogger("osmosis_compat.observability")

_lock = threading.Lock()
_decided = False
_provider: Any = None
_owned: Any = None  # a provider this module installed (flushed on shutdown)
_TRACER_NAME = "osmosis_compat"


def available() -> bool:
    """Whether the ``opentelemetry`` extra (the SDK and the OTLP/HTTP exporter) is installed."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


def _disabled() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def _endpoint_set() -> bool:
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def resource() -> Any:
    """The SDK ``Resource`` for this process: ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, with
    ``service.name`` defaulting to ``osmosis-compat``."""
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    base = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "osmosis-compat"})
    return base.merge(OTELResourceDetector().detect()) if os.environ.get("OTEL_RESOURCE_ATTRIBUTES") else base


def tracer_provider() -> Any:
    """The tracer provider osmosis-compat's spans go to, or ``None`` when tracing is off (module docstring)."""
    global _decided, _provider, _owned
    if _decided:
        return _provider
    with _lock:
        if _decided:
            return _provider
        _provider = _decide()
        _decided = True
        return _provider


def _decide() -> Any:
    global _owned
    if _disabled():
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider) and type(current).__name__ != "NoOpTracerProvider":
        return current  # someone set one up: use theirs
    if not _endpoint_set():
        return None
    if not available():
        logger.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed: no traces are exported "
            "(pip install 'osmosis-compat[opentelemetry]')"
        )
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=resource())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint, headers … from OTEL_* itself
    trace.set_tracer_provider(provider)
    _owned = provider
    return provider


def enabled() -> bool:
    """Whether spans are recorded (a provider is in use)."""
    return tracer_provider() is not None


def tracer() -> Any:
    """osmosis-compat's tracer, or ``None`` when tracing is off."""
    provider = tracer_provider()
    return None if provider is None else provider.get_tracer(_TRACER_NAME)


def shutdown() -> None:
    """Flush and stop what this module installed (at server shutdown); a provider of yours is left alone."""
    if _owned is not None:
        try:
            _owned.force_flush()
        except Exception:  # pragma: no cover - an exporter that cannot reach its collector
            logger.debug("flushing spans failed", exc_info=True)


def _reset_for_tests() -> None:
    """Forget the decision (tests set ``OTEL_*`` variables per test)."""
    global _decided, _provider, _owned
    with _lock:
        _decided, _provider, _owned = False, None, None
