"""``create_mixed_app``: legacy loops and workflows in one server, each on its own protocol and, on request, on the
other one through the adapters.

Addressing (docs/serving.md):

- every agent has a path prefix ``/agents/<name>``: a legacy controller posts to
  ``/agents/<name>/v1/rollout/init``, a workflow controller (0.2.x callbacks, or today's 0.3.8 polling) to
  ``/agents/<name>/rollout``; every agent answers the 0.3.8 polling protocol (``/rollout``,
  ``/rollout/{id}/result``, ``/rollout/cancel``) — a legacy loop natively, unless it is also exposed on the
  workflow protocol, whose app then takes all of ``/rollout*``;
  ``/agents/<name>/health`` is the agent's own health (its native protocol's body),
  ``/agents/<name>/platform/health`` the legacy key check;
- the *default* agent (the only one, or the one named with ``default=``) is also reachable at the root paths
  (``/v1/rollout/init``, ``/rollout``, ``/platform/health``), so a controller configured for a single-agent server
  keeps working unchanged;
- ``GET /health`` lists every agent with its protocols, endpoints and health.

Each (agent, protocol) pair is a complete app built by :meth:`AgentSpec.build_app` — the same app a single agent
gets — and every one of them has its lifespan run (engine start, drain on shutdown) by
:class:`~.lifespans.SubAppLifespans`, which Starlette mounting would not do.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Sequence
from typing import Any

from osmosis_compat.runtime.http import hold_clients
from osmosis_compat.runtime.wirecheck import resolve_controller_hosts

from .agents import AgentSpec
from .lifespans import SubAppLifespans
from .security import callback_auth_notice, legacy_guard

__all__ = ["MixedAppError", "MixedRolloutApp", "create_mixed_app", "AgentSpec"]

AGENTS_PREFIX = "/agents/"

logger = logging.getLogger("osmosis_compat.server.mixed")


class MixedAppError(ValueError):
    """The set of agents cannot be served together (name collision, unknown default …)."""


def create_mixed_app(
    agents: Sequence[AgentSpec],
    *,
    default: str | None = None,
    api_key: str | None = None,
    debug_dir: str | None = None,
    settings: Any = None,
    drain_timeout_seconds: float = 10.0,
    polling: Any = None,
    store: Any = None,
    keyless_callbacks: bool = False,
    controller_hosts: Any = None,
    announce_auth: bool = True,
) -> MixedRolloutApp:
    """Build one ASGI app serving every agent of ``agents`` on the protocols its ``expose`` asks for.

    ``default`` names the agent also served at the root paths (default: the only agent when there is one;
    with several and no ``default``, the root rollout paths answer 404 listing the agents). ``api_key`` guards
    every route that starts a rollout, on every agent and protocol (legacy ``/v1/rollout/init`` and
    ``/platform/health`` as ``create_app``; ``/rollout*`` as 0.3.8's ``create_rollout_server(api_key=…)``).
    ``debug_dir`` gets one sub-directory per agent for legacy debug traces; ``polling`` sets the 0.3.8 timings
    (:class:`~.polling.PollingSettings`); ``store`` (default: the one ``$OSMOSIS_COMPAT_STORE`` names, else one in
    memory per app) is shared by every agent, each under its own namespace. Raises :class:`MixedAppError` for no agents, two agents with one name, or an unknown ``default``, and
    :class:`~.agents.AgentSpecError` when an agent cannot be exposed as asked.

    ``keyless_callbacks`` / ``controller_hosts`` apply to every agent as in ``create_rollout_server``; with
    ``api_key`` one warning is logged naming the routes a 0.2.31 callback controller (which sends no key) cannot use
    (:meth:`MixedRolloutApp.callback_routes`; ``announce_auth=False`` when the caller says it, as ``serve`` does).
    """
    if not agents:
        raise MixedAppError("no agents to serve")
    by_name: dict[str, AgentSpec] = {}
    for agent in agents:
        if agent.name in by_name:
            raise MixedAppError(
                f"two agents are named {agent.name!r}; agent names address them in URLs (/agents/<name>/…) and must "
                "be unique — rename one (on the command line: -m NAME=module:attr)"
            )
        by_name[agent.name] = agent
    if default is None and len(by_name) == 1:
        default = next(iter(by_name))
    if default is not None and default not in by_name:
        raise MixedAppError(f"default agent {default!r} is not one of the served agents: {', '.join(by_name)}")
    allow_list = resolve_controller_hosts(controller_hosts)
    if store is None:
        from osmosis_compat.runtime.store import STORE_ENV, open_store

        store = open_store(os.environ.get(STORE_ENV))
    apps: dict[str, dict[str, Any]] = {}
    for name, agent in by_name.items():
        agent_debug_dir = os.path.join(debug_dir, name) if debug_dir else None
        if agent_debug_dir:
            os.makedirs(agent_debug_dir, exist_ok=True)
        apps[name] = {
            protocol: agent.build_app(
                protocol,
                api_key=api_key,
                debug_dir=agent_debug_dir,
                settings=settings,
                drain_timeout_seconds=drain_timeout_seconds,
                polling=polling,
                # each (agent, protocol) keeps its rollouts apart in a shared store; in memory each app has its own
                store=store.namespaced(f"agents:{name}:{protocol}:") if store.shared else None,
                keyless_callbacks=keyless_callbacks,
                controller_hosts=allow_list,
            )
            for protocol in agent.protocols
        }
    app = MixedRolloutApp(by_name, apps, default, api_key=api_key)
    routes = app.callback_routes()
    if api_key is not None and routes and announce_auth:
        logger.warning(callback_auth_notice(routes, keyless_callbacks=keyless_callbacks, allow_list=allow_list))
    return app


class MixedRolloutApp:
    """The ASGI app returned by :func:`create_mixed_app` (see the module docstring for its routes).

    ``agents`` maps names to specs; ``apps[name][protocol]`` is the app serving that agent on that protocol.
    """

    def __init__(
        self, agents: dict[str, AgentSpec], apps: dict[str, dict[str, Any]], default: str | None, *, api_key: str | None = None
    ) -> None:
        self.agents = agents
        self.apps = apps
        self.default = default
        # /health asks each agent's app in process: with the server's key, as a controller would (a keyed workflow
        # app answers every route only with it, so without it a healthy agent showed as "unavailable, 401").
        self._health_headers = [] if api_key is None else [(b"authorization", f"Bearer {api_key}".encode())]
        self._metrics_guard = legacy_guard(api_key)
        self._lifespans = SubAppLifespans(
            [(f"{name}/{protocol}", app) for name, by_protocol in apps.items() for protocol, app in by_protocol.items()]
        )

    def callback_routes(self) -> list[str]:
        """The paths where a 0.2.31 callback controller can admit rollouts (agents served on the workflow
        protocol, the default one also at ``/rollout``)."""
        routes = [f"{AGENTS_PREFIX}{name}/rollout" for name, agent in self.agents.items() if "workflow" in agent.protocols]
        if self.default is not None and "workflow" in self.agents[self.default].protocols:
            routes.insert(0, "/rollout")
        return routes

    def endpoints(self, name: str) -> dict[str, str]:
        """``{protocol: rollout endpoint path}`` for agent ``name``: ``legacy`` (TrainGate), ``workflow`` (a 0.2.x
        callback controller) and ``polling`` (today's 0.3.8 controller, which every agent answers)."""
        prefix = f"{AGENTS_PREFIX}{name}"
        protocols = self.agents[name].protocols
        endpoints = {}
        if "legacy" in protocols:
            endpoints["legacy"] = f"{prefix}/v1/rollout/init"
        if "workflow" in protocols:
            endpoints["workflow"] = f"{prefix}/rollout"
        endpoints["polling"] = f"{prefix}/rollout"
        return endpoints

    def adapted(self, name: str, protocol: str) -> bool:
        """Whether agent ``name`` answers ``protocol`` (``legacy``, ``workflow`` or ``polling``) through an adapter:
        the legacy or workflow protocol when it is not the agent's kind; polling when ``/rollout*`` is taken by an
        adapted workflow app (a legacy loop also exposed on the workflow protocol). A legacy loop alone, or any
        workflow, answers polling natively."""
        agent = self.agents[name]
        if protocol == "polling":
            return agent.kind == "legacy" and "workflow" in agent.protocols
        return protocol != agent.kind

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1000})
            return
        path = _route_path(scope)
        if path == "/health":
            if scope["method"] not in ("GET", "HEAD"):
                await _json(send, 405, {"detail": "Method Not Allowed"})
                return
            await _json(send, 200, await self._health())
            return
        if path in ("/metrics", "/livez", "/readyz") and scope["method"] in ("GET", "HEAD"):
            await self._operations(path, scope, receive, send)
            return
        if path in ("/docs", "/openapi.json") and scope["method"] in ("GET", "HEAD"):
            from .mixed_docs import serve_docs  # one OpenAPI document for all agents (FastAPI docs per sub-app)

            await serve_docs(self, path, scope, receive, send)
            return
        if path.startswith(AGENTS_PREFIX):
            name, _, rest = path[len(AGENTS_PREFIX):].partition("/")
            if name not in self.agents:
                await _json(send, 404, {"detail": f"no agent named {name!r}", "agents": list(self.agents)})
                return
            child = dict(scope)
            child["root_path"] = scope.get("root_path", "") + AGENTS_PREFIX + name
            await self._dispatch(name, "/" + rest, child, receive, send)
            return
        if self.default is None:
            await _json(
                send,
                404,
                {
                    "detail": "this server hosts several agents and no default one: address an agent under "
                    "/agents/<name>/ (see GET /health)",
                    "agents": {name: self.endpoints(name) for name in self.agents},
                },
            )
            return
        await self._dispatch(self.default, path, scope, receive, send)

    async def _dispatch(self, name: str, path: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
        agent = self.agents[name]
        protocol = _protocol_of(path) or agent.protocols[0]
        app = self.apps[name].get(protocol)
        if app is None and protocol == "workflow" and agent.kind == "legacy":
            # /rollout* without an adapted workflow app: the legacy app answers the 0.3.8 polling protocol itself
            # (and tells a 0.2.x callback controller to use --expose workflow).
            app = self.apps[name].get("legacy")
        if app is None:
            await _json(
                send,
                404,
                {
                    "detail": f"agent {name!r} is not served on the {protocol} protocol (it is on: "
                    f"{', '.join(agent.protocols)}); serve it with expose='both' / --expose both",
                },
            )
            return
        state = self._lifespans.state_of(app)
        if state:
            scope = {**scope, "state": {**scope.get("state", {}), **state}}
        await app(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        # Each sub-app closes the shared HTTP pool when it has drained; the hold defers that until all have, so
        # one agent's shutdown never cuts another agent's in-flight model call or callback.
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(hold_clients())
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    try:
                        await self._lifespans.startup()
                    except Exception as exc:
                        await send({"type": "lifespan.startup.failed", "message": str(exc)})
                        return
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    try:
                        await self._lifespans.shutdown()
                    except Exception as exc:
                        await send({"type": "lifespan.shutdown.failed", "message": str(exc)})
                        return
                    await stack.aclose()  # close the pool before reporting completion
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    def engines(self) -> list[Any]:
        """The engines of every (agent, protocol) app."""
        return [engine for by_protocol in self.apps.values() for app in by_protocol.values()
                for engine in getattr(app.state, "rollout_engines", ())]

    async def _operations(self, path: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """``/metrics`` (behind the key), ``/livez``, ``/readyz`` for the whole server (:mod:`.operations`)."""
        from starlette.requests import Request

        from .operations import metrics_response, readiness

        if path == "/livez":
            await _json(send, 200, {"status": "alive"})
            return
        if path == "/readyz":
            reasons = await readiness(self.engines())
            await _json(send, 503 if reasons else 200, {"status": "not ready", "reasons": reasons} if reasons else {"status": "ready"})
            return
        response = self._metrics_guard(Request(scope)) or metrics_response()
        await response(scope, receive, send)

    async def _health(self) -> dict[str, Any]:
        agents: dict[str, Any] = {}
        for name, agent in self.agents.items():
            native_app = self.apps[name][agent.protocols[0]]
            agents[name] = {
                "kind": agent.kind,
                "protocols": list(agent.protocols),
                "endpoints": self.endpoints(name),
                "health": await _get_json(native_app, "/health", self._health_headers),
            }
        body: dict[str, Any] = {"status": "healthy", "default_agent": self.default, "agents": agents}
        if self.default is not None:
            # Health checks written for a single-agent server keep finding their keys (agent_loop, active_rollouts …).
            default_health = agents[self.default]["health"]
            if isinstance(default_health, dict):
                body.update({k: v for k, v in default_health.items() if k != "status" and k not in body})
        return body


def _protocol_of(path: str) -> str | None:
    """Which protocol a path inside an agent belongs to (None: the agent's first protocol, e.g. /health, /docs)."""
    if path in ("/v1/rollout/init", "/platform/health"):
        return "legacy"
    if path == "/rollout" or path.startswith("/rollout/"):
        return "workflow"
    return None


def _route_path(scope: dict[str, Any]) -> str:
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if root_path and path.startswith(root_path) and (len(path) == len(root_path) or path[len(root_path)] == "/"):
        return path[len(root_path):] or "/"
    return path


async def _json(send: Any, status: int, body: Any) -> None:
    payload = json.dumps(body, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def _get_json(app: Any, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    """``GET path`` on an ASGI app in-process (with ``headers``); its JSON body (or an error note)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": list(headers or []),
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    sent = False
    status = 500
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    try:
        body = json.loads(b"".join(chunks) or b"null")
    except ValueError:
        body = None
    return body if status == 200 else {"status": "unavailable", "http_status": status, "body": body}
