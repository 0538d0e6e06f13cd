"""``create_app``: the legacy RolloutServer (spec/legacy-protocol.md §1.2, §1.4, §2.13) on the shared engine.

Request flow: FastAPI validates the body (422 first) → bearer check (401) → the engine admits the rollout under
``idempotency_key or rollout_id`` (a duplicate gets the leader's InitResponse, 202) → ``prepare`` calls
``get_tools`` and normalises the tool list → 202 ``InitResponse`` → the agent runs in the background and posts
exactly one final callback (or the fallback ERROR callback).

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

import asyncio
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from osmosis_compat.legacy.base import RolloutAgentLoop, RolloutContext
from osmosis_compat.legacy.client import OsmosisLLMClient
from osmosis_compat.legacy.config import RolloutSettings, get_settings
from osmosis_compat.legacy.schemas import RolloutRequest, normalize_tools
from osmosis_compat.legacy.state import AppState
from osmosis_compat.runtime.auth import extract_bearer_token, keys_match
from osmosis_compat.runtime.callbacks import CallbackLedger
from osmosis_compat.runtime.engine import Admission, EngineClosedError
from osmosis_compat.runtime.bridge import aclose_bridge
from osmosis_compat.runtime.http import aclose_clients
from osmosis_compat.runtime.store import RolloutStore
from osmosis_compat.runtime.wirecheck import HostAllowList, resolve_controller_hosts
from osmosis_compat.server.errors import install_error_handlers
from osmosis_compat.server.executors import LoopExecutor
from osmosis_compat.server.security import controller_url_rejection
from osmosis_compat.server.polling import (
    DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    DEFAULT_RESULT_RETENTION_SEC,
    DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    PollingRollouts,
    PollingSettings,
    bearer_guard,
    process_identity,
)
from osmosis_compat.workflow.types.protocol import RolloutInitRequest as PollingInitRequest

__all__ = ["create_app"]

logger = logging.getLogger("osmosis_ai.rollout.server")

# FastAPI builds a body model's pydantic TypeAdapter when the route is created, with pydantic's "'alias' ... has no
# effect" warning suppressed. RolloutRequest is deferred (defer_build keeps agent imports cheap), so its adapter
# was built at the first request instead, outside that suppression, and the warning reached every user of
# create_app. Serving loads FastAPI anyway: build it with the route (tests/server/test_no_library_warnings.py).
RolloutRequest.model_config["defer_build"] = False

_UNAUTHORIZED = {"detail": "Invalid or missing API key"}
_CALLBACK_BODY_ON_LEGACY = (
    "this server runs a legacy agent loop: it speaks the legacy protocol (POST /v1/rollout/init) and the 0.3.8 "
    "polling protocol (POST /rollout without callback URLs). A 0.2.x callback controller reaches the loop through "
    "the adapter: osmosis-compat serve --expose workflow (or both)."
)
SHUTDOWN_ERROR_MESSAGE = "Rollout aborted: the rollout server shut down before the agent finished"
FINAL_CALLBACK = "final"


class GetToolsError(Exception):
    """``get_tools`` raised or returned an unusable tool list; the init request fails and nothing runs."""


class _SharedJSON:
    """One shared object per distinct JSON value (bounded): the tool lists of init answers.

    Every finished legacy rollout keeps its init answer for the record TTL (1 h), so that a duplicate init gets
    it. The tools are most of that answer (~3-4 KiB of dicts per rollout for a four-tool agent) and nearly always
    the same list: kept once, thousands of records cost a few hundred bytes each (issue 12, bench/legacy_memory.py).
    The values are only ever encoded, never mutated, so sharing them is safe.
    """

    def __init__(self, max_entries: int = 256) -> None:
        self._by_text: dict[str, Any] = {}
        self._max_entries = max_entries

    def intern(self, value: Any) -> Any:
        text = json.dumps(value, separators=(",", ":"))  # key order kept: shared only when identical
        shared = self._by_text.get(text)
        if shared is None:
            if len(self._by_text) >= self._max_entries:  # get_tools varies per request: stop sharing, stay bounded
                return value
            shared = self._by_text[text] = value
        return shared


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
    client_settings = settings.client
    polling = PollingRollouts(
        engine, LoopExecutor(agent_loop, client_settings=client_settings), polling_settings, identity=identity
    )

    if credentials is not None:
        logger.warning(
            "create_app(credentials=...): Osmosis Platform registration is not part of osmosis-compat; "
            "the server will not register itself."
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        logger.info("Starting RolloutServer for agent loop %r", agent_name)
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

    tool_lists = _SharedJSON()

    async def prepare(rollout_request: RolloutRequest) -> tuple[dict[str, Any], Any]:
        try:
            raw_tools = agent_loop.get_tools(rollout_request)
            if inspect.isawaitable(raw_tools):
                raw_tools = await raw_tools
        except Exception as exc:
            raise GetToolsError(f"get_tools() raised {type(exc).__name__}: {exc}") from exc
        try:
            tools = tool_lists.intern(normalize_tools(raw_tools))
        except (TypeError, ValueError) as exc:
            raise GetToolsError(f"get_tools() returned an invalid tool list: {exc}") from exc
        return {"rollout_id": rollout_request.rollout_id, "tools": tools}, raw_tools

    async def report(llm: OsmosisLLMClient, rollout_id: str, result: Any, failure: Exception | None) -> None:
        """The rollout's one final callback: the agent's result, or — if the agent raised, returned something
        unusable, or the callback failed — the fallback ERROR callback."""
        try:
            if failure is None:
                try:
                    await llm.complete_rollout(
                        status=result.status,
                        final_messages=result.final_messages,
                        finish_reason=result.finish_reason,
                        error_message=result.error_message,
                        metrics=result.metrics,
                        reward=result.reward,
                    )
                    logger.info("Rollout completed: rollout_id=%s status=%s", rollout_id, result.status)
                    return
                except Exception as exc:
                    failure = exc
            logger.error("Rollout %s failed: %s", rollout_id, failure, exc_info=failure)
            await llm.complete_rollout(
                status="ERROR", final_messages=[], finish_reason="error", error_message=str(failure)
            )
        except Exception:
            # The fallback callback itself failed: nothing more can reach TrainGate.
            logger.exception("Rollout infrastructure error: rollout_id=%s", rollout_id)

    async def run(rollout_request: RolloutRequest, raw_tools: Any, admission: Admission) -> None:
        rollout_id = rollout_request.rollout_id
        ledger = admission.context["ledger"] = CallbackLedger(rollout_id)
        try:
            llm = OsmosisLLMClient(
                server_url=rollout_request.server_url,
                rollout_id=rollout_id,
                api_key=rollout_request.api_key,
                settings=client_settings,
            )
        except Exception:
            logger.exception("Rollout infrastructure error: rollout_id=%s", rollout_id)
            return
        admission.context["llm"] = llm
        result: Any = None
        failure: Exception | None = None
        try:
            ctx = RolloutContext(
                request=rollout_request,
                tools=raw_tools,
                llm=llm,
                _start_time=admission.admitted_at,
                _debug_dir=debug_dir,
            )
            result = await agent_loop.run(ctx)
        except Exception as exc:
            failure = exc
        # The final callback runs as its own task: if shutdown cancels this rollout while the controller is still
        # answering it, the callback is not cut off, and abort() waits for it instead of also sending ERROR.
        await asyncio.shield(ledger.start(FINAL_CALLBACK, report(llm, rollout_id, result, failure)))

    async def abort(rollout_request: RolloutRequest, admission: Admission) -> None:
        ledger = admission.context.get("ledger")
        if ledger is not None and ledger.was_started(FINAL_CALLBACK):
            # The callback that started wins: a COMPLETED (or the agent's ERROR) already on its way is not followed
            # by "server shut down".
            logger.info("Shutdown: rollout %s is delivering its final callback; waiting for it", rollout_request.rollout_id)
            await ledger.settle(FINAL_CALLBACK)
            return
        llm = admission.context.get("llm") or OsmosisLLMClient(
            server_url=rollout_request.server_url,
            rollout_id=rollout_request.rollout_id,
            api_key=rollout_request.api_key,
            settings=client_settings,
        )
        await llm.complete_rollout(
            status="ERROR", final_messages=[], finish_reason="error", error_message=SHUTDOWN_ERROR_MESSAGE
        )

    @app.post("/v1/rollout/init", status_code=202)
    async def init_rollout(rollout_request: RolloutRequest, request: Request) -> Any:
        if api_key is not None:
            token = extract_bearer_token(request.headers.get("authorization"))
            if not keys_match(token, api_key):
                logger.warning("Rejected /v1/rollout/init: invalid or missing API key")
                return JSONResponse(status_code=401, content=_UNAUTHORIZED)
        rejected = controller_url_rejection(allow_list, {"server_url": rollout_request.server_url})
        if rejected is not None:
            return rejected
        key = rollout_request.idempotency_key or rollout_request.rollout_id
        try:
            submission = await submit(key, rollout_request)
        except GetToolsError as exc:
            logger.error("Init %s rejected, no rollout started: %s", rollout_request.rollout_id, exc)
            return JSONResponse(status_code=500, content={"detail": str(exc)})
        except EngineClosedError as exc:
            return JSONResponse(status_code=503, content={"detail": str(exc)})
        if submission.value is None:
            # The key belongs to a rollout the 0.3.8 polling route admitted (it has no init answer): answering 202
            # `null` would accept a rollout that never runs.
            return JSONResponse(
                status_code=409,
                content={"detail": f"{key!r} is already registered by a rollout of the polling protocol (POST /rollout)"},
            )
        # Duplicates get the leader's body, including the leader's rollout_id (upstream behaviour).
        return JSONResponse(status_code=202, content=submission.value)

    async def submit(key: str, rollout_request: RolloutRequest) -> Any:
        raw_tools: list[Any] = []

        async def do_prepare() -> dict[str, Any]:
            # Duplicates are told the init answer (kept in the store); only the leader needs the raw tools.
            init_body, tools = await prepare(rollout_request)
            raw_tools.append(tools)
            return init_body

        return await engine.submit(
            key,
            prepare=do_prepare,
            run=lambda admission: run(rollout_request, raw_tools[0], admission),
            abort=lambda admission: abort(rollout_request, admission),
            protocol="legacy",
        )

    def platform_health(request: Request) -> JSONResponse:
        if api_key is None:
            return JSONResponse(status_code=404, content={"detail": "Not found"})
        token = extract_bearer_token(request.headers.get("authorization"))
        if not keys_match(token, api_key):
            return JSONResponse(status_code=401, content=_UNAUTHORIZED)
        return JSONResponse(health_body())

    app.add_api_route("/health", lambda: JSONResponse(health_body()), methods=["GET"])
    app.add_api_route("/platform/health", platform_health, methods=["GET"])

    polling_guard = bearer_guard(api_key)

    async def polling_rollout(rollout_request: PollingInitRequest, request: Request) -> Any:
        denied = polling_guard(request)
        if denied is not None:
            return denied
        if rollout_request.uses_callbacks:
            return JSONResponse(status_code=422, content={"detail": _CALLBACK_BODY_ON_LEGACY})
        rejected = controller_url_rejection(allow_list, {"chat_completions_url": rollout_request.chat_completions_url})
        if rejected is not None:
            return rejected
        return await polling.admit(rollout_request)

    app.add_api_route(
        "/rollout",
        polling_rollout,
        methods=["POST"],
        status_code=202,
        summary="Admit a rollout from a 0.3.8 polling controller (202 + lease)",
    )
    polling.add_result_routes(app, polling_guard)
    app.state.rollout_polling = polling
    return app
