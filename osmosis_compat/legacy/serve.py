"""``serve_agent_loop`` and ``validate_and_report`` (spec/legacy-protocol.md §2.15).

Out of scope, by design: Osmosis Platform registration and public-IP detection — osmosis-compat never contacts
the platform or external IP services. ``skip_register=False`` therefore only prints a note.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from .api_key import generate_api_key
from .base import RolloutAgentLoop
from .config import RolloutSettings
from .exceptions import ServeError
from .validator import ValidationResult, validate_agent_loop

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ServeError", "serve_agent_loop", "validate_and_report"]

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 9000

REGISTRATION_NOTE = (
    "Note: Osmosis Platform registration is not part of osmosis-compat; the server is not registered. "
    "Give your controller this server's address (and API key) yourself."
)


def validate_and_report(agent_loop: RolloutAgentLoop, *, verbose: bool = False) -> ValidationResult:
    """Validate ``agent_loop`` and print the upstream report (errors to stderr); return the result."""
    result = validate_agent_loop(agent_loop)
    if result.valid:
        print(f"Agent loop '{result.agent_name}' validated successfully.")
        print(f"  - Tools: {result.tool_count}")
        if result.warnings:
            print(f"  - Warnings: {len(result.warnings)}")
            if verbose:
                for warning in result.warnings:
                    print(f"    - {warning}")
    else:
        print(f"Agent loop validation failed with {len(result.errors)} error(s):", file=sys.stderr)
        for error in result.errors:
            print(f"  - {error}", file=sys.stderr)
        if verbose:
            for warning in result.warnings:
                print(f"  - (warning) {warning}", file=sys.stderr)
    return result


def serve_agent_loop(
    agent_loop: RolloutAgentLoop,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    validate: bool = True,
    log_level: str = "info",
    reload: bool = False,
    settings: RolloutSettings | None = None,
    skip_register: bool = False,
    api_key: str | None = None,
    local_debug: bool = False,
    debug_dir: str | None = None,
    controller_hosts: Any = None,
    timeout_keep_alive: int = 2160,
) -> None:
    """Validate, then serve ``agent_loop`` with uvicorn until interrupted.

    ``controller_hosts`` (osmosis-compat) restricts the hosts a controller's ``server_url`` may name (see
    ``create_app``). ``timeout_keep_alive`` (osmosis-compat; 2160 s as 0.3.8's entrypoints) keeps idle
    connections open longer than the platform load balancer does. Serving on a non-loopback ``host`` without a
    key (``local_debug``) prints a warning.

    Raises :class:`ServeError` for ``api_key`` with ``local_debug``, and for ``reload=True`` (uvicorn can only
    reload an import string: run ``uvicorn module:app --reload`` instead);
    :class:`~.exceptions.AgentLoopValidationError` when validation fails.
    """
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - uvicorn is a core dependency
        raise ImportError("uvicorn is required to serve an agent loop: pip install uvicorn") from exc
    from osmosis_compat.server.legacy_app import create_app

    if local_debug:
        if api_key is not None:
            raise ServeError("api_key cannot be used together with local_debug (local debug mode disables auth).")
        skip_register = True
    if reload:
        raise ServeError(
            "reload=True needs the app as an import string; run `uvicorn <module>:app --reload` on a module that "
            "defines `app = create_app(agent_loop)`."
        )
    if validate:
        validate_and_report(agent_loop).raise_if_invalid()

    generated = False
    if local_debug:
        key = None
    elif api_key is not None:
        key = api_key
    else:
        key, generated = generate_api_key(), True

    run_debug_dir = None
    if debug_dir:
        run_debug_dir = os.path.join(debug_dir, str(int(time.time())))
        os.makedirs(run_debug_dir, exist_ok=True)

    from osmosis_compat.runtime.wirecheck import resolve_controller_hosts
    from osmosis_compat.server.security import non_loopback_warning

    allow_list = resolve_controller_hosts(controller_hosts)
    app = create_app(agent_loop, settings=settings, api_key=key, debug_dir=run_debug_dir, controller_hosts=allow_list)
    _print_banner(agent_loop, host, port, key, generated, local_debug, skip_register, run_debug_dir)
    if allow_list is not None:
        print(f"  Controller hosts: {', '.join(allow_list.entries)} (server_url must name one)", flush=True)
    warning = non_loopback_warning(host, key)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    from osmosis_compat.observability.logs import resolve_format, uvicorn_log_config

    # $OSMOSIS_COMPAT_LOG_FORMAT (json / text, set by `serve --log-format`); keys and bearer tokens redacted either way.
    # 2160 s keep-alive, as 0.3.8's entrypoints: longer than the platform load balancer's idle timeout (2,100 s), so
    # it never reuses a connection the server is closing (uvicorn's 5 s default makes that a 502).
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_keep_alive=timeout_keep_alive,
                log_config=uvicorn_log_config(resolve_format(), log_level))


def _print_banner(
    agent_loop: Any,
    host: str,
    port: int,
    key: str | None,
    generated: bool,
    local_debug: bool,
    skip_register: bool,
    debug_dir: str | None,
) -> None:
    if local_debug:
        shown = "(disabled - local debug)"
    elif generated:
        shown = key
    else:
        shown = "(provided)"
    lines = [
        "RolloutServer (osmosis-compat)",
        f"  Agent:    {getattr(agent_loop, 'name', type(agent_loop).__name__)}",
        f"  Address:  http://{host}:{port}",
        f"  API key:  {shown}",
    ]
    if debug_dir:
        lines.append(f"  Debug log: {debug_dir}")
    if not skip_register:
        lines.append(REGISTRATION_NOTE)
    print("\n".join(lines), flush=True)
