"""The one callback sender: both protocols post their results through it.

Retries follow the protocol's :class:`~.delivery.DeliveryPolicy`; a per-rollout :class:`CallbackLedger`
guarantees each kind of callback (``"completion"``, ``"grader"``, ``"final"`` …) is delivered at most once, so
an error path can never post a second terminal callback after one was delivered.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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


@dataclass
class CallbackLedger:
    """Which callbacks of one rollout have been delivered."""

    rollout_id: str
    delivered: set[str] = field(default_factory=set)

    def was_delivered(self, kind: str) -> bool:
        return kind in self.delivered


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
        """Deliver ``payload``; return the response, or ``None`` if ``kind`` was already delivered.

        Raises the policy's error when delivery finally fails (the ledger is then left unchanged, so an error
        path may still post a fallback of the same kind).
        """
        if ledger is not None and ledger.was_delivered(kind):
            logger.warning(
                "Not sending a second %r callback for rollout %s (one was already delivered)", kind, ledger.rollout_id
            )
            return None
        response = await post_json(url, payload, policy=policy or self.policy, headers=headers)
        if ledger is not None:
            ledger.delivered.add(kind)
        return response
