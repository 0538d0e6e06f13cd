"""``create_app``: the legacy RolloutServer (spec/legacy-protocol.md §1.2, §1.4, §2.13) on the shared engine.

The app composes two peers over one engine: :class:`~.legacy_protocol.LegacyCallbacks` (``POST /v1/rollout/init``,
``GET /platform/health``; request flow in its module) and :class:`~.polling.PollingProtocol` with a
:class:`~.executors.LoopExecutor` (today's 0.3.8 controller: ``POST /rollout`` → 202 + lease, results long-polled).

Deliberate differences from upstream (docs/legacy-server.md):

- ``get_tools`` raising or returning an invalid tool list answers 500 with a JSON ``detail`` and **starts no
  rollout** (upstream started the agent although TrainGate got a 500);
- ``async def get_tools`` is awaited;
- tool JSON schemas reach TrainGate whole (``items``, ``additionalProperties``, ``default`` … kept);
- ``settings=`` applies to the rollouts' HTTP client;
- graceful shutdown drains in-flight rollouts for a bounded time, then sends each one an ERROR callback
  (upstream cancelled them silently) — unless its final callback had already started: that one is waited for and
  stands (one final callback, always).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from osmosis_compat.legacy.base import RolloutAgentLoop
from osmosis_compat.legacy.config import RolloutSettings, get_settings
from osmosis_compat.legacy.state import AppState
from osmosis_compat.runtime.bridge import aclose_bridge
from osmosis_compat.runtime.http import aclose_clients
from osmosis_compat.runtime.store import RolloutStore
from osmosis_compat.runtime.wirecheck import HostAllowList, resolve_controller_hosts
from osmosis_compat.server.errors import install_error_handlers
from osmosis_compat.server.executors import LoopExecutor
# FINAL_CALLBACK, SHUTDOWN_ERROR_MESSAGE and GetToolsError lived here before the protocols became peers: kept as names.
from osmosis_compat.server.legacy_protocol import FINAL_CALLBACK, SHUTDOWN_ERROR_MESSAGE, GetToolsError, LegacyCallbacks  # noqa: F401
from osmosis_compat.server.polling import (
    DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    DEFAULT_RESULT_RETENTION_SEC,
    DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    PollingProtocol,
    PollingSettings,
    process_identity,
)
from osmosis_compat.server.operations import add_operations_routes, start_observability
from osmosis_compat.server.protocol import add_rollout_entry
from osmosis_compat.server.security import bearer_guard, legacy_guard

__all__ = ["create_app"]

logger = logging.getLogger("osmosis_ai.rollout.server")

_CALLBACK_BODY_ON_LEGACY = (
    "this server runs a legacy agent loop: it speaks the legacy protocol (POST /v1/rollout/init) and the 0.3.8 "
    "polling protocol (POST /rollout without callback URLs). A 0.2.x callback controller reaches the loop through "
    "the adapter: osmosis-compat serve --expose workflow (or both)."
)


def create_app(
    agent_loop: RolloutAgentLoop,
    max_concurrent: int | None = None,
    record_ttl_seconds: float | None = None,
    settings: RolloutSettings | None = None,
    credentials: Any = None,
    server_host: str | None = None,
    server_port: int | None = None,
    api_key: str | None = None,
    debug_dir: str | None = None,
    on_startup: Callable[[], Awaitable[None]] | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
    *,
    drain_timeout_seconds: float = 10.0,
    result_wait_timeout_sec: float = DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    polling_lease_timeout_sec: float = DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    result_retention_sec: float = DEFAULT_RESULT_RETENTION_SEC,
    store: RolloutStore | None = None,
    controller_hosts: str | Sequence[str] | HostAllowList | None = None,
) -> FastAPI:
    """Build the legacy RolloutServer app for ``agent_loop`` (upstream signature, plus a keyword-only drain bound).

    ``max_concurrent`` and ``record_ttl_seconds`` default to ``settings.server`` (100 rollouts, 3600 s);
    ``api_key=None`` disables inbound auth and hides ``/platform/health``. ``credentials``/``server_host``/
    ``server_port`` were for Osmosis Platform registration, which osmosis-compat does not perform (a warning is
    logged if credentials are given). ``drain_timeout_seconds`` bounds how long shutdown waits for in-flight
    rollouts before sending them ERROR callbacks.

    The app also answers today's controller, the 0.3.8 polling protocol (``POST /rollout`` → 202 + lease,
    ``GET /rollout/{rollout_id}/result``, ``POST /rollout/cancel``; see :mod:`.polling` and
    :class:`~.executors.LoopExecutor`), with 0.3.8's ``result_wait_timeout_sec`` / ``polling_lease_timeout_sec`` /
    ``result_retention_sec``. With ``api_key`` those routes require ``Authorization: Bearer <api_key>`` (401
    ``{"detail": "unauthorized"}`` otherwise, as 0.3.8). ``store`` is where rollout state lives (default: in memory).

    ``controller_hosts`` (``"a,b"`` or a list; default ``$OSMOSIS_COMPAT_CONTROLLER_HOSTS``; empty: any host)
    restricts the hosts an admission's ``server_url`` (legacy) or ``chat_completions_url`` (polling) may name: 422
    otherwise (docs/serving.md, "Keys and hosts").
    """
    settings = settings or get_settings()
    allow_list = resolve_controller_hosts(controller_hosts)
    agent_name = str(getattr(agent_loop, "name", type(agent_loop).__name__))
    polling_settings = PollingSettings(result_wait_timeout_sec, polling_lease_timeout_sec, result_retention_sec)
    identity = process_identity()
    state = AppState(
        max_concurrent=max_concurrent,
        record_ttl_seconds=record_ttl_seconds,
        settings=settings,
        agent_loop_name=agent_name,
        drain_timeout_seconds=drain_timeout_seconds,
        store=store,
        instance_id=identity.process_id,
    )
    engine = state.engine
    polling_guard = bearer_guard(api_key)
    polling = PollingProtocol(
        engine,
        LoopExecutor(agent_loop, client_settings=settings.client),
        polling_settings,
        identity=identity,
        allow_list=allow_list,
        guard=polling_guard,
        agent=agent_name,
    )

    def health_body() -> dict[str, Any]:
        # The legacy keys, plus what a 0.3.8 controller reads (capacity, process identity, admission state).
        return {
            "status": "healthy",
            "agent_loop": agent_name,
            "active_rollouts": engine.active_count,
            "completed_rollouts": engine.completed_count,
            "concurrency": engine.limiter.snapshot(),
            **polling.health_fields(),
        }

    legacy = LegacyCallbacks(
        engine,
        agent_loop,
        api_key=api_key,
        client_settings=settings.client,
        debug_dir=debug_dir,
        allow_list=allow_list,
        health=health_body,
    )

    if credentials is not None:
        logger.warning(
            "create_app(credentials=...): Osmosis Platform registration is not part of osmosis-compat; "
            "the server will not register itself."
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        logger.info("Starting RolloutServer for agent loop %r", agent_name)
        start_observability()
        await engine.store.start()
        engine.start()
        if on_startup is not None:
            await on_startup()
        try:
            yield
        finally:
            # Drain first, so on_shutdown never closes resources a still-running agent needs.
            await engine.shutdown()
            await polling.close()
            if on_shutdown is not None:
                await on_shutdown()
            await engine.store.close()
            await aclose_clients()
            await aclose_bridge()  # the streaming bridge of adapted workflows (no-op when none was started)

    app = FastAPI(
        title=f"Osmosis RolloutServer ({agent_name})",
        description="Remote rollout server for Osmosis agent training",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.state.rollout_state = state
    app.state.rollout_polling = polling
    app.state.rollout_protocols = (legacy, polling)
    app.state.rollout_engines = (engine,)
    app.add_api_route("/health", lambda: JSONResponse(health_body()), methods=["GET"])
    add_operations_routes(app, [engine], guard=legacy_guard(api_key))
    legacy.add_routes(app)
    add_rollout_entry(app, polling, guard=polling_guard, callbacks_missing=_CALLBACK_BODY_ON_LEGACY)
    polling.add_routes(app)
    return app
