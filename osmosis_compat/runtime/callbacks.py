"""The one callback sender: both protocols post their results through it.

Retries follow the protocol's :class:`~.delivery.DeliveryPolicy`; a per-rollout :class:`CallbackLedger`
guarantees each kind of callback (``"completion"``, ``"grader"``, ``"final"`` …) is delivered at most once, so
an error path can never post a second terminal callback after one was delivered.

A delivery, once started, runs to its end as its own task: cancelling the rollout (shutdown after the drain) does
not cut a callback the controller may already be answering. The ledger tracks those tasks, so the shutdown path
waits for a callback in flight (:meth:`CallbackLedger.settle`) instead of sending a second, contradictory one —
the callback that started wins.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from .delivery import DeliveryPolicy, post_json
from .http import ClientSettings
from .retry import Backoff

__all__ = [
    "CallbackLedger",
    "CallbackSender",
    "WORKFLOW_CALLBACK_POLICY",
    "get_workflow_callback_policy",
    "set_workflow_callback_policy",
]

logger = logging.getLogger("osmosis_compat.runtime.callbacks")

_WORKFLOW_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def _workflow_retryable(status: int) -> bool:
    return status in _WORKFLOW_RETRY_STATUSES


def _any_status(status: int) -> bool:
    return True


WORKFLOW_CALLBACK_POLICY = DeliveryPolicy(
    attempts=5,
    backoff=Backoff(base_delay=0.5, max_delay=8.0),
    client=ClientSettings(timeout_seconds=10.0),
    is_retryable=_workflow_retryable,
    # Any other non-2xx fails at once (upstream: raise_for_status).
    is_client_error=_any_status,
)
"""Workflow protocol (spec workflow-api §3.8): 5 attempts, delays 0.5, 1, 2, 4 s; 429/5xx-gateway and transport
errors retried; any 2xx is success; any other status fails at once."""

_workflow_policy = WORKFLOW_CALLBACK_POLICY


def get_workflow_callback_policy() -> DeliveryPolicy:
    """The policy workflow servers use now (``WORKFLOW_CALLBACK_POLICY`` unless replaced)."""
    return _workflow_policy


def set_workflow_callback_policy(policy: DeliveryPolicy | None) -> None:
    """Replace the workflow callback policy process-wide (tests shorten the backoff); ``None`` restores it."""
    global _workflow_policy
    _workflow_policy = policy or WORKFLOW_CALLBACK_POLICY


T = TypeVar("T")


@dataclass
class CallbackLedger:
    """Which callbacks of one rollout have been delivered, and which are being delivered right now."""

    rollout_id: str
    delivered: set[str] = field(default_factory=set)
    in_flight: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)

    def was_delivered(self, kind: str) -> bool:
        """Whether a ``kind`` callback was delivered (answered with success)."""
        return kind in self.delivered

    def is_in_flight(self, kind: str) -> bool:
        """Whether a ``kind`` delivery is under way right now."""
        return kind in self.in_flight

    def was_started(self, kind: str) -> bool:
        """Whether a ``kind`` delivery was ever started through :meth:`start`, whatever became of it."""
        return kind in self.started

    def start(self, kind: str, delivery: Awaitable[T], *, marks_delivered: bool = False) -> asyncio.Future[T]:
        """Run ``delivery`` as a task tracked under ``kind`` until it ends. Await it through ``asyncio.shield`` so
        that cancelling the awaiting rollout leaves the delivery running. ``marks_delivered``: the task returning
        (not raising) means the callback was delivered — recorded even if nobody awaits it any more."""
        task = asyncio.ensure_future(delivery)
        self.in_flight[kind] = task
        self.started.add(kind)

        def forget(done: asyncio.Future[Any]) -> None:
            if self.in_flight.get(kind) is done:
                del self.in_flight[kind]
            if done.cancelled():
                return
            if done.exception() is None and marks_delivered:  # also marks the exception retrieved
                self.delivered.add(kind)

        task.add_done_callback(forget)
        return task

    async def settle(self, kind: str | None = None) -> None:
        """Wait until the in-flight ``kind`` delivery (all kinds when ``None``) has ended, however it ended."""
        tasks = [task for name, task in list(self.in_flight.items()) if kind is None or name == kind]
        if tasks:
            await asyncio.wait(tasks)


class CallbackSender:
    """Posts callback payloads with a protocol's retry policy, each kind at most once per rollout."""

    def __init__(self, policy: DeliveryPolicy) -> None:
        self.policy = policy

    async def send(
        self,
        url: str,
        payload: Any,
        *,
        kind: str,
        ledger: CallbackLedger | None = None,
        headers: Mapping[str, str] | None = None,
        policy: DeliveryPolicy | None = None,
    ) -> httpx.Response | None:
        """Deliver ``payload``; return the response, or ``None`` if a ``kind`` callback was already delivered or
        is being delivered.

        With a ledger the delivery runs as its own task (see the module docstring): cancelling the caller does not
        stop it. Raises the policy's error when delivery finally fails (the ledger then records nothing, so an
        error path may still post a fallback of the same kind).
        """
        if ledger is None:
            return await post_json(url, payload, policy=policy or self.policy, headers=headers, callback=kind)
        if ledger.was_delivered(kind) or ledger.is_in_flight(kind):
            # Only the error/shutdown paths get here, and they settle in-flight deliveries first: whatever started
            # first has won.
            logger.warning(
                "Not sending a second %r callback for rollout %s (one was already sent)", kind, ledger.rollout_id
            )
            return None
        delivery = post_json(url, payload, policy=policy or self.policy, headers=headers, callback=kind)
        return await asyncio.shield(ledger.start(kind, delivery, marks_delivered=True))
