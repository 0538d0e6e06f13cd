"""``AgentSpec``: one agent to serve — a legacy loop or a workflow backend — and the app for each protocol.

An agent has a *native* protocol (a ``RolloutAgentLoop`` speaks the legacy ``/v1/rollout/init`` protocol, a
workflow backend the ``/rollout`` protocol) and can be exposed on the other one through
:mod:`osmosis_compat.adapters`. :meth:`AgentSpec.build_app` is the one place that turns an agent and a protocol
into a served app; the mixed server (:mod:`.mixed_app`) and the local runner (``osmosis-compat eval``) both use
it, so what ``eval`` measures is what ``serve`` serves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["AgentSpec", "AgentSpecError", "EXPOSURES", "PROTOCOLS", "url_safe_name"]

PROTOCOLS = ("legacy", "workflow")
#: ``native`` = the agent's own protocol; ``both`` = native plus the adapted one.
EXPOSURES = ("native", "legacy", "workflow", "both")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def url_safe_name(name: str) -> str:
    """``name`` made usable as an agent name: runs of other characters become ``-`` (``"My agent"`` → ``"My-agent"``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", str(name)).strip("-._")[:128]
    return safe or "agent"


class AgentSpecError(ValueError):
    """An agent cannot be served as asked (bad name, bad exposure, no adapter for it …)."""


@dataclass
class AgentSpec:
    """One agent of a server.

    Give exactly one of ``loop`` (a ``RolloutAgentLoop`` instance) or ``backend`` (a workflow
    ``ExecutionBackend``, normally a ``LocalBackend``). ``name`` addresses the agent in URLs
    (``/agents/<name>/…``): 1–128 characters of letters, digits, ``.``, ``_``, ``-``, starting with a letter or
    digit. ``expose`` picks the protocols: ``native`` (default), ``legacy``, ``workflow`` or ``both``.
    """

    name: str
    loop: Any = None
    backend: Any = None
    expose: str = "native"

    def __post_init__(self) -> None:
        if (self.loop is None) == (self.backend is None):
            raise AgentSpecError(f"agent {self.name!r}: give exactly one of loop= (legacy) or backend= (workflow)")
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise AgentSpecError(
                f"agent name {self.name!r} cannot be used in a URL path: use 1-128 letters, digits, '.', '_' or '-' "
                "(starting with a letter or digit); on the command line, name it with -m NAME=module:attr"
            )
        if self.expose not in EXPOSURES:
            raise AgentSpecError(f"agent {self.name!r}: expose must be one of {', '.join(EXPOSURES)}, got {self.expose!r}")

    @classmethod
    def from_target(cls, target: Any, *, name: str | None = None, expose: str = "native") -> AgentSpec:
        """The spec for a loaded CLI :class:`~osmosis_compat.cli.targets.Target`."""
        if target.kind == "legacy":
            return cls(name=name or target.name, loop=target.loop, expose=expose)
        return cls(name=name or target.name, backend=target.backend(), expose=expose)

    @property
    def kind(self) -> str:
        """``"legacy"`` or ``"workflow"``: the agent's native protocol."""
        return "legacy" if self.loop is not None else "workflow"

    @property
    def protocols(self) -> tuple[str, ...]:
        """The protocols this agent is served on, native first."""
        native = self.kind
        other = "workflow" if native == "legacy" else "legacy"
        if self.expose == "native" or self.expose == native:
            return (native,)
        if self.expose == "both":
            return (native, other)
        return (other,)

    # -- the agent on each protocol -----------------------------------------------------------------

    def as_loop(self) -> Any:
        """A ``RolloutAgentLoop`` for the legacy protocol: the loop itself, or the workflow through the adapter."""
        if self.loop is not None:
            return self.loop
        from osmosis_compat.adapters import workflow_as_loop

        workflow_cls = getattr(self.backend, "workflow_cls", None)
        if workflow_cls is None:
            raise AgentSpecError(
                f"agent {self.name!r}: only a LocalBackend workflow can be exposed on the legacy protocol "
                f"(got {type(self.backend).__name__})"
            )
        return workflow_as_loop(
            workflow_cls,
            grader=getattr(self.backend, "grader_cls", None),
            workflow_config=getattr(self.backend, "workflow_config", None),
            grader_config=getattr(self.backend, "grader_config", None),
            name=self.name,
        )

    def as_backend(self) -> Any:
        """An ``ExecutionBackend`` for the workflow protocol: the backend, or the loop through the adapter."""
        if self.backend is not None:
            return self.backend
        from osmosis_compat.adapters import loop_as_workflow
        from osmosis_compat.workflow import LocalBackend

        workflow_cls, grader_cls = loop_as_workflow(self.loop)
        return LocalBackend(workflow=workflow_cls, workflow_config=_adapted_config(self.loop, self.name), grader=grader_cls)

    def build_app(
        self,
        protocol: str,
        *,
        api_key: str | None = None,
        debug_dir: str | None = None,
        settings: Any = None,
        drain_timeout_seconds: float = 10.0,
        polling: Any = None,
        store: Any = None,
        keyless_callbacks: bool = False,
        controller_hosts: Any = None,
    ) -> Any:
        """The ASGI app serving this agent on ``protocol`` (``"legacy"`` or ``"workflow"``); both also answer the
        0.3.8 polling protocol.

        ``api_key`` guards every route that starts a rollout (legacy: ``/v1/rollout/init``; polling and 0.2.x
        ``/rollout`` routes: ``Bearer <api_key>``); ``debug_dir``/``settings`` apply to the legacy protocol;
        ``drain_timeout_seconds`` bounds the shutdown drain; ``polling`` is a
        :class:`~osmosis_compat.server.polling.PollingSettings` (default: upstream's 30 / 120 / 900 s);
        ``store`` is where rollout state lives (default: in memory). ``keyless_callbacks`` and
        ``controller_hosts`` as :func:`~osmosis_compat.server.workflow_app.create_rollout_server` (the caller
        announces what the key means for 0.2.31 callback controllers; the app itself does not).
        """
        from osmosis_compat.server.polling import PollingSettings

        polling = polling or PollingSettings()
        timings = {
            "result_wait_timeout_sec": polling.result_wait_timeout_sec,
            "polling_lease_timeout_sec": polling.polling_lease_timeout_sec,
            "result_retention_sec": polling.result_retention_sec,
        }
        if protocol == "legacy":
            from osmosis_compat.server.legacy_app import create_app

            return create_app(
                self.as_loop(),
                settings=settings,
                api_key=api_key,
                debug_dir=debug_dir,
                drain_timeout_seconds=drain_timeout_seconds,
                store=store,
                controller_hosts=controller_hosts,
                **timings,
            )
        if protocol == "workflow":
            from osmosis_compat.server.workflow_app import create_rollout_server

            return create_rollout_server(
                backend=self.as_backend(),
                configure_logging=False,
                drain_timeout_seconds=drain_timeout_seconds,
                api_key=api_key,
                store=store,
                keyless_callbacks=keyless_callbacks,
                controller_hosts=controller_hosts,
                announce_auth=False,
                **timings,
            )
        raise AgentSpecError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")


def _adapted_config(loop: Any, name: str) -> Any:
    """Workflow config for an adapted loop: named after the agent, with no backend concurrency cap.

    Without a config ``LocalBackend`` runs at most 4 rollouts at a time; a legacy loop had no such cap (its
    server allowed 100), so the adapted agent keeps that behaviour.
    """
    from osmosis_compat.workflow import AgentWorkflowConfig, ConcurrencyConfig

    return AgentWorkflowConfig(name=name, concurrency=ConcurrencyConfig(max_concurrent=100))
