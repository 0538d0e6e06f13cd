"""The legacy protocol (spec/legacy-protocol.md §1.2, §1.4): :class:`LegacyCallbacks`, one peer of
:mod:`.protocol`.

Request flow: FastAPI validates the body (422 first) → bearer check (401) → the engine admits the rollout under
``idempotency_key or rollout_id`` (a duplicate gets the leader's InitResponse, 202) → ``prepare`` calls
``get_tools`` and normalises the tool list → 202 ``InitResponse`` → the agent runs in the background and posts
exactly one final callback (or the fallback ERROR callback).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from osmosis_compat.legacy.base import RolloutAgentLoop, RolloutContext
from osmosis_compat.legacy.client import OsmosisLLMClient
from osmosis_compat.legacy.schemas import RolloutRequest, normalize_tools
from osmosis_compat.observability import tracing
from osmosis_compat.runtime.callbacks import CallbackLedger
from osmosis_compat.runtime.engine import Admission, RolloutEngine
from osmosis_compat.runtime.wirecheck import HostAllowList

from .protocol import AdmissionRefused, Guard, RolloutProtocol, conflict_response
from .security import legacy_guard

__all__ = ["FINAL_CALLBACK", "GetToolsError", "LegacyCallbacks", "SHUTDOWN_ERROR_MESSAGE"]

logger = logging.getLogger("osmosis_ai.rollout.server")

# FastAPI builds a body model's pydantic TypeAdapter when the route is created, with pydantic's "'alias' ... has no
# effect" warning suppressed. RolloutRequest is deferred (defer_build keeps agent imports cheap), so its adapter
# was built at the first request instead, outside that suppression, and the warning reached every user of
# create_app. Serving loads FastAPI anyway: build it with the route (tests/server/test_no_library_warnings.py).
RolloutRequest.model_config["defer_build"] = False

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


class LegacyCallbacks(RolloutProtocol):
    """The legacy TrainGate protocol for ``agent_loop`` over ``engine``: ``POST /v1/rollout/init`` and
    ``GET /platform/health`` (module docstring). ``api_key`` guards both (legacy 401 body); ``health`` is the body
    ``/platform/health`` answers with a valid key (the app's ``/health``)."""

    name = "legacy"

    def __init__(
        self,
        engine: RolloutEngine,
        agent_loop: RolloutAgentLoop,
        *,
        api_key: str | None = None,
        client_settings: Any = None,
        debug_dir: str | None = None,
        allow_list: HostAllowList | None = None,
        health: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(engine, agent=str(getattr(agent_loop, "name", type(agent_loop).__name__)), allow_list=allow_list)
        self.agent_loop = agent_loop
        self.api_key = api_key
        self.client_settings = client_settings
        self.debug_dir = debug_dir
        self.guard: Guard = legacy_guard(api_key)
        self.health = health or (lambda: {})
        self._tool_lists = _SharedJSON()

    # -- routes -----------------------------------------------------------------------------------------------

    def add_routes(self, router: Any) -> None:
        async def init_rollout(rollout_request: RolloutRequest, request: Request) -> Any:
            denied = self.guard(request)
            if denied is not None:
                logger.warning("Rejected /v1/rollout/init: invalid or missing API key")
                return denied
            with tracing.incoming(request.headers):  # the rollout's span continues the controller's trace
                return await self.admit_request(rollout_request)

        def platform_health(request: Request) -> JSONResponse:
            if self.api_key is None:
                return JSONResponse(status_code=404, content={"detail": "Not found"})
            return self.guard(request) or JSONResponse(self.health())

        router.add_api_route("/v1/rollout/init", init_rollout, methods=["POST"], status_code=202)
        router.add_api_route("/platform/health", platform_health, methods=["GET"])

    async def admit_request(self, rollout_request: RolloutRequest) -> JSONResponse:
        """``POST /v1/rollout/init`` after auth: 202 with the init answer (the leader's for a duplicate)."""
        rejected = self.url_rejection({"server_url": rollout_request.server_url})
        if rejected is not None:
            return rejected
        key = rollout_request.idempotency_key or rollout_request.rollout_id
        raw_tools: list[Any] = []

        async def prepare() -> dict[str, Any]:
            # Duplicates are told the init answer (kept in the store); only the leader needs the raw tools.
            init_body, tools = await self._prepare(rollout_request)
            raw_tools.append(tools)
            return init_body

        try:
            submission = await self.admit(
                key,
                prepare=prepare,
                run=lambda admission: self._run(rollout_request, raw_tools[0], admission),
                abort=lambda admission: self._abort(rollout_request, admission),
            )
        except AdmissionRefused as refused:
            return refused.response
        except GetToolsError as exc:
            logger.error("Init %s rejected, no rollout started: %s", rollout_request.rollout_id, exc)
            return JSONResponse(status_code=500, content={"detail": str(exc)})
        if submission.value is None:  # a leader that never finished get_tools (it was refused or lost meanwhile)
            return conflict_response(key, self.name)
        # Duplicates get the leader's body, including the leader's rollout_id (upstream behaviour).
        return JSONResponse(status_code=202, content=submission.value)

    # -- payload mapping --------------------------------------------------------------------------------------

    async def _prepare(self, rollout_request: RolloutRequest) -> tuple[dict[str, Any], Any]:
        try:
            raw_tools = self.agent_loop.get_tools(rollout_request)
            if inspect.isawaitable(raw_tools):
                raw_tools = await raw_tools
        except Exception as exc:
            raise GetToolsError(f"get_tools() raised {type(exc).__name__}: {exc}") from exc
        try:
            tools = self._tool_lists.intern(normalize_tools(raw_tools))
        except (TypeError, ValueError) as exc:
            raise GetToolsError(f"get_tools() returned an invalid tool list: {exc}") from exc
        return {"rollout_id": rollout_request.rollout_id, "tools": tools}, raw_tools

    def _client(self, rollout_request: RolloutRequest) -> OsmosisLLMClient:
        return OsmosisLLMClient(
            server_url=rollout_request.server_url,
            rollout_id=rollout_request.rollout_id,
            api_key=rollout_request.api_key,
            settings=self.client_settings,
        )

    # -- one rollout ------------------------------------------------------------------------------------------

    async def _run(self, rollout_request: RolloutRequest, raw_tools: Any, admission: Admission) -> None:
        rollout_id = rollout_request.rollout_id
        ledger = admission.context["ledger"] = CallbackLedger(rollout_id)
        try:
            llm = self._client(rollout_request)
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
                _debug_dir=self.debug_dir,
            )
            result = await self.agent_loop.run(ctx)
        except Exception as exc:
            failure = exc
        ok = failure is None and getattr(result, "status", None) == "COMPLETED"
        admission.context["outcome"] = "success" if ok else "failure"
        # The final callback runs as its own task: if shutdown cancels this rollout while the controller is still
        # answering it, the callback is not cut off, and abort() waits for it instead of also sending ERROR.
        await asyncio.shield(ledger.start(FINAL_CALLBACK, self._report(llm, rollout_id, result, failure)))

    # -- delivery ---------------------------------------------------------------------------------------------

    async def _report(self, llm: OsmosisLLMClient, rollout_id: str, result: Any, failure: Exception | None) -> None:
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

    async def _abort(self, rollout_request: RolloutRequest, admission: Admission) -> None:
        ledger = admission.context.get("ledger")
        if ledger is not None and ledger.was_started(FINAL_CALLBACK):
            # The callback that started wins: a COMPLETED (or the agent's ERROR) already on its way is not followed
            # by "server shut down".
            logger.info("Shutdown: rollout %s is delivering its final callback; waiting for it", rollout_request.rollout_id)
            await ledger.settle(FINAL_CALLBACK)
            return
        llm = admission.context.get("llm") or self._client(rollout_request)
        await llm.complete_rollout(
            status="ERROR", final_messages=[], finish_reason="error", error_message=SHUTDOWN_ERROR_MESSAGE
        )
