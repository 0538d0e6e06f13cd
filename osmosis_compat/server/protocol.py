"""What the three rollout protocols share: :class:`RolloutProtocol`, the base of each protocol's class.

A server speaks up to three wire protocols over one :class:`~osmosis_compat.runtime.engine.RolloutEngine`, each a
peer class that owns its routes, its payload mapping and its delivery:

- :class:`~.legacy_protocol.LegacyCallbacks` — the legacy TrainGate (``POST /v1/rollout/init``, one final callback);
- :class:`~.workflow_protocol.WorkflowCallbacks` — the 0.2.x controller (``POST /rollout`` with callback URLs,
  completion and grader callbacks);
- :class:`~.polling.PollingProtocol` — today's 0.3.8 controller (``POST /rollout`` → 202 + lease, results held for
  ``GET /rollout/{id}/result``, ``POST /rollout/cancel``).

The base class holds what is the same for all three, written once: the admission errors (503 while shutting down
or while the store is unreachable, 429 when full), the one refusal of an id another protocol holds (409, the same
body from every protocol), the controller-host allow-list, and the place where metrics and logs hear about
rollouts. The app factories (``create_app``, ``create_rollout_server``, the mixed server) only build the peers and
compose their routes; ``POST /rollout``, which two of them share, is dispatched by :func:`add_rollout_entry`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from fastapi import Request
from fastapi.responses import JSONResponse

from osmosis_compat.observability import context, metrics, tracing
from osmosis_compat.runtime.engine import Admission, EngineClosedError, EngineFullError, RolloutEngine, Submission
from osmosis_compat.runtime.store import StoreUnavailableError
from osmosis_compat.runtime.wirecheck import HostAllowList
from osmosis_compat.workflow.types.protocol import RolloutInitRequest, RolloutInitResponse

from .security import controller_url_rejection

__all__ = [
    "AdmissionRefused",
    "Guard",
    "PROTOCOL_ROUTES",
    "RETRY_AFTER_SECONDS",
    "RolloutProtocol",
    "STORE_UNAVAILABLE_DETAIL",
    "add_rollout_entry",
    "conflict_response",
    "queue_full",
]

logger = logging.getLogger("osmosis_compat.server")

Guard = Callable[[Request], JSONResponse | None]
"""An auth check: ``None`` lets the request through, a response answers instead of the route."""

RETRY_AFTER_SECONDS = "5"
STORE_UNAVAILABLE_DETAIL = "rollout store unavailable; retry later"

#: Where each protocol admits rollouts (named in the 409 an id held by another protocol gets).
PROTOCOL_ROUTES = {
    "legacy": "POST /v1/rollout/init",
    "workflow": "POST /rollout with callback URLs",
    "polling": "POST /rollout",
}


def conflict_response(key: str, holder: str) -> JSONResponse:
    """409 for ``key`` held by a rollout of protocol ``holder``: the one answer every protocol gives when the id it
    is asked to admit belongs to another protocol's rollout (nothing is started, nothing is overwritten)."""
    route = PROTOCOL_ROUTES.get(holder, holder or "another protocol")
    return JSONResponse(
        status_code=409,
        content={
            "detail": f"rollout_id {key!r} is already registered by a rollout of the {holder or 'another'} protocol "
            f"({route}); use another rollout_id"
        },
    )


class AdmissionRefused(Exception):
    """Admission did not happen; ``response`` is what the controller is told (raised inside :meth:`admit`)."""

    def __init__(self, response: JSONResponse) -> None:
        super().__init__(response.status_code)
        self.response = response


class RolloutProtocol:
    """One wire protocol over ``engine`` (see the module docstring); subclasses set :attr:`name` and add routes.

    ``agent`` names the agent in metrics, logs and spans; ``allow_list`` is the controller-host allow-list
    (``None``: any host).
    """

    name: ClassVar[str] = ""
    #: The 503 body's text while the engine shuts down (0.3.8's own words for polling).
    shutting_down_detail: ClassVar[str] = "the server is shutting down and accepts no new rollouts"

    def __init__(self, engine: RolloutEngine, *, agent: str = "", allow_list: HostAllowList | None = None) -> None:
        self.engine = engine
        self.agent = agent
        self.allow_list = allow_list

    # -- admission ------------------------------------------------------------------------------------------

    async def admit(
        self,
        key: str,
        *,
        run: Callable[[Admission], Awaitable[None]],
        prepare: Callable[[], Awaitable[Any]] | None = None,
        abort: Callable[[Admission], Awaitable[None]] | None = None,
        fields: dict[str, Any] | None = None,
    ) -> Submission[Any]:
        """Submit ``key`` to the engine as this protocol. Raises :class:`AdmissionRefused` with the answer when
        the engine shuts down (503), is full (429 + ``Retry-After``) or the store is unreachable (503), and when
        ``key`` belongs to another protocol's rollout (409, :func:`conflict_response`). A duplicate of this
        protocol's own rollout is returned (``created=False``) for the protocol to answer its way.

        ``run`` is observed: it runs with the rollout as the current :mod:`~osmosis_compat.observability.context`
        (logs), inside the ``rollout`` span (traces), and counts in the metrics; it may set
        ``admission.context["outcome"]`` (``success`` / ``failure`` / ``cancelled``) for them."""
        try:
            submission = await self.engine.submit(
                key, run=self._observed(key, run), prepare=prepare, abort=abort, protocol=self.name, fields=fields
            )
        except EngineClosedError:
            raise self._refused("shutting_down", JSONResponse({"detail": self.shutting_down_detail}, status_code=503)) from None
        except EngineFullError:
            raise self._refused("full", queue_full()) from None
        except StoreUnavailableError as exc:
            logger.error("Rollout %s not admitted (%s): the rollout store is unavailable: %s", key, self.name, exc)
            raise self._refused(
                "store_unavailable", JSONResponse({"detail": STORE_UNAVAILABLE_DETAIL}, status_code=503)
            ) from None
        if not submission.created and submission.protocol != self.name:
            raise self._refused("conflict", conflict_response(key, submission.protocol))
        found = metrics.peek()
        if found is not None:
            if submission.created:
                found.child(found.admitted, self.name, self.agent).inc()
            else:
                found.child(found.refused, self.name, self.agent, "duplicate").inc()
        return submission

    def _refused(self, reason: str, response: JSONResponse) -> AdmissionRefused:
        found = metrics.peek()
        if found is not None:
            found.child(found.refused, self.name, self.agent, reason).inc()
        return AdmissionRefused(response)

    def _observed(self, key: str, run: Callable[[Admission], Awaitable[None]]) -> Callable[[Admission], Awaitable[None]]:
        scope = context.RolloutScope(key, self.name, self.agent)

        async def observed(admission: Admission) -> None:
            context.enter(scope)
            found = metrics.peek()
            if found is not None:
                found.child(found.running, self.name, self.agent).inc()
            outcome = "failure"
            try:
                with tracing.span(
                    "rollout",
                    {"osmosis.rollout_id": key, "osmosis.protocol": self.name, "osmosis.agent": self.agent},
                    kind="server",
                ) as span:
                    admission.context["span_context"] = tracing.current_span_context()
                    try:
                        await run(admission)
                        outcome = admission.context.get("outcome", "success")
                    except asyncio.CancelledError:
                        outcome = admission.context.get("outcome", "cancelled")
                        raise
                    finally:
                        if span is not None:
                            span.set_attribute("osmosis.outcome", outcome)
            finally:
                if found is not None:
                    found.child(found.running, self.name, self.agent).dec()
                    found.child(found.finished, self.name, self.agent, outcome).inc()
                    found.child(found.duration, self.name, self.agent, outcome).observe(time.monotonic() - admission.admitted_at)

        return observed

    def url_rejection(self, urls: Mapping[str, str | None]) -> JSONResponse | None:
        """422 for a controller URL whose host the allow-list does not allow (``None`` when all are allowed)."""
        return controller_url_rejection(self.allow_list, urls)

    # -- the app's side ---------------------------------------------------------------------------------------

    def add_routes(self, router: Any) -> None:
        """Add this protocol's own routes to ``router`` (an app or ``APIRouter``); ``POST /rollout`` is
        :func:`add_rollout_entry`'s."""

    def health_fields(self) -> dict[str, Any]:
        """Keys this protocol adds to ``GET /health``."""
        return {}

    async def close(self) -> None:
        """Stop the protocol's own background work (after the engine drained)."""


def queue_full() -> JSONResponse:
    """429 with ``Retry-After``: admission is full, the controller retries later."""
    return JSONResponse(
        {"detail": "rollout queue is full; retry later"}, status_code=429, headers={"Retry-After": RETRY_AFTER_SECONDS}
    )


def add_rollout_entry(
    router: Any,
    polling: Any,
    callbacks: Any = None,
    *,
    guard: Guard | None = None,
    guard_callbacks: bool = True,
    callbacks_missing: str | None = None,
) -> None:
    """``POST /rollout``, shared by two peers: a body with ``completion_callback_url`` goes to ``callbacks`` (the
    0.2.x :class:`~.workflow_protocol.WorkflowCallbacks`), one without it to ``polling``
    (:class:`~.polling.PollingProtocol`). ``guard`` checks the bodies (those with callback URLs only when
    ``guard_callbacks``: a 0.2.31 controller sends no key). Without ``callbacks`` a callback body gets 422 with
    ``callbacks_missing`` as the reason."""

    async def rollout(request: RolloutInitRequest, raw: Request) -> Any:
        if guard is not None and (guard_callbacks or not request.uses_callbacks):
            denied = guard(raw)
            if denied is not None:
                return denied
        if request.uses_callbacks and callbacks is None:
            return JSONResponse(status_code=422, content={"detail": callbacks_missing or "callback URLs are not served here"})
        with tracing.incoming(raw.headers):  # the rollout's span continues the controller's trace
            if not request.uses_callbacks:
                return await polling.admit_request(request)
            return await callbacks.admit_request(request)

    router.add_api_route(
        "/rollout",
        rollout,
        methods=["POST"],
        status_code=202 if callbacks is None else 200,
        response_model=None if callbacks is None else RolloutInitResponse,
        summary=(
            "Admit a rollout from a 0.3.8 polling controller (202 + lease)"
            if callbacks is None
            else "Admit a rollout: 0.2.31 callback body (200) or 0.3.8 polling body (202 + lease)"
        ),
    )
