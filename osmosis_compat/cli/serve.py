"""``osmosis-compat serve`` — serve one agent, or several legacy loops and workflows from one server."""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from osmosis_compat.runtime.store import STORE_ENV

HELP = "serve agent loops and workflows (one or several) to legacy, 0.2.x and today's 0.3.8 controllers"
DESCRIPTION = """Serve agents over HTTP.

  -m module:agent_loop                 a legacy RolloutAgentLoop: exactly the legacy `osmosis serve`
  -m path/to/entrypoint.py             a workflow entrypoint (or module:WorkflowClass / module:backend)
  -m NAME=module:attr                  the same, addressed as NAME

Every agent answers today's Osmosis controller (0.3.8: POST /rollout → 202 + lease, GET /rollout/{id}/result,
POST /rollout/cancel) besides its own protocol: a legacy loop also the legacy TrainGate (/v1/rollout/init), a
workflow also the 0.2.x callback controller (POST /rollout with callback URLs).

With several -m (or --expose other than native) one server hosts them all: each agent answers under
/agents/<name>/ (legacy: /agents/<name>/v1/rollout/init, workflow and polling: /agents/<name>/rollout), the
default agent (--default, or the only one) also at the root paths, and GET /health lists every agent. See
docs/serving.md.

--expose both|legacy|workflow also serves each agent on the other protocol through the adapters.
--api-key guards every route that starts a rollout (a lone workflow: every route, as 0.3.8). A key is generated
unless --local or a lone workflow (whose entrypoint would serve it without one).
--keyless-callbacks admits 0.2.31 callback bodies (POST /rollout with callback URLs) without the key: that
controller sends none. --controller-hosts (or $OSMOSIS_COMPAT_CONTROLLER_HOSTS) restricts the hosts controller-
supplied URLs may name (callbacks, chat_completions_url, server_url). docs/serving.md, "Keys and hosts".
--workers N runs N processes on this host; they (and servers on other hosts) act as one rollout server when they
share a store: --store redis://host:6379/0 or $OSMOSIS_COMPAT_STORE (docs/scaling.md).
Errors print `Error: <message>` and exit 1."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--module", action="append", default=[], metavar="[NAME=]TARGET",
                        help="an agent to serve (repeatable): module:attr or a workflow entrypoint")
    parser.add_argument("--mcp", action="append", default=[], metavar="[NAME=]DIR",
                        help="a FastMCP server directory served as MCPAgentLoop (repeatable; needs osmosis-compat[mcp])")
    parser.add_argument("-p", "--port", type=int, default=None,
                        help="port (default $_OSMOSIS_ROLLOUT_PORT, as 0.3.8's entrypoints read it, else 9000)")
    parser.add_argument("--timeout-keep-alive", type=int, default=KEEP_ALIVE_SECONDS, metavar="SECONDS",
                        help=f"keep idle connections open this long (default {KEEP_ALIVE_SECONDS}, as 0.3.8: longer "
                             "than the platform load balancer's 2,100 s, else it reuses a closing one and gets a 502)")
    parser.add_argument("-H", "--host", default="0.0.0.0", help="bind address (default 0.0.0.0)")
    parser.add_argument("--no-validate", action="store_true", help="skip validating the agents before serving")
    parser.add_argument("--reload", action="store_true", help="not supported (as upstream): see the error it prints")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error", "critical"),
                        help="uvicorn log level (default info)")
    parser.add_argument("--log-format", choices=("text", "json"), default=None,
                        help="log lines as plain text (default) or one JSON object per line with the rollout id "
                             "(default: $OSMOSIS_COMPAT_LOG_FORMAT, else text); keys and tokens are never logged")
    parser.add_argument("--skip-register", action="store_true",
                        help="accepted for compatibility; osmosis-compat never registers with the Osmosis Platform")
    parser.add_argument("--local", "--local-debug", dest="local_debug", action="store_true",
                        help="local debugging: no API key, no registration")
    parser.add_argument("--api-key", help="the key controllers must present on every route that starts a rollout "
                                          "(default: a generated one, printed at startup)")
    parser.add_argument("--log", metavar="DIR", help="write legacy debug traces under DIR/<timestamp>/")
    parser.add_argument("--expose", choices=("native", "legacy", "workflow", "both"), default="native",
                        help="protocols per agent: its own (default), the other one through the adapter, or both")
    parser.add_argument("--default", metavar="NAME", help="the agent also served at the root paths "
                                                          "(default: the only agent)")
    parser.add_argument("--keyless-callbacks", action="store_true",
                        help="with a key, still admit 0.2.31 callback bodies (POST /rollout with callback URLs) "
                             "without it (that controller sends no key); every other route keeps requiring it")
    parser.add_argument("--controller-hosts", metavar="HOSTS", default=None,
                        help="comma-separated hosts controller-supplied URLs may name (host, host:port, *.domain, "
                             "CIDR); default $OSMOSIS_COMPAT_CONTROLLER_HOSTS, else any host")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="server processes on this host (default 1); more than one needs --store")
    parser.add_argument("--store", metavar="URL", default=None,
                        help="where rollout state lives, shared by every process and host serving as one: "
                             f"redis://host:6379/0 (default: ${STORE_ENV}, else in memory, one process only)")


@dataclass
class ServePlan:
    """What ``serve`` will run: the app (or, for a lone legacy loop, the loop for ``serve_agent_loop``)."""

    app: Any = None
    legacy_loop: Any = None
    api_key: str | None = None
    key_generated: bool = False
    debug_dir: str | None = None
    banner: str = ""


def run(args: argparse.Namespace) -> int:
    try:
        _configure_logs(args)
        args.port = resolve_port(args.port)
        check_port_free(args.host, args.port)
        check_store(args)
        plan = plan_server(args)
        if plan.legacy_loop is None or args.workers > 1:
            _warn_if_exposed(args, plan)  # a lone legacy loop: serve_agent_loop warns itself
        if args.workers > 1:
            return _run_workers(args, plan)
        if plan.legacy_loop is not None:
            from osmosis_compat.legacy.serve import serve_agent_loop

            serve_agent_loop(
                plan.legacy_loop,
                host=args.host,
                port=args.port,
                validate=not args.no_validate,
                log_level=args.log_level,
                skip_register=args.skip_register,
                api_key=args.api_key,
                local_debug=args.local_debug,
                debug_dir=args.log,
                controller_hosts=args.controller_hosts,
                timeout_keep_alive=args.timeout_keep_alive,
            )
            return 0
        import uvicorn

        print(plan.banner, flush=True)
        uvicorn.run(plan.app, host=args.host, port=args.port, log_level=args.log_level, log_config=_log_config(args),
                    timeout_keep_alive=args.timeout_keep_alive)
        return 0
    except Exception as exc:  # upstream: any failure → "Error: <msg>" and exit 1
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except SystemExit as exc:  # uvicorn exits (code 1) when it cannot start, after logging why
        if exc.code in (0, None):
            return 0
        print("Error: the server could not start (see the log above)", file=sys.stderr)
        return 1


KEEP_ALIVE_SECONDS = 2160
"""0.3.8's entrypoints serve with ``timeout_keep_alive=2160``: the Osmosis platform's load balancer keeps idle
connections 2,100 s, and with uvicorn's 5 s default it reuses a connection the server is closing (HTTP 502)."""

PORT_ENV = "_OSMOSIS_ROLLOUT_PORT"


def resolve_port(port: int | None) -> int:
    """``-p`` when given, else ``$_OSMOSIS_ROLLOUT_PORT`` (what the platform and ``osmosis eval run`` set for
    0.3.8 entrypoints), else 9000 (the legacy ``osmosis serve`` default)."""
    if port is not None:
        return port
    from osmosis_compat.legacy.exceptions import ServeError

    value = os.environ.get(PORT_ENV, "").strip()
    if not value:
        return 9000
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ServeError(f"{PORT_ENV}={value!r} is not a port number")
    return int(value)


def check_store(args: argparse.Namespace) -> None:
    """Resolve ``--store`` (else ``$OSMOSIS_COMPAT_STORE``) into the environment every engine — and every worker
    process — reads; refuse several workers without a shared store; check the store answers before serving."""
    import asyncio

    from osmosis_compat.legacy.exceptions import ServeError
    from osmosis_compat.runtime.store import open_store

    if args.workers < 1:
        raise ServeError(f"--workers must be at least 1, got {args.workers}")
    url = args.store if args.store is not None else os.environ.get(STORE_ENV) or None
    try:
        store = open_store(url)
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    if args.workers > 1 and not store.shared:
        raise ServeError(
            f"--workers {args.workers} needs a shared rollout store: a result poll, a cancel or a duplicate admission "
            "can reach any of the processes, and each one must find every rollout. Pass --store redis://host:6379/0 "
            f"(or set {STORE_ENV})."
        )
    if url is not None:
        os.environ[STORE_ENV] = url

        async def ping() -> None:
            await store.start()
            await store.close()

        asyncio.run(ping())  # StoreUnavailableError names the URL: "cannot reach the rollout store at …"


def _run_workers(args: argparse.Namespace, plan: ServePlan) -> int:
    """``--workers N``: uvicorn's process manager runs N processes, each building the same app
    (:func:`worker_app`) from the parent's resolved arguments; all share the store."""
    import json

    import uvicorn

    key, generated = plan.api_key if plan.api_key is not None else args.api_key, plan.key_generated
    if plan.legacy_loop is not None and key is None and not args.local_debug:
        from osmosis_compat.legacy.api_key import generate_api_key

        key, generated = generate_api_key(), True  # as the legacy serve: one key, shared by every worker
    argv = _argv_for_workers(args, plan, key)
    os.environ[_WORKER_ARGV_ENV] = json.dumps(argv)
    banner = plan.banner or _legacy_banner(plan, args, key if generated else None)
    print(f"{banner}\n  Workers:  {args.workers} processes, store {os.environ.get(STORE_ENV)}", flush=True)
    from osmosis_compat.observability.metrics import MULTIPROC_ENV

    metrics_dir = _multiprocess_metrics_dir()
    try:
        uvicorn.run(
            "osmosis_compat.cli.serve:worker_app",
            factory=True,
            workers=args.workers,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            log_config=_log_config(args),
            timeout_keep_alive=args.timeout_keep_alive,
        )
    finally:
        os.environ.pop(_WORKER_ARGV_ENV, None)
        if metrics_dir is not None:
            # Called in-process (tests, embedding), the variable must not outlive the directory: a later child
            # process would inherit it and fail writing its counters to a directory that is gone.
            os.environ.pop(MULTIPROC_ENV, None)
            metrics_dir.cleanup()
    return 0


def _configure_logs(args: argparse.Namespace) -> None:
    """``--log-format`` (else ``$OSMOSIS_COMPAT_LOG_FORMAT``) for this process and, through the environment, for
    the worker processes; the server's own key is never written to a log."""
    from osmosis_compat.observability.logs import LOG_FORMAT_ENV, redact_value, resolve_format

    # The handlers themselves are uvicorn's log_config (_log_config), installed when the server starts.
    os.environ[LOG_FORMAT_ENV] = resolve_format(args.log_format)
    redact_value(args.api_key)


def _log_config(args: argparse.Namespace) -> dict[str, Any]:
    from osmosis_compat.observability.logs import resolve_format, uvicorn_log_config

    return uvicorn_log_config(resolve_format(args.log_format), args.log_level)


def _multiprocess_metrics_dir() -> Any:
    """``--workers``: every process's metrics aggregated at ``/metrics`` (prometheus-client's multiprocess mode,
    docs/serving.md). A fresh directory unless ``$PROMETHEUS_MULTIPROC_DIR`` names one; it must be set before the
    workers import prometheus-client."""
    import tempfile

    from osmosis_compat.observability.metrics import MULTIPROC_ENV

    if os.environ.get(MULTIPROC_ENV):
        return None
    directory = tempfile.TemporaryDirectory(prefix="osmosis-metrics-")
    os.environ[MULTIPROC_ENV] = directory.name
    return directory


_WORKER_ARGV_ENV = "_OSMOSIS_COMPAT_SERVE_ARGV"


def _argv_for_workers(args: argparse.Namespace, plan: ServePlan, key: str | None) -> list[str]:
    argv = [item for spec in args.module for item in ("-m", spec)]
    argv += [item for spec in getattr(args, "mcp", []) for item in ("--mcp", spec)]
    argv += ["--no-validate", "--expose", args.expose, "--log-level", args.log_level]
    if args.log_format:
        argv += ["--log-format", args.log_format]
    if args.default:
        argv += ["--default", args.default]
    if args.local_debug:
        argv.append("--local")
    if key is not None:
        argv += ["--api-key", key]  # the parent's (possibly generated) key, the same in every worker
    if plan.debug_dir or args.log:
        argv += ["--log", plan.debug_dir or args.log]
    if args.keyless_callbacks:
        argv.append("--keyless-callbacks")
    if args.controller_hosts is not None:
        argv += ["--controller-hosts", args.controller_hosts]
    return argv


def _warn_if_exposed(args: argparse.Namespace, plan: ServePlan) -> None:
    """Serving on a non-loopback interface without a key: say so on stderr (issue 12)."""
    from osmosis_compat.server.security import non_loopback_warning

    key = plan.api_key
    if plan.legacy_loop is not None:  # the legacy serve generates a key unless --local
        key = None if args.local_debug else "generated"
    warning = non_loopback_warning(args.host, key)
    if warning:
        print(warning, file=sys.stderr, flush=True)


def _legacy_banner(plan: ServePlan, args: argparse.Namespace, generated_key: str | None) -> str:
    loop = plan.legacy_loop
    shown = "(disabled - local debug)" if args.local_debug else generated_key or "(provided)"
    return "\n".join([
        "RolloutServer (osmosis-compat)",
        f"  Agent:    {getattr(loop, 'name', type(loop).__name__)}",
        f"  Address:  http://{args.host}:{args.port}",
        f"  API key:  {shown}",
    ])


def worker_app() -> Any:
    """The app one ``--workers`` process serves (uvicorn calls it in each worker): the parent's plan, rebuilt."""
    import json

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(json.loads(os.environ[_WORKER_ARGV_ENV]))
    plan = plan_server(args)
    if plan.legacy_loop is not None:
        from osmosis_compat.server.legacy_app import create_app

        return create_app(plan.legacy_loop, api_key=args.api_key, debug_dir=args.log,
                          controller_hosts=args.controller_hosts)
    return plan.app


def check_port_free(host: str, port: int) -> None:
    """Raise ``ServeError`` when ``host:port`` cannot be listened on (checked before loading any agent, so a port
    in use is ``Error: …`` and exit 1 at once instead of uvicorn's log line after the whole start-up)."""
    import socket

    from osmosis_compat.legacy.exceptions import ServeError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ServeError(f"cannot listen on {host}:{port}: {reason} (is another server running? choose "
                             "another port with -p/--port)") from exc


def plan_server(args: argparse.Namespace) -> ServePlan:
    """Load, validate and assemble everything ``serve`` needs; raise with a readable message on any problem."""
    from osmosis_compat.legacy.exceptions import ServeError

    from .targets import load_mcp_target, load_target

    args.port = resolve_port(args.port)  # the banners name it
    if not args.module and not getattr(args, "mcp", None):
        raise ServeError("pass an agent: -m/--module TARGET or --mcp DIR")
    if args.local_debug and args.api_key is not None:
        raise ServeError("--api-key cannot be used together with --local (local debug mode disables auth).")
    if args.reload:
        raise ServeError(
            "--reload needs the app as an import string: run `uvicorn <module>:app --reload` on a module that defines "
            "`app = create_app(agent_loop)` (legacy) or `app = create_rollout_server(backend=…)` (workflow)."
        )
    named = [_split_name(spec) for spec in args.module]
    targets = [(name, load_target(spec)) for name, spec in named]
    targets += [(name, load_mcp_target(spec)) for name, spec in (_split_name(d) for d in getattr(args, "mcp", []))]
    if len(targets) == 1 and targets[0][0] is None and targets[0][1].kind == "legacy" \
            and args.expose in ("native", "legacy") and args.default is None:
        # Exactly the legacy `osmosis serve`: serve_agent_loop validates, prints the banner and runs uvicorn.
        return ServePlan(legacy_loop=targets[0][1].loop)
    if len(targets) == 1 and targets[0][0] is None and targets[0][1].kind == "workflow" \
            and args.expose in ("native", "workflow") and args.default is None:
        return _workflow_plan(args, targets[0][1])
    return _mixed_plan(args, targets)


def _workflow_plan(args: argparse.Namespace, target: Any) -> ServePlan:
    """A lone workflow: exactly what its entrypoint would serve (``create_rollout_server``; ``--api-key`` as its
    ``api_key=``)."""
    from osmosis_compat.legacy.exceptions import AgentLoopValidationError
    from osmosis_compat.server.workflow_app import create_rollout_server

    if not args.no_validate and not target.validate():
        raise AgentLoopValidationError(f"{target.spec} failed validation (see above; --no-validate skips it)")
    from osmosis_compat.runtime.wirecheck import resolve_controller_hosts
    from osmosis_compat.server.security import callback_auth_notice

    allow_list = resolve_controller_hosts(args.controller_hosts)
    app = create_rollout_server(backend=target.backend(), api_key=args.api_key, keyless_callbacks=args.keyless_callbacks,
                                controller_hosts=allow_list, announce_auth=False)
    lines = [
        "RolloutServer (osmosis-compat, workflow protocol)",
        f"  Workflow: {target.name}",
        f"  Address:  http://{args.host}:{args.port}  (POST /rollout, GET /rollout/{{id}}/result, POST /rollout/cancel, "
        "GET /health)",
        "  Controllers: 0.3.8 polling (no callback URLs) and 0.2.31 callbacks (callback URLs in the body)",
    ]
    if args.api_key is not None:
        lines.append("  API key:  (provided) required on every route as 'Authorization: Bearer <key>'")
        lines.append("  " + callback_auth_notice(["/rollout"], keyless_callbacks=args.keyless_callbacks,
                                                 allow_list=allow_list))
    if allow_list is not None:
        lines.append(f"  Controller hosts: {', '.join(allow_list.entries)} (callback and chat URLs must name one)")
    if args.log:
        lines.append("  Note: --log writes legacy debug traces; the workflow protocol has none.")
    return ServePlan(app=app, api_key=args.api_key, banner="\n".join(lines))


def _mixed_plan(args: argparse.Namespace, targets: list[tuple[str | None, Any]]) -> ServePlan:
    from osmosis_compat.legacy.api_key import generate_api_key
    from osmosis_compat.legacy.exceptions import AgentLoopValidationError
    from osmosis_compat.legacy.serve import REGISTRATION_NOTE
    from osmosis_compat.server.agents import AgentSpec
    from osmosis_compat.server.mixed_app import create_mixed_app

    if not args.no_validate:
        for _, target in targets:
            if not target.validate():
                raise AgentLoopValidationError(f"{target.spec} failed validation (see above; --no-validate skips it)")
    agents = [AgentSpec.from_target(target, name=name, expose=args.expose) for name, target in targets]
    if args.local_debug:
        key, generated = None, False
    elif args.api_key is not None:
        key, generated = args.api_key, False
    else:
        key, generated = generate_api_key(), True
    debug_dir = None
    if args.log:
        debug_dir = os.path.join(args.log, str(int(time.time())))
        os.makedirs(debug_dir, exist_ok=True)
    from osmosis_compat.runtime.wirecheck import resolve_controller_hosts
    from osmosis_compat.server.security import callback_auth_notice

    allow_list = resolve_controller_hosts(args.controller_hosts)
    app = create_mixed_app(agents, default=args.default, api_key=key, debug_dir=debug_dir,
                           keyless_callbacks=args.keyless_callbacks, controller_hosts=allow_list,
                           announce_auth=False)
    shown = "(disabled - local debug)" if args.local_debug else key if generated else "(provided)"
    host_shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    lines = [
        "RolloutServer (osmosis-compat, mixed)",
        f"  Address:  http://{args.host}:{args.port}",
        f"  API key:  {shown}  (every route that starts a rollout)",
        f"  Default agent: {app.default or '(none: address agents under /agents/<name>/)'}",
        "  Agents:",
    ]
    for agent in agents:
        for protocol, path in app.endpoints(agent.name).items():
            via = "  (adapted)" if app.adapted(agent.name, protocol) else ""
            lines.append(f"    {agent.name:<20} {agent.kind:<8} {protocol:<8} http://{host_shown}:{args.port}{path}{via}")
    if key is not None and app.callback_routes():
        lines.append("  " + callback_auth_notice(app.callback_routes(), keyless_callbacks=args.keyless_callbacks,
                                                 allow_list=allow_list))
    if allow_list is not None:
        lines.append(f"  Controller hosts: {', '.join(allow_list.entries)} (callback, chat and server URLs must name one)")
    if debug_dir:
        lines.append(f"  Debug log: {debug_dir}")
    if not (args.skip_register or args.local_debug):
        lines.append(REGISTRATION_NOTE)
    return ServePlan(app=app, api_key=key, key_generated=generated, debug_dir=debug_dir, banner="\n".join(lines))


def _split_name(spec: str) -> tuple[str | None, str]:
    """``"NAME=target"`` → ``("NAME", "target")``; a target without ``NAME=`` → ``(None, target)``."""
    head, sep, rest = spec.partition("=")
    if sep and head and rest and all(c.isalnum() or c in "._-" for c in head):
        return head, rest
    return None, spec
