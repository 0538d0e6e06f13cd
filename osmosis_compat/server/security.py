"""What the app factories and ``serve`` say and check about who may start rollouts and where the server may send.

- :func:`callback_auth_notice` — with an API key, a 0.2.31 callback controller (it sends no key) gets 401 on the
  routes named; ``keyless_callbacks=True`` / ``serve --keyless-callbacks`` admits its bodies (those with a
  ``completion_callback_url``) without the key, deliberately. The default keeps "no route that starts a rollout is
  reachable without the key".
- :func:`non_loopback_warning` — serving on an interface other hosts can reach, without a key.
- :func:`bearer_guard` / :func:`legacy_guard` — the inbound key checks: 0.3.8's exact ``Bearer <key>`` (401
  ``{"detail": "unauthorized"}``) for ``/rollout*``, the legacy server's lenient one (401 ``{"detail": "Invalid or
  missing API key"}``) for ``/v1/rollout/init`` and ``/platform/health``.
- :func:`controller_url_rejection` — the opt-in controller-host allow-list
  (:class:`~osmosis_compat.runtime.wirecheck.HostAllowList`) applied to every URL a controller supplies.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from osmosis_compat.runtime.auth import extract_bearer_token, keys_match
from osmosis_compat.runtime.wirecheck import CONTROLLER_HOSTS_ENV, HostAllowList
from osmosis_compat.server.errors import validation_error, validation_error_response

__all__ = [
    "KEYLESS_CALLBACKS_FLAG",
    "bearer_guard",
    "legacy_guard",
    "callback_auth_notice",
    "controller_url_rejection",
    "is_loopback",
    "non_loopback_warning",
    "route_path",
]

KEYLESS_CALLBACKS_FLAG = "--keyless-callbacks"


def route_path(scope: Mapping[str, Any]) -> str:
    """The request path inside the app (``root_path`` removed, as Starlette routes it)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root):] or "/"
    return path


def callback_auth_notice(routes: Sequence[str], *, keyless_callbacks: bool, allow_list: HostAllowList | None) -> str:
    """What a keyed server means for a 0.2.31 callback controller on ``routes`` (``POST`` paths), one sentence set."""
    where = ", ".join(routes)
    if not keyless_callbacks:
        return (
            f"API key set: a 0.2.31 callback controller sends no key, so it gets 401 on POST {where} (bodies with "
            f"callback URLs). To admit those bodies without the key, deliberately, use {KEYLESS_CALLBACKS_FLAG} "
            "(create_rollout_server(keyless_callbacks=True)); every other route keeps requiring the key."
        )
    notice = (
        f"{KEYLESS_CALLBACKS_FLAG}: POST {where} admits 0.2.31 callback bodies WITHOUT the API key; polling and "
        "legacy routes still require it."
    )
    if allow_list is None:
        notice += (
            " Their callback and model URLs may name any host: restrict them with --controller-hosts "
            f"(or ${CONTROLLER_HOSTS_ENV})."
        )
    return notice


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` is reachable from this machine only (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name or interface address: other machines may reach it


def non_loopback_warning(host: str, api_key: str | None) -> str | None:
    """The warning for serving on ``host`` without a key, or ``None`` when there is a key or ``host`` is loopback."""
    if api_key is not None or is_loopback(host):
        return None
    shown = "every interface" if host in ("0.0.0.0", "::", "") else host
    return (
        f"Warning: serving on {shown} ({host}) without an API key: anyone who can reach this port can start "
        "rollouts and make this server send requests to URLs they choose. Pass --api-key (or drop --local), bind "
        "-H 127.0.0.1, or restrict the hosts with --controller-hosts."
    )


def controller_url_rejection(allow_list: HostAllowList | None, urls: Mapping[str, str | None]) -> JSONResponse | None:
    """A 422 (the validation shape, ``loc`` per field) for every URL in ``urls`` whose host ``allow_list`` does not
    allow; ``None`` when all are allowed or there is no allow-list."""
    if allow_list is None:
        return None
    errors = []
    for field, url in urls.items():
        try:
            allow_list.check(url, label=field)
        except ValueError as exc:
            errors.append(validation_error(["body", field], str(exc), url))
    return validation_error_response(errors) if errors else None


def bearer_guard(api_key: str | None) -> Callable[[Request], JSONResponse | None]:
    """0.3.8's optional server auth: with ``api_key``, a request without exactly ``Bearer <api_key>`` gets 401
    ``{"detail": "unauthorized"}``."""
    expected = None if api_key is None else ("Bearer " + api_key).encode()

    def check(request: Request) -> JSONResponse | None:
        if expected is None:
            return None
        if not secrets.compare_digest(request.headers.get("authorization", "").encode(), expected):
            return JSONResponse({"detail": "unauthorized"}, status_code=401)
        return None

    return check


LEGACY_UNAUTHORIZED = {"detail": "Invalid or missing API key"}


def legacy_guard(api_key: str | None) -> Callable[[Request], JSONResponse | None]:
    """The legacy server's key check: with ``api_key``, the ``Authorization`` token (``Bearer <key>`` or the bare
    key, spec §1.2) must match, else 401 ``{"detail": "Invalid or missing API key"}``."""

    def check(request: Request) -> JSONResponse | None:
        if api_key is None:
            return None
        if not keys_match(extract_bearer_token(request.headers.get("authorization")), api_key):
            return JSONResponse(status_code=401, content=LEGACY_UNAUTHORIZED)
        return None

    return check
