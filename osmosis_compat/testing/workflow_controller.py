"""A fake 0.2.x workflow controller: OpenAI-compatible chat endpoint, both callbacks, and a rollout driver.

It plays the controller side of spec/workflow-api.md §3 / §5.5: it POSTs ``/rollout`` to a rollout server,
answers the model calls the workflow makes through ``chat_completions_url`` (JSON, or SSE when the
request streams — spec/frameworks.md §4), and collects the completion and grader callbacks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import Response

from osmosis_compat.testing._http import (
    INVALID_KEY,
    answer_chat,
    bearer_matches,
    callback_reply,
    driver_ssl_context,
    json_or_text,
    chat_response,
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

__all__ = ["FakeWorkflowController", "WorkflowRolloutRecord"]


@dataclass
class WorkflowRolloutRecord:
    """What one driven rollout produced, as the controller saw it.

    ``completion`` / ``grader`` are the first callback bodies the controller accepted (2xx);
    ``completions`` / ``graders`` are every callback body received for the rollout, in arrival order;
    ``chat_requests`` are the model calls whose ``x-rollout-id`` named this rollout.
    """

    rollout_id: str
    status_code: int
    response_body: Any
    completion: dict[str, Any] | None = None
    grader: dict[str, Any] | None = None
    completions: list[dict[str, Any]] = field(default_factory=list)
    graders: list[dict[str, Any]] = field(default_factory=list)
    chat_requests: list[RecordedRequest] = field(default_factory=list)

    @property
    def rewards(self) -> dict[str, Any]:
        """``{sample_id: reward}`` from the grader callback (empty when there is none)."""
        samples = (self.grader or {}).get("samples") or {}
        if not isinstance(samples, dict):
            return {}
        return {sid: (s or {}).get("reward") for sid, s in samples.items() if isinstance(s, dict)}

    @property
    def sample_ids(self) -> list[str]:
        """Distinct ``x-sample-id`` values of the model calls, in first-seen order."""
        seen: dict[str, None] = {}
        for request in self.chat_requests:
            if request.sample_id:
                seen.setdefault(request.sample_id, None)
        return list(seen)


class FakeWorkflowController(ServedFake):
    """The 0.2.x workflow controller, for tests: chat endpoint + callbacks + ``run_rollout`` driver.

    Routes: ``POST /chat/completions``, ``POST /v1/chat/completions`` and the 0.3.x per-rollout
    ``POST /v1/rollouts/{rollout_id}/chat/completions`` (bearer ``controller_api_key``,
    answered by ``policy`` with the request's own tools; SSE when ``stream`` is true, with a usage chunk
    iff ``stream_options.include_usage``), ``POST /callbacks/{rollout_id}/completion`` and
    ``POST /callbacks/{rollout_id}/grader`` (bearer-checked, recorded, answered per ``completion_script``
    / ``grader_script``), ``GET /health``.

    ``controller_api_key=None`` sends no key in ``POST /rollout`` and checks none (spec/workflow-api.md §3.11).
    ``require_identity_headers=True`` answers 400 to model calls without ``x-rollout-id`` and
    ``x-sample-id``, as the 0.2.22 EvalController did.
    """

    completion_script = StatusScriptSlot()
    grader_script = StatusScriptSlot()
    chat_script = StatusScriptSlot()

    def __init__(
        self,
        policy: ChatPolicy | None = None,
        *,
        controller_api_key: str | None = "ctrl-key",
        completion_script: StatusScript | list[int] | int | None = None,
        grader_script: StatusScript | list[int] | int | None = None,
        require_identity_headers: bool = False,
        chat_script: StatusScript | list[int] | int | None = None,
    ) -> None:
        self.policy: ChatPolicy = policy if policy is not None else ScriptedPolicy()
        self.controller_api_key = controller_api_key
        self.completion_script = completion_script
        self.grader_script = grader_script
        self.chat_script = chat_script
        self.require_identity_headers = require_identity_headers
        self.url: str | None = None
        self.chat_log: RecordLog[RecordedRequest] = RecordLog()
        self.completion_log: RecordLog[RecordedRequest] = RecordLog()
        self.grader_log: RecordLog[RecordedRequest] = RecordLog()
        self.app = self._build_app()

    # -- what was received ------------------------------------------------------------------------

    @property
    def chat_completions_url(self) -> str:
        """The ``chat_completions_url`` handed to rollout servers: ``<url>/v1`` (clients add the path)."""
        return f"{self.require_url()}/v1"

    def completion_callback_url(self, rollout_id: str) -> str:
        """Where the rollout server posts ``rollout_id``'s completion callback (id URL-quoted)."""
        return f"{self.require_url()}/callbacks/{quote(rollout_id, safe='')}/completion"

    def grader_callback_url(self, rollout_id: str) -> str:
        """Where the rollout server posts ``rollout_id``'s grader callback (id URL-quoted)."""
        return f"{self.require_url()}/callbacks/{quote(rollout_id, safe='')}/grader"

    def rollout_chat_completions_url(self, rollout_id: str) -> str:
        """A 0.3.x-style per-rollout base URL, ``<url>/v1/rollouts/<id>`` (identity in the path)."""
        return f"{self.require_url()}/v1/rollouts/{quote(rollout_id, safe='')}"

    def chat_requests(self, rollout_id: str | None = None) -> list[RecordedRequest]:
        """Model calls received (all, or those for ``rollout_id`` by ``x-rollout-id`` or URL)."""
        return [r for r in self.chat_log.snapshot() if rollout_id is None or r.rollout_id == rollout_id]

    def completion_callbacks(self, rollout_id: str | None = None) -> list[dict[str, Any]]:
        """Completion callback bodies received (all, or for ``rollout_id``), in arrival order."""
        return [r.body for r in self.completion_log.snapshot() if rollout_id is None or r.rollout_id == rollout_id]

    def grader_callbacks(self, rollout_id: str | None = None) -> list[dict[str, Any]]:
        """Grader callback bodies received (all, or for ``rollout_id``), in arrival order."""
        return [r.body for r in self.grader_log.snapshot() if rollout_id is None or r.rollout_id == rollout_id]

    async def wait_for_callbacks(
        self, rollout_id: str, kind: str = "completion", *, count: int = 1, timeout: float = 10.0
    ) -> list[dict[str, Any]]:
        """Wait until ``count`` callbacks of ``kind`` (``"completion"``/``"grader"``) arrived for
        ``rollout_id``, whatever they were answered; returns their bodies. Raises ``TimeoutError``."""
        log = {"completion": self.completion_log, "grader": self.grader_log}.get(kind)
        if log is None:
            raise ValueError("kind must be 'completion' or 'grader'")
        ok = await log.wait_for_count(lambda r: r.rollout_id == rollout_id, count, timeout)
        bodies = [r.body for r in log.snapshot() if r.rollout_id == rollout_id]
        if not ok:
            raise TimeoutError(f"got {len(bodies)} of {count} {kind} callback(s) for {rollout_id!r} in {timeout} s")
        return bodies

    # -- driver -----------------------------------------------------------------------------------

    def rollout_body(
        self,
        *,
        rollout_id: str,
        initial_messages: list[dict[str, Any]],
        label: str | None = None,
        metadata: dict[str, Any] | None = None,
        agent_timeout_sec: float | None = None,
        grader_timeout_sec: float | None = None,
        grade: bool = True,
        extra_fields: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The ``POST /rollout`` body (``RolloutInitRequest``, spec/workflow-api.md §3.3) for this controller."""
        body: dict[str, Any] = {
            "rollout_id": rollout_id,
            "initial_messages": initial_messages,
            "chat_completions_url": self.chat_completions_url,
            "completion_callback_url": self.completion_callback_url(rollout_id),
        }
        if self.controller_api_key is not None:
            body["controller_api_key"] = self.controller_api_key
        if grade:
            body["grader_callback_url"] = self.grader_callback_url(rollout_id)
        optional = {
            "label": label,
            "metadata": metadata,
            "agent_timeout_sec": agent_timeout_sec,
            "grader_timeout_sec": grader_timeout_sec,
            "extra_fields": extra_fields,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        return body

    async def run_rollout(
        self,
        rollout_server_url: str,
        *,
        rollout_id: str,
        initial_messages: list[dict[str, Any]],
        label: str | None = None,
        metadata: dict[str, Any] | None = None,
        agent_timeout_sec: float | None = None,
        grader_timeout_sec: float | None = None,
        grade: bool = True,
        extra_fields: dict[str, Any] | None = None,
        timeout: float = 10.0,
    ) -> WorkflowRolloutRecord:
        """Drive one rollout: ``POST {rollout_server_url}/rollout``, then await the callbacks.

        Accepts 200 (0.2.x) or 202 (0.3.x); any other status raises :class:`UnexpectedStatus` carrying the
        response. Waits (``timeout`` seconds in total) for the first accepted completion callback and,
        when ``grade``, the first accepted grader callback; raises :class:`RolloutTimeout` (with the partial
        record) if they do not come.
        """
        import httpx

        body = self.rollout_body(
            rollout_id=rollout_id,
            initial_messages=initial_messages,
            label=label,
            metadata=metadata,
            agent_timeout_sec=agent_timeout_sec,
            grader_timeout_sec=grader_timeout_sec,
            grade=grade,
            extra_fields=extra_fields,
        )
        deadline = time.monotonic() + timeout
        # Only what arrives from now on belongs to this run (0.2.x accepts the same rollout_id twice).
        start = (len(self.completion_log), len(self.grader_log), len(self.chat_log))
        async with httpx.AsyncClient(timeout=timeout, verify=driver_ssl_context()) as client:
            response = await client.post(f"{rollout_server_url.rstrip('/')}/rollout", json=body)
        response_body = json_or_text(response)
        if response.status_code not in (200, 202):
            raise UnexpectedStatus(
                f"POST /rollout for {rollout_id!r} was rejected",
                status_code=response.status_code,
                body=response_body,
                response=response,
            )

        def accepted(r: RecordedRequest) -> bool:
            return r.rollout_id == rollout_id and 200 <= r.status_code < 300

        waits = [("completion", self.completion_log, start[0])]
        if grade:
            waits.append(("grader", self.grader_log, start[1]))
        for kind, log, offset in waits:
            if not await log.wait_for_count(accepted, 1, max(0.0, deadline - time.monotonic()), start=offset):
                answered = [r.status_code for r in log.snapshot()[offset:] if r.rollout_id == rollout_id]
                raise RolloutTimeout(
                    f"no accepted {kind} callback for {rollout_id!r} within {timeout} s; "
                    f"received {len(answered)}, answered {answered}",
                    self._record(rollout_id, response.status_code, response_body, start),
                )
        record = self._record(rollout_id, response.status_code, response_body, start)
        return record

    def _record(
        self, rollout_id: str, status_code: int, response_body: Any, start: tuple[int, int, int]
    ) -> WorkflowRolloutRecord:
        completions = [r for r in self.completion_log.snapshot()[start[0] :] if r.rollout_id == rollout_id]
        graders = [r for r in self.grader_log.snapshot()[start[1] :] if r.rollout_id == rollout_id]
        return WorkflowRolloutRecord(
            rollout_id=rollout_id,
            status_code=status_code,
            response_body=response_body,
            completion=next((r.body for r in completions if 200 <= r.status_code < 300), None),
            grader=next((r.body for r in graders if 200 <= r.status_code < 300), None),
            completions=[r.body for r in completions],
            graders=[r.body for r in graders],
            chat_requests=[r for r in self.chat_log.snapshot()[start[2] :] if r.rollout_id == rollout_id],
        )

    def _authorized(self, headers: dict[str, str]) -> bool:
        # controller_api_key=None plays a controller that sends no key (0.2.x then sends no Authorization).
        key = self.controller_api_key
        return key is None or bearer_matches(headers.get("authorization"), key)

    # -- the app ----------------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI(title="Fake workflow controller (osmosis_compat.testing)")

        async def chat(request: Request) -> Response:
            headers, body, error = await read_request(request)
            # 0.3.x puts the identity in the URL (<base>/v1/rollouts/<id>/chat/completions) instead of a header.
            rollout_id = request.path_params.get("rollout_id") or headers.get("x-rollout-id")
            if not self._authorized(headers):
                status, reply = 401, INVALID_KEY
            elif self.require_identity_headers and not (rollout_id and headers.get("x-sample-id")):
                status, reply = 400, {"detail": "x-rollout-id and x-sample-id headers are required"}
            elif error is not None:
                status, reply = 422, validation_error(["body"], error)
            else:
                status, reply = await answer_chat(
                    self.policy,
                    body,
                    body.get("tools"),
                    default_model="scripted",
                    script=self.chat_script,
                )
            self.chat_log.append(
                RecordedRequest(
                    method="POST",
                    path=request.url.path,
                    headers=headers,
                    body=body,
                    status_code=status,
                    rollout_id=rollout_id,
                    sample_id=headers.get("x-sample-id"),
                )
            )
            return chat_response(status, reply, body)

        app.add_api_route("/chat/completions", chat, methods=["POST"])
        app.add_api_route("/v1/chat/completions", chat, methods=["POST"])
        app.add_api_route("/v1/rollouts/{rollout_id}/chat/completions", chat, methods=["POST"])

        def callback_route(log: RecordLog[RecordedRequest], script_attr: str) -> Any:
            async def callback(rollout_id: str, request: Request) -> Response:
                headers, body, error = await read_request(request)
                if not self._authorized(headers):
                    status, reply = 401, INVALID_KEY
                elif error is not None:
                    status, reply = 422, validation_error(["body"], error)
                else:
                    status, reply = callback_reply(getattr(self, script_attr).next_status())
                log.append(
                    RecordedRequest(
                        method="POST",
                        path=request.url.path,
                        headers=headers,
                        body=body,
                        status_code=status,
                        rollout_id=rollout_id,
                    )
                )
                return json_response(status, reply)

            return callback

        completion = callback_route(self.completion_log, "completion_script")
        app.add_api_route("/callbacks/{rollout_id}/completion", completion, methods=["POST"])
        grader = callback_route(self.grader_log, "grader_script")
        app.add_api_route("/callbacks/{rollout_id}/grader", grader, methods=["POST"])

        async def health() -> dict[str, str]:
            return {"status": "ok"}

        app.add_api_route("/health", health, methods=["GET"])
        return app

