"""The routes operators and orchestrators use, the same on every app the project builds (legacy, workflow, mixed):

- ``GET /metrics`` — Prometheus exposition (:mod:`osmosis_compat.observability.metrics`). With a server API key
  it needs the key like the other routes (``Authorization: Bearer <key>``; Prometheus: ``authorization:
  credentials``), since the figures name the agents;
- ``GET /livez`` — liveness: 200 ``{"status": "alive"}`` whenever the process answers HTTP at all (a wedged event
  loop answers nothing, and the orchestrator restarts it). Never needs a key;
- ``GET /readyz`` — readiness: 200 ``{"status": "ready"}`` only when start-up finished, the server is not
  draining and its rollout store answers (a ``PING`` bounded by ``READY_STORE_TIMEOUT_S``); 503 with
  ``{"status": "not ready", "reasons": […]}`` otherwise, so a load balancer stops sending it rollouts while it
  drains or while Redis is unreachable. Never needs a key.

``/health`` stays what controllers read (their protocol's body, unchanged). Kubernetes manifest: docs/serving.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from osmosis_compat.observability import metrics, otel
from osmosis_compat.runtime.engine import RolloutEngine

from .protocol import Guard

__all__ = [
    "OPERATIONS_PATHS",
    "READY_STORE_TIMEOUT_S",
    "add_operations_routes",
    "metrics_response",
    "readiness",
    "start_observability",
]

#: Paths an API-key middleware must let through unguarded (probes carry no key).
OPERATIONS_PATHS = ("/livez", "/readyz")
READY_STORE_TIMEOUT_S = 2.0


def start_observability() -> None:
    """At an app's start-up: create the metrics (the one place ``prometheus_client`` is imported, off the import
    path of agent files) and decide whether spans are exported (:func:`~osmosis_compat.observability.otel.tracer_provider`)."""
    metrics.get()
    otel.tracer_provider()


async def readiness(engines: Iterable[RolloutEngine]) -> list[str]:
    """Why the server is not ready (empty: ready): not started, draining, or a store that does not answer."""
    reasons: list[str] = []
    stores: dict[int, Any] = {}
    for engine in engines:
        if not engine.ready:
            reasons.append("shutting down" if not engine.accepting else "starting")
        stores.setdefault(id(engine.store), engine.store)
    for store in stores.values():
        try:
            await asyncio.wait_for(store.ping(), READY_STORE_TIMEOUT_S)
        except Exception as exc:
            reasons.append(f"rollout store unreachable: {type(exc).__name__}")
    return sorted(set(reasons))


def metrics_response() -> Response:
    """``GET /metrics``'s answer."""
    body, content_type = metrics.render()
    return Response(content=body, media_type=content_type)


def add_operations_routes(app: Any, engines: Iterable[RolloutEngine], *, guard: Guard | None = None) -> None:
    """Add ``/metrics`` (behind ``guard``), ``/livez`` and ``/readyz`` to ``app`` for the rollouts of ``engines``."""
    engines = tuple(engines)

    async def metrics_route(request: Request) -> Any:
        denied = guard(request) if guard is not None else None
        return denied or metrics_response()

    async def livez() -> Any:
        return JSONResponse({"status": "alive"})

    async def readyz() -> Any:
        reasons = await readiness(engines)
        if reasons:
            return JSONResponse({"status": "not ready", "reasons": reasons}, status_code=503)
        return JSONResponse({"status": "ready"})

    app.add_api_route("/metrics", metrics_route, methods=["GET"], include_in_schema=False)
    app.add_api_route("/livez", livez, methods=["GET"], include_in_schema=False)
    app.add_api_route("/readyz", readyz, methods=["GET"], include_in_schema=False)
