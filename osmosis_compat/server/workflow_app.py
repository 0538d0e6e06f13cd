"""``create_rollout_server``: the ``/rollout`` protocols of 0.2.31 (callbacks, spec workflow-api §3) and 0.3.8
(polling, spec polling-protocol.md) on the shared engine: the app composes two peers, the 0.2.31
:class:`~.workflow_protocol.WorkflowCallbacks` and the 0.3.8 :class:`~.polling.PollingProtocol`. ``POST /rollout``
is shared: a body with ``completion_callback_url`` goes to the first, one without it (what a 0.3.8 controller
sends) to the second, which holds the result for ``GET /rollout/{id}/result``.

Deliberate differences from upstream 0.2.31 (docs/workflow-api.md):

- a ``rollout_id`` already running is not started twice (upstream ran both and duplicated every callback);
  once it has finished, the same id may be submitted again, as upstream;
- the error path never posts a second completion/grader callback after one was delivered;
- graceful shutdown drains in-flight rollouts for a bounded time, then sends each one failure callbacks
  (upstream dropped them silently);
- a sample holding a value JSON cannot carry (bytes, datetime, NaN, infinity) gives a grader failure callback
  naming the value's path (upstream's POST raised and the rollout ended as "Internal server error");
- trajectories are not saved to ``~/.osmosis`` (ATIF persistence is out of scope).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request

from osmosis_compat.runtime.engine import RolloutEngine
from osmosis_compat.runtime.http import aclose_clients
from osmosis_compat.runtime.store import RolloutStore
from osmosis_compat.runtime.wirecheck import HostAllowList, resolve_controller_hosts
from osmosis_compat.server.errors import install_error_handlers
from osmosis_compat.server.executors import WorkflowExecutor
from osmosis_compat.server.polling import (
    DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    DEFAULT_RESULT_RETENTION_SEC,
    DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    PollingProtocol,
    PollingSettings,
    process_identity,
)
from osmosis_compat.server.operations import OPERATIONS_PATHS, add_operations_routes, start_observability
from osmosis_compat.server.protocol import add_rollout_entry
from osmosis_compat.server.security import bearer_guard, callback_auth_notice, route_path
from osmosis_compat.server.workflow_protocol import INTERNAL_ERROR_MESSAGE, SHUTDOWN_ERROR_MESSAGE, WorkflowCallbacks
from osmosis_compat.workflow.backend.base import ExecutionBackend

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT_SECONDS",
    "INTERNAL_ERROR_MESSAGE",
    "SHUTDOWN_ERROR_MESSAGE",
    "create_rollout_server",
]

logger = logging.getLogger("osmosis_ai.rollout.server.app")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DEFAULT_DRAIN_TIMEOUT_SECONDS = 10.0


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)


def _user_lifespan(lifespan: Any, app: FastAPI) -> AbstractAsyncContextManager[Any]:
    """Open the user's ``lifespan`` whatever shape FastAPI/Starlette accept: a callable returning an async (or
    sync) context manager, or an (async) generator function."""
    if inspect.isasyncgenfunction(lifespan):
        return asynccontextmanager(lifespan)(app)
    if inspect.isgeneratorfunction(lifespan):
        from contextlib import contextmanager

        return _sync_to_async(contextmanager(lifespan)(app))
    manager = lifespan(app)
    if isinstance(manager, AbstractContextManager) and not isinstance(manager, AbstractAsyncContextManager):
        return _sync_to_async(manager)
    return manager


@asynccontextmanager
async def _sync_to_async(manager: AbstractContextManager[Any]) -> AsyncIterator[Any]:
    with manager as state:
        yield state


def create_rollout_server(
    *,
    backend: ExecutionBackend,
    lifespan: Callable[[FastAPI], Any] | None = None,
    configure_logging: bool = True,
    result_wait_timeout_sec: float = DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    polling_lease_timeout_sec: float = DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    result_retention_sec: float = DEFAULT_RESULT_RETENTION_SEC,
    api_key: str | None = None,
    drain_timeout_seconds: float = DEFAULT_DRAIN_TIMEOUT_SECONDS,
    store: RolloutStore | None = None,
    max_pending: int | None = None,
    keyless_callbacks: bool = False,
    controller_hosts: str | Sequence[str] | HostAllowList | None = None,
    announce_auth: bool = True,
) -> FastAPI:
    """Build the rollout server app for ``backend``: both ``/rollout`` protocols on one engine.

    Routes: ``GET /health``; ``POST /rollout`` — a body with ``completion_callback_url`` is a 0.2.31 admission
    (200 ``{}``, results to the callbacks), one without it a 0.3.8 admission (202 + polling lease);
    ``GET /rollout/{rollout_id}/result`` and ``POST /rollout/cancel`` (0.3.8).

    0.3.8 keyword arguments: ``result_wait_timeout_sec`` (long-poll wait, 30), ``polling_lease_timeout_sec`` (120,
    must exceed the wait), ``result_retention_sec`` (how long a finished result is held, 900), ``api_key`` (every
    route then requires ``Authorization: Bearer <api_key>``, else 401). ``lifespan`` is the user's FastAPI
    lifespan (entered after the engine starts, left after in-flight rollouts drained); ``configure_logging=True``
    sets up INFO logging only if the root logger has no handler.

    osmosis-compat additions: ``drain_timeout_seconds`` bounds how long shutdown waits for in-flight rollouts
    before ending them (failure callbacks, or a held ``failure`` result); ``store`` is where rollout state lives
    (default in memory; a shared store lets several processes serve as one); ``max_pending`` caps admitted,
    unfinished rollouts (429 + ``Retry-After`` beyond it; default: no cap, as upstream's ``LocalBackend``).

    Security (docs/serving.md, "Keys and hosts"): a 0.2.31 callback controller sends no key, so with ``api_key`` its
    bodies get 401 — said in a logged warning at creation (``announce_auth=False`` leaves that to a caller that
    hosts several apps). ``keyless_callbacks=True`` deliberately admits bodies with callback URLs without the key
    (polling bodies and every other route still need it). ``controller_hosts`` (``"a,b"`` or a list; default
    ``$OSMOSIS_COMPAT_CONTROLLER_HOSTS``; empty: any host) restricts the hosts the chat and callback URLs of an
    admission may name (422 otherwise).
    """
    if configure_logging:
        _configure_logging()
    if api_key is not None and not api_key.strip():
        raise ValueError("api_key must be non-empty when provided")
    allow_list = resolve_controller_hosts(controller_hosts)
    if api_key is not None and announce_auth:
        logger.warning(callback_auth_notice(["/rollout"], keyless_callbacks=keyless_callbacks, allow_list=allow_list))
    settings = PollingSettings(result_wait_timeout_sec, polling_lease_timeout_sec, result_retention_sec)
    identity = process_identity()
    engine = RolloutEngine(
        max_concurrent=None,
        keep_completed=False,
        drain_timeout_seconds=drain_timeout_seconds,
        max_pending=max_pending,
        store=store,
        instance_id=identity.process_id,
    )
    agent = backend_name(backend)
    callbacks = WorkflowCallbacks(engine, backend, agent=agent, allow_list=allow_list)
    polling = PollingProtocol(
        engine,
        WorkflowExecutor(backend, process_id=identity.process_id),
        settings,
        identity=identity,
        allow_list=allow_list,
        agent=agent,
    )

    @asynccontextmanager
    async def server_lifespan(app: FastAPI) -> AsyncIterator[Any]:
        start_observability()
        await engine.store.start()
        engine.start()
        try:
            if lifespan is None:
                yield
            else:
                async with _user_lifespan(lifespan, app) as state:
                    try:
                        yield state
                    finally:
                        # Drain before the user's resources close: in-flight workflows may still use them.
                        await engine.shutdown()
        finally:
            await engine.shutdown()
            await polling.close()
            shutdown = getattr(backend, "shutdown", None)
            if shutdown is not None:
                try:
                    await shutdown()
                except Exception:
                    logger.exception("The backend's shutdown() failed")
            await engine.store.close()
            await aclose_clients()

    app = FastAPI(title="Osmosis rollout server (workflow)", lifespan=server_lifespan)
    install_error_handlers(app)
    app.state.rollout_engine = engine
    app.state.rollout_backend = backend
    app.state.rollout_polling = polling
    app.state.rollout_protocols = (callbacks, polling)
    app.state.rollout_engines = (engine,)
    require_key = bearer_guard(api_key)
    if api_key is not None:

        @app.middleware("http")
        async def authenticate(request: Request, call_next: Any) -> Any:
            path = route_path(request.scope)
            if keyless_callbacks and request.method == "POST" and path == "/rollout":
                return await call_next(request)  # the route checks the key unless the body has callback URLs
            if path in OPERATIONS_PATHS:
                return await call_next(request)  # probes carry no key and reveal nothing
            return require_key(request) or await call_next(request)

    @app.get("/health")
    async def health() -> Any:
        payload = dict(backend.health())
        payload.update(polling.health_fields())
        return payload

    # With keyless_callbacks the middleware lets POST /rollout through: the route checks polling bodies itself.
    add_rollout_entry(app, polling, callbacks, guard=require_key if keyless_callbacks else None, guard_callbacks=False)
    polling.add_routes(app)
    add_operations_routes(app, [engine])  # /metrics behind the middleware's key check, the probes open
    return app


def backend_name(backend: Any) -> str:
    """The agent name of a workflow backend in metrics, logs and spans: its config's ``name``, else its workflow
    class's name, else the backend's class name."""
    config = getattr(backend, "workflow_config", None)
    name = getattr(config, "name", None)
    if name:
        return str(name)
    workflow = getattr(backend, "workflow_cls", None)
    return getattr(workflow, "__name__", None) or type(backend).__name__
