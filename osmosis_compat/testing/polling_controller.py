"""A fake 0.3.8 controller: per-rollout LLM bridge, lease-holding long-poll driver and cancel.

It plays what Osmosis runs today (spec/polling-protocol.md): it hands each rollout its own base URL
``<url>/v1/rollouts/<quoted id>`` and its own bearer (a fresh ``llm_api_key``), answers the model calls there (SSE
when the call streams, JSON otherwise), and drives a rollout server the way ``RolloutClient`` does — ``POST
/rollout`` (looping on 429 per ``Retry-After``), then ``GET /rollout/{id}/result`` with the lease header, polling
again right after each answer, until a terminal status.

Usable from your own pytest::

    controller = FakePollingController(ScriptedPolicy())
    with controller.serve():
        record = await controller.run_rollout(server.url, rollout_id="r1", initial_messages=[...], label="4")
    assert record.result["status"] == "success" and record.reward == 1.0
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import Response

from osmosis_compat.testing._http import answer_chat, bearer_matches, chat_response, json_or_text, read_request, validation_error
from osmosis_compat.testing.policy import ChatPolicy, ScriptedPolicy
from osmosis_compat.testing.recording import RecordedRequest, RecordLog, RolloutTimeout, StatusScript, StatusScriptSlot, UnexpectedStatus
from osmosis_compat.testing.serving import ServedFake

__all__ = ["FakePollingController", "PollingAdmission", "PollingRolloutRecord"]

LEASE_HEADER = "X-Osmosis-Rollout-Lease"
TERMINAL = frozenset({"success", "failure", "cancelled"})
_RETRY_AFTER_FLOOR, _RETRY_AFTER_MAX = 0.05, 60.0
_READ_GRACE = 10.0  # the client's GET timeout is the advertised wait + 10 s (0.3.8)
_SHARDS = 16
_TRANSPORT_RETRY_DELAYS = (0.1, 0.5)
_GATEWAY_RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass
class PollingAdmission:
    """A rollout the controller admitted: the 202 body (lease token and timings) and the per-rollout LLM key."""

    rollout_id: str
    body: dict[str, Any]
    llm_api_key: str
    admitted_at: float = field(default_factory=time.monotonic)

    @property
    def lease_token(self) -> str:
        return str(self.body["polling_lease_token"])

    @property
    def wait_seconds(self) -> float:
        return float(self.body["result_wait_timeout_sec"])

    @property
    def lease_seconds(self) -> float:
        return float(self.body["polling_lease_timeout_sec"])


@dataclass
class PollingRolloutRecord:
    """What one driven rollout produced, as the controller saw it.

    ``statuses`` is every status the polls returned, in order (the admission's ``queued`` first); ``result`` the
    final ``RolloutResultResponse`` body; ``chat_requests`` the model calls made to this rollout's URL.
    """

    rollout_id: str
    admission: PollingAdmission
    result: dict[str, Any]
    statuses: list[str]
    polls: int
    chat_requests: list[RecordedRequest] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.result.get("status"))

    @property
    def sample(self) -> dict[str, Any] | None:
        return self.result.get("sample")

    @property
    def reward(self) -> Any:
        """The sample's reward (``None`` without a sample)."""
        return (self.sample or {}).get("reward")


class FakePollingController(ServedFake):
    """Today's (0.3.8) controller, for tests (see the module docstring).

    Routes: ``POST /v1/rollouts/{rollout_id}/chat/completions`` (401 unless the bearer is the key handed to that
    rollout; 422 for an unknown rollout id or a bad body; answered by ``policy`` with the request's own tools),
    ``GET /health``. ``chat_script`` scripts HTTP failures of the chat route. ``check_keys=False`` accepts any
    bearer (for servers started by another controller).
    """

    chat_script = StatusScriptSlot()

    def __init__(
        self,
        policy: ChatPolicy | None = None,
        *,
        chat_script: StatusScript | list[int] | int | None = None,
        check_keys: bool = True,
        server_api_key: str | None = None,
    ) -> None:
        self.policy: ChatPolicy = policy if policy is not None else ScriptedPolicy()
        self.chat_script = chat_script
        self.check_keys = check_keys
        self.server_api_key = server_api_key
        """Bearer sent to the rollout server on every call (``create_rollout_server(api_key=...)``)."""
        self.url: str | None = None
        self.chat_log: RecordLog[RecordedRequest] = RecordLog()
        self._keys: dict[str, str] = {}
        self._clients: dict[tuple[int, int], Any] = {}
        self.app = self._build_app()

    # -- addresses ---------------------------------------------------------------------------------------

    def chat_completions_url(self, rollout_id: str) -> str:
        """The per-rollout base URL handed to the rollout server: ``<url>/v1/rollouts/<quoted id>``."""
        return f"{self.require_url()}/v1/rollouts/{quote(rollout_id, safe='')}"

    def chat_requests(self, rollout_id: str | None = None) -> list[RecordedRequest]:
        """Model calls received (all, or those for ``rollout_id``)."""
        return [r for r in self.chat_log.snapshot() if rollout_id is None or r.rollout_id == rollout_id]

    # -- driver ------------------------------------------------------------------------------------------

    def _client(self, rollout_id: str = "") -> Any:
        import httpx

        from osmosis_compat.testing._http import driver_ssl_context

        # Pooled clients per event loop, a rollout always on the same one. Long-polls hold one connection each,
        # and httpcore's pool scans all its connections per request, so 1,000 waiting rollouts on one pool cost
        # O(n²); spread over _SHARDS pools they stay cheap.
        key = (id(asyncio.get_running_loop()), hash(rollout_id) % _SHARDS)
        client = self._clients.get(key)
        if client is None or client.is_closed:
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
            client = httpx.AsyncClient(limits=limits, verify=driver_ssl_context(), timeout=60.0)
            self._clients[key] = client
        return client

    async def aclose(self) -> None:
        """Close the driver's HTTP clients (those of the running loop; others are dropped)."""
        clients, self._clients = self._clients, {}
        loop_id = id(asyncio.get_running_loop())
        for (client_loop, _), client in clients.items():
            if client_loop == loop_id:
                await client.aclose()

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.server_api_key}"} if self.server_api_key else {}

    def rollout_body(
        self,
        *,
        rollout_id: str,
        initial_messages: list[dict[str, Any]],
        llm_api_key: str | None = None,
        label: str | None = None,
        metadata: dict[str, Any] | None = None,
        grade: bool = True,
        agent_timeout_sec: float | None = None,
        grader_timeout_sec: float | None = None,
        extra_fields: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The ``POST /rollout`` body as ``RolloutClient`` sends it: every field present, nulls included."""
        return {
            "initial_messages": initial_messages,
            "label": label,
            "metadata": metadata,
            "rollout_id": rollout_id,
            "chat_completions_url": self.chat_completions_url(rollout_id),
            "llm_api_key": llm_api_key,
            "grade": grade,
            "agent_timeout_sec": agent_timeout_sec,
            "grader_timeout_sec": grader_timeout_sec,
            "extra_fields": extra_fields,
        }

    async def admit(self, rollout_server_url: str, *, rollout_id: str, initial_messages: list[dict[str, Any]], **fields: Any) -> PollingAdmission:
        """``POST /rollout`` until admitted: loops on 429 (``Retry-After`` clamped to [0.05, 60] s, default 1 s);
        any other status than 202 raises :class:`UnexpectedStatus` with the response."""
        # One key per rollout id (a duplicate admission must not replace the key the running rollout holds).
        key = fields.pop("llm_api_key", None) or self._keys.get(rollout_id) or f"llm-{secrets.token_urlsafe(12)}"
        self._keys[rollout_id] = key
        body = self.rollout_body(rollout_id=rollout_id, initial_messages=initial_messages, llm_api_key=key, **fields)
        client = self._client(rollout_id)
        while True:
            response = await client.post(f"{rollout_server_url.rstrip('/')}/rollout", json=body, headers=self._headers())
            if response.status_code != 429:
                break
            await asyncio.sleep(_retry_after(response.headers.get("retry-after")))
        payload = json_or_text(response)
        if response.status_code != 202:
            raise UnexpectedStatus(
                f"POST /rollout for {rollout_id!r} returned {response.status_code}; only 202 and 429 are accepted",
                status_code=response.status_code,
                body=payload,
                response=response,
            )
        if not isinstance(payload, dict) or payload.get("rollout_id") != rollout_id or not payload.get("polling_lease_token"):
            raise UnexpectedStatus("POST /rollout returned an invalid admission", status_code=202, body=payload, response=response)
        wait, lease = payload.get("result_wait_timeout_sec"), payload.get("polling_lease_timeout_sec")
        if not (_finite_positive(wait) and _finite_positive(lease) and lease > wait):
            raise UnexpectedStatus("POST /rollout advertised invalid timings", status_code=202, body=payload, response=response)
        return PollingAdmission(rollout_id=rollout_id, body=payload, llm_api_key=key)

    async def poll(self, rollout_server_url: str, admission: PollingAdmission, *, lease_token: str | None = None) -> Any:
        """One ``GET /rollout/{id}/result`` with the lease header; returns the httpx response (any status)."""
        token = admission.lease_token if lease_token is None else lease_token
        headers = {**self._headers(), LEASE_HEADER: token}
        return await self._client(admission.rollout_id).get(
            f"{rollout_server_url.rstrip('/')}/rollout/{quote(admission.rollout_id, safe='')}/result",
            headers=headers,
            timeout=admission.wait_seconds + _READ_GRACE,
        )

    async def _poll_with_retries(self, rollout_server_url: str, admission: PollingAdmission) -> Any:
        """:meth:`poll`, retried as ``RolloutClient`` retries a result read (it is idempotent): transport errors
        after 0.1 and 0.5 s (e.g. a keep-alive connection the server closed while idle), 502/503/504 after 0.25,
        0.5, 1, 2, 4 and 8 s (a load balancer's answer, or a server whose store is briefly unreachable)."""
        import httpx

        transport = iter(_TRANSPORT_RETRY_DELAYS)
        gateway = iter(_GATEWAY_RETRY_DELAYS)
        while True:
            try:
                response = await self.poll(rollout_server_url, admission)
            except (httpx.RemoteProtocolError, httpx.NetworkError, httpx.ReadTimeout):
                delay = next(transport, None)
                if delay is None:
                    raise
            else:
                if response.status_code not in (502, 503, 504):
                    return response
                delay = next(gateway, None)
                if delay is None:
                    return response
            await asyncio.sleep(delay)

    async def wait_for_result(
        self, rollout_server_url: str, admission: PollingAdmission, *, timeout: float = 30.0
    ) -> tuple[dict[str, Any], list[str], int]:
        """Poll until a terminal status: ``(final body, statuses seen, number of polls)``. A non-200 raises
        :class:`UnexpectedStatus`; no terminal result within ``timeout`` raises :class:`RolloutTimeout`."""
        deadline = time.monotonic() + timeout
        statuses = ["queued"]
        polls = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RolloutTimeout(f"no final result for {admission.rollout_id!r} within {timeout} s; saw {statuses}", None)
            try:
                response = await asyncio.wait_for(self._poll_with_retries(rollout_server_url, admission), remaining)
            except (TimeoutError, asyncio.TimeoutError):
                raise RolloutTimeout(
                    f"no final result for {admission.rollout_id!r} within {timeout} s; saw {statuses}", None
                ) from None
            polls += 1
            body = json_or_text(response)
            if response.status_code != 200:
                raise UnexpectedStatus(
                    f"GET /rollout/{admission.rollout_id}/result returned {response.status_code}",
                    status_code=response.status_code,
                    body=body,
                    response=response,
                )
            if body.get("rollout_id") != admission.rollout_id:
                raise UnexpectedStatus("the result names another rollout", status_code=200, body=body, response=response)
            status = body.get("status")
            if status != statuses[-1]:
                statuses.append(status)
            if status in TERMINAL:
                return body, statuses, polls

    async def run_rollout(
        self,
        rollout_server_url: str,
        *,
        rollout_id: str,
        initial_messages: list[dict[str, Any]],
        label: str | None = None,
        metadata: dict[str, Any] | None = None,
        grade: bool = True,
        agent_timeout_sec: float | None = None,
        grader_timeout_sec: float | None = None,
        extra_fields: dict[str, Any] | None = None,
        timeout: float = 30.0,
    ) -> PollingRolloutRecord:
        """Drive one rollout: admit, then long-poll until its final result (see :meth:`wait_for_result`)."""
        start = len(self.chat_log)
        admission = await self.admit(
            rollout_server_url,
            rollout_id=rollout_id,
            initial_messages=initial_messages,
            label=label,
            metadata=metadata,
            grade=grade,
            agent_timeout_sec=agent_timeout_sec,
            grader_timeout_sec=grader_timeout_sec,
            extra_fields=extra_fields,
        )
        result, statuses, polls = await self.wait_for_result(rollout_server_url, admission, timeout=timeout)
        chat = [r for r in self.chat_log.snapshot()[start:] if r.rollout_id == rollout_id]
        return PollingRolloutRecord(rollout_id, admission, result, statuses, polls, chat)

    async def cancel(
        self, rollout_server_url: str, *, ids: list[str] | None = None, prefix: str | None = None, all: bool = False
    ) -> Any:
        """``POST /rollout/cancel`` with the given selector(s), as given (no check: tests send bad ones too);
        returns the httpx response."""
        body: dict[str, Any] = {"ids": ids, "prefix": prefix, "all": all}
        return await self._client().post(
            f"{rollout_server_url.rstrip('/')}/rollout/cancel", json=body, headers=self._headers(), timeout=5.0
        )

    # -- the app -----------------------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI(title="Fake 0.3.8 controller (osmosis_compat.testing)")

        async def chat(rollout_id: str, request: Request) -> Response:
            headers, body, error = await read_request(request)
            expected = self._keys.get(rollout_id)
            if self.check_keys and expected is None:
                status, reply = 422, validation_error(["path", "rollout_id"], f"unknown rollout {rollout_id!r}")
            elif self.check_keys and not bearer_matches(headers.get("authorization"), expected or ""):
                status, reply = 401, {"detail": "invalid llm api key"}
            elif error is not None:
                status, reply = 422, validation_error(["body"], error)
            else:
                status, reply = await answer_chat(
                    self.policy, body, body.get("tools"), default_model="osmosis-rollout", script=self.chat_script
                )
            self.chat_log.append(
                RecordedRequest(
                    method="POST", path=request.url.path, headers=headers, body=body, status_code=status, rollout_id=rollout_id
                )
            )
            return chat_response(status, reply, body)

        app.add_api_route("/v1/rollouts/{rollout_id}/chat/completions", chat, methods=["POST"])

        async def health() -> dict[str, str]:
            return {"status": "ok"}

        app.add_api_route("/health", health, methods=["GET"])
        return app


def _finite_positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _retry_after(raw: str | None) -> float:
    try:
        value = float(raw) if raw is not None else 1.0
    except ValueError:
        return 1.0
    if not math.isfinite(value):
        return 1.0
    return min(max(_RETRY_AFTER_FLOOR, value), _RETRY_AFTER_MAX)
