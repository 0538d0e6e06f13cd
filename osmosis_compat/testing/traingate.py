"""A fake legacy TrainGate: the controller side of the RolloutAgentLoop protocol (spec/legacy-protocol.md §1).

It POSTs ``/v1/rollout/init`` to a rollout server, answers the agent's non-streaming
``POST {server_url}/v1/chat/completions`` calls (``rollout_id`` in the body, tools known from the
InitResponse) with a :class:`~osmosis_compat.testing.policy.ScriptedPolicy`, and records every
``POST {server_url}/v1/rollout/completed`` callback.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from osmosis_compat.runtime.auth import bearer_headers
from osmosis_compat.testing._http import (
    INVALID_KEY,
    answer_chat,
    bearer_matches,
    callback_reply,
    driver_ssl_context,
    json_or_text,
    json_response,
    read_request,
    validation_error,
)
from osmosis_compat.testing.policy import ChatPolicy, ScriptedPolicy
from osmosis_compat.testing.recording import (
    RecordedRequest,
    RecordLog,
    RolloutTimeout,
    StatusScript,
    StatusScriptSlot,
    UnexpectedStatus,
)
from osmosis_compat.testing.serving import ServedFake

__all__ = ["FakeTrainGate", "LegacyRolloutRecord"]

#: How long a chat call for a rollout whose InitResponse is still in flight waits for its tools.
_TOOLS_WAIT_S = 10.0


@dataclass
class LegacyRolloutRecord:
    """What one driven legacy rollout produced, as TrainGate saw it.

    ``callback`` is the final callback body (the first one the gate answered 200, or with
    ``expect_callbacks`` the last of those awaited); ``callbacks`` is every callback body for the rollout
    in arrival order; ``chat_requests`` are the agent's model calls for it.
    """

    rollout_id: str
    init_status_code: int
    init_response: dict[str, Any]
    callback: dict[str, Any] | None = None
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    chat_requests: list[RecordedRequest] = field(default_factory=list)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools the server declared in its InitResponse."""
        return list(self.init_response.get("tools") or [])

    @property
    def status(self) -> str | None:
        """``"COMPLETED"`` / ``"ERROR"`` from the final callback (``None`` without one)."""
        return (self.callback or {}).get("status")

    @property
    def final_messages(self) -> list[dict[str, Any]]:
        """``final_messages`` of the final callback (``[]`` without one)."""
        return list((self.callback or {}).get("final_messages") or [])

    @property
    def reward(self) -> float | None:
        """``reward`` of the final callback (``None`` when absent)."""
        return (self.callback or {}).get("reward")


class FakeTrainGate(ServedFake):
    """The legacy TrainGate, for tests: chat endpoint + completion callback + ``run_rollout`` driver.

    Routes: ``POST /v1/chat/completions`` (body must carry ``rollout_id`` → else 422; bearer
    ``require_api_key`` when given → else 401; answered by ``policy`` with the tools the rollout server
    declared at init — or :meth:`set_tools` — since legacy chat bodies carry none),
    ``POST /v1/rollout/completed`` (recorded per ``rollout_id``; answered per ``callback_script``, default
    200 ``{"status": "ok"}``), ``GET /health``. ``require_api_key`` guards both POST routes; ``chat_script``
    makes model calls fail (see :class:`StatusScript`).
    """

    callback_script = StatusScriptSlot()
    chat_script = StatusScriptSlot()

    def __init__(
        self,
        policy: ChatPolicy | None = None,
        *,
        require_api_key: str | None = None,
        callback_script: StatusScript | list[int] | int | None = None,
        chat_script: StatusScript | list[int] | int | None = None,
    ) -> None:
        self.policy: ChatPolicy = policy if policy is not None else ScriptedPolicy()
        self.require_api_key = require_api_key
        self.callback_script = callback_script
        self.chat_script = chat_script
        self.url: str | None = None
        self.chat_log: RecordLog[RecordedRequest] = RecordLog()
        self.callback_log: RecordLog[RecordedRequest] = RecordLog()
        # A rollout_id each time its tools become known; chat calls racing an init wait on it.
        self._tools_log: RecordLog[str] = RecordLog()
        self._tools: dict[str, list[dict[str, Any]] | None] = {}
        # rollout_id → position in _tools_log after which its InitResponse tools will be announced.
        self._pending: dict[str, int] = {}
        self._lock = threading.Lock()
        self.app = self._build_app()

    # -- tools per rollout ------------------------------------------------------------------------

    def set_tools(self, rollout_id: str, tools: list[dict[str, Any]] | None) -> None:
        """Declare the tools offered to the policy for ``rollout_id`` (done by :meth:`run_rollout`)."""
        with self._lock:
            self._tools[rollout_id] = tools
            self._pending.pop(rollout_id, None)
        self._tools_log.append(rollout_id)

    def tools_for(self, rollout_id: str) -> list[dict[str, Any]] | None:
        """The tools currently declared for ``rollout_id`` (``None`` if unknown)."""
        with self._lock:
            return self._tools.get(rollout_id)

    # -- what was received ------------------------------------------------------------------------

    def chat_requests(self, rollout_id: str | None = None) -> list[RecordedRequest]:
        """Model calls received (all, or those whose body ``rollout_id`` is ``rollout_id``)."""
        return [r for r in self.chat_log.snapshot() if rollout_id is None or r.rollout_id == rollout_id]

    def callbacks(self, rollout_id: str | None = None) -> list[dict[str, Any]]:
        """Completion callback bodies received (all, or for ``rollout_id``), in arrival order."""
        return [r.body for r in self.callback_log.snapshot() if rollout_id is None or r.rollout_id == rollout_id]

    async def wait_for_callbacks(
        self, rollout_id: str, *, count: int = 1, timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        """Wait until ``count`` callbacks arrived for ``rollout_id`` (whatever they were answered); returns
        all its callback bodies. Raises ``TimeoutError``."""
        ok = await self.callback_log.wait_for_count(lambda r: r.rollout_id == rollout_id, count, timeout)
        bodies = self.callbacks(rollout_id)
        if not ok:
            raise TimeoutError(f"got {len(bodies)} of {count} callback(s) for {rollout_id!r} in {timeout} s")
        return bodies

    # -- driver -----------------------------------------------------------------------------------

    def init_body(
        self,
        *,
        rollout_id: str,
        messages: list[dict[str, Any]],
        completion_params: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        max_turns: int = 10,
        callback_api_key: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """The ``POST /v1/rollout/init`` body (``RolloutRequest``, spec/legacy-protocol.md §1.2.1)."""
        body: dict[str, Any] = {
            "rollout_id": rollout_id,
            "server_url": self.require_url(),
            "messages": messages,
            "completion_params": completion_params or {},
            "max_turns": max_turns,
            "metadata": metadata or {},
        }
        if callback_api_key is not None:
            body["api_key"] = callback_api_key
        if idempotency_key is not None:
            body["idempotency_key"] = idempotency_key
        return body

    async def run_rollout(
        self,
        agent_url: str,
        *,
        rollout_id: str,
        messages: list[dict[str, Any]],
        completion_params: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        max_turns: int = 10,
        api_key: str | None = None,
        callback_api_key: str | None = None,
        idempotency_key: str | None = None,
        timeout: float = 10.0,
        expect_callbacks: int | None = None,
    ) -> LegacyRolloutRecord:
        """Drive one legacy rollout against the rollout server at ``agent_url``.

        POSTs ``{agent_url}/v1/rollout/init`` (``api_key`` is presented as the bearer to the server;
        ``callback_api_key`` goes in the body as ``api_key`` for the agent's calls back, defaulting to
        ``require_api_key`` so a key-checking gate gets it), requires 202
        (else :class:`UnexpectedStatus` carrying the response), remembers the returned tools for the
        policy, then waits — ``timeout`` seconds in total — for the first callback answered 200, or, with
        ``expect_callbacks=n``, for ``n`` callbacks whatever they were answered (to observe retries).
        Raises :class:`RolloutTimeout` (with the partial record) when they do not come.
        """
        import httpx

        if callback_api_key is None:
            callback_api_key = self.require_api_key
        body = self.init_body(
            rollout_id=rollout_id,
            messages=messages,
            completion_params=completion_params,
            metadata=metadata,
            max_turns=max_turns,
            callback_api_key=callback_api_key,
            idempotency_key=idempotency_key,
        )
        headers = bearer_headers(api_key)
        deadline = time.monotonic() + timeout
        # Only what arrives from now on belongs to this run (a rollout_id may be driven more than once).
        callbacks_from, chats_from = len(self.callback_log), len(self.chat_log)
        with self._lock:
            # Chat calls racing the InitResponse wait for its tools (not a previous run's).
            self._pending[rollout_id] = len(self._tools_log)
        try:
            async with httpx.AsyncClient(timeout=timeout, verify=driver_ssl_context()) as client:
                response = await client.post(f"{agent_url.rstrip('/')}/v1/rollout/init", json=body, headers=headers)
        except BaseException:
            self._abandon_init(rollout_id)
            raise
        init_response = json_or_text(response)
        if response.status_code != 202 or not isinstance(init_response, dict):
            self._abandon_init(rollout_id)
            raise UnexpectedStatus(
                f"POST /v1/rollout/init for {rollout_id!r} was not accepted",
                status_code=response.status_code,
                body=init_response,
                response=response,
            )
        self.set_tools(rollout_id, init_response.get("tools") or None)

        if expect_callbacks is not None:
            wanted, count = (lambda r: r.rollout_id == rollout_id), expect_callbacks
        else:
            wanted, count = (lambda r: r.rollout_id == rollout_id and r.status_code == 200), 1
        remaining = max(0.0, deadline - time.monotonic())
        ok = await self.callback_log.wait_for_count(wanted, count, remaining, start=callbacks_from)
        mine = [r for r in self.callback_log.snapshot()[callbacks_from:] if r.rollout_id == rollout_id]
        if expect_callbacks is not None:
            final = mine[expect_callbacks - 1].body if ok else None
        else:
            final = next((r.body for r in mine if r.status_code == 200), None)
        record = LegacyRolloutRecord(
            rollout_id=rollout_id,
            init_status_code=response.status_code,
            init_response=init_response,
            callback=final,
            callbacks=[r.body for r in mine],
            chat_requests=[r for r in self.chat_log.snapshot()[chats_from:] if r.rollout_id == rollout_id],
        )
        if not ok:
            wanted = f"{expect_callbacks} callback(s)" if expect_callbacks is not None else "an accepted callback"
            answered = [r.status_code for r in mine]
            raise RolloutTimeout(
                f"no {wanted} for {rollout_id!r} within {timeout} s; received {len(mine)} callback(s), "
                f"answered {answered} (callback_script: {self.callback_script!r})",
                record,
            )
        return record

    def _abandon_init(self, rollout_id: str) -> None:
        with self._lock:
            was_pending = self._pending.pop(rollout_id, None) is not None
        if was_pending:
            self._tools_log.append(rollout_id)  # release chat calls waiting for these tools

    async def _await_tools(self, rollout_id: str) -> list[dict[str, Any]] | None:
        with self._lock:
            announced_after = self._pending.get(rollout_id)
        if announced_after is not None:
            await self._tools_log.wait_for_count(lambda rid: rid == rollout_id, 1, _TOOLS_WAIT_S, start=announced_after)
        return self.tools_for(rollout_id)

    # -- the app ----------------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI(title="Fake TrainGate (osmosis_compat.testing)")

        def record(
            log: RecordLog[RecordedRequest], request: Request, headers: dict[str, str], body: Any, status: int
        ) -> None:
            rollout_id = body.get("rollout_id") if isinstance(body, dict) else None
            log.append(
                RecordedRequest(
                    method="POST",
                    path=request.url.path,
                    headers=headers,
                    body=body,
                    status_code=status,
                    rollout_id=rollout_id if isinstance(rollout_id, str) else None,
                )
            )

        def authorized(headers: dict[str, str]) -> bool:
            return self.require_api_key is None or bearer_matches(headers.get("authorization"), self.require_api_key)

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            headers, body, error = await read_request(request)
            if not authorized(headers):
                status, reply = 401, INVALID_KEY
            elif error is not None:
                status, reply = 422, validation_error(["body"], error)
            elif not isinstance(body.get("rollout_id"), str) or not body["rollout_id"].strip():
                rollout_id = body.get("rollout_id")
                status, reply = 422, validation_error(["body", "rollout_id"], "rollout_id is required", rollout_id)
            else:
                tools = await self._await_tools(body["rollout_id"])
                if tools is None and isinstance(body.get("tools"), list):
                    tools = body["tools"]  # not legacy wire, but a bridge may send them: better than ignoring
                status, reply = await answer_chat(
                    self.policy, body, tools, default_model="default", script=self.chat_script
                )
            record(self.chat_log, request, headers, body, status)
            return json_response(status, reply)

        @app.post("/v1/rollout/completed")
        async def completed(request: Request) -> Response:
            headers, body, error = await read_request(request)
            if not authorized(headers):
                status, reply = 401, INVALID_KEY
            elif error is not None:
                status, reply = 422, validation_error(["body"], error)
            elif not isinstance(body.get("rollout_id"), str):
                status, reply = 422, validation_error(["body", "rollout_id"], "rollout_id is required")
            else:
                status, reply = callback_reply(self.callback_script.next_status())
            record(self.callback_log, request, headers, body, status)
            return json_response(status, reply)

        @app.get("/health")
        async def health() -> dict[str, str]:
            return {"status": "ok"}

        return app

