"""Checks on values a controller sends that the server will later use in a request of its own.

A value that passes admission must be usable later: an id written to logs and paths, a key sent back as an HTTP
header, a URL the server posts to, messages it re-sends to the model endpoint. Rejecting at admission (422, with a
message naming the field) is the only place where the controller still hears about it — afterwards the rollout
could only fail silently. Every protocol's request models call these from their pydantic validators.

:class:`HostAllowList` is the opt-in restriction of the hosts controller-supplied URLs may name (callbacks, the
chat endpoint, the legacy ``server_url``): ``--controller-hosts`` / ``$OSMOSIS_COMPAT_CONTROLLER_HOSTS``. Scheme and
host are always checked (:func:`check_http_url`); the allow-list is for teams that want to rule out requests to any
other host.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "CONTROLLER_HOSTS_ENV",
    "HostAllowList",
    "check_header_value",
    "check_http_url",
    "check_identifier",
    "check_id_in_url",
    "check_wire_json",
    "resolve_controller_hosts",
]

CONTROLLER_HOSTS_ENV = "OSMOSIS_COMPAT_CONTROLLER_HOSTS"
"""Comma-separated controller hosts, read when an app is built without an explicit ``controller_hosts=``."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _encodable(value: str, label: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{label} must be valid Unicode text (it holds a lone surrogate)") from None


def check_identifier(value: str, *, label: str) -> str:
    """``value`` unless it holds control characters (NUL, CR, LF, tab …) or lone surrogates."""
    _encodable(value, label)
    if _CONTROL.search(value):
        raise ValueError(f"{label} must not contain control characters")
    return value


MAX_ID_URL_BYTES = 2048
"""The longest id, percent-encoded as it travels in a URL path (``GET /rollout/{rollout_id}/result``, the 0.3.8
chat URL ``…/v1/rollouts/{rollout_id}``), that every route carrying it can carry: the request line must fit the
servers' and proxies' header limits (uvicorn's h11 16 KiB, nginx's default 8 KiB buffers) with the other headers."""


def check_id_in_url(value: str, *, label: str) -> str:
    """``value`` unless, percent-encoded, it is longer than :data:`MAX_ID_URL_BYTES`: such an id would be admitted
    and then be refused at the HTTP layer of the routes that carry it (its result could never be collected)."""
    from urllib.parse import quote

    size = len(quote(value, safe=""))
    if size > MAX_ID_URL_BYTES:
        raise ValueError(
            f"{label} is {size} bytes in a URL (percent-encoded); at most {MAX_ID_URL_BYTES} fit every route that "
            "carries it (GET /rollout/{rollout_id}/result, the chat URL)"
        )
    return value


def check_header_value(value: str | None, *, label: str) -> str | None:
    """``value`` (or ``None``) if it can be sent as an HTTP header value: printable ASCII, no surrounding space."""
    if value is None:
        return None
    if not value.isascii() or _CONTROL.search(value) or value != value.strip():
        raise ValueError(
            f"{label} cannot be sent as an HTTP header: use printable ASCII without control characters or "
            "surrounding whitespace"
        )
    return value


def check_http_url(value: str | None, *, label: str) -> str | None:
    """``value`` (or ``None``) if it is an absolute http(s) URL with a host and no whitespace/control characters."""
    if value is None:
        return None
    _encodable(value, label)
    if _CONTROL.search(value) or any(c.isspace() for c in value):
        raise ValueError(f"{label} must not contain whitespace or control characters")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError as exc:
        raise ValueError(f"{label} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{label} must be an http(s) URL, got {value!r}")
    if not parts.hostname:
        raise ValueError(f"{label} must name a host, got {value!r}")
    return value


def _bad_json_value(value: Any, path: str, numbers: bool) -> str | None:
    """The path of the first value strict JSON (UTF-8, RFC 8259) cannot carry, with why; ``None`` if all can.
    ``numbers=False`` checks text only (lone surrogates), letting ``NaN`` / ``Infinity`` through."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path} holds a lone surrogate"
        return None
    if isinstance(value, float):
        return None if not numbers or math.isfinite(value) else f"{path} is {value!r} (not a JSON number)"
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                found = _bad_json_value(key, f"a key of {path}", numbers)
                where = f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"
            else:
                found, where = None, f"{path}[{key!r}]"
            found = found or _bad_json_value(item, where, numbers)
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _bad_json_value(item, f"{path}[{index}]", numbers)
            if found:
                return found
    return None


def check_wire_json(value: Any, *, label: str, numbers: bool = True) -> Any:
    """``value`` if every string in it is valid Unicode and (``numbers=True``) every number finite — i.e. the
    server can send it on (messages re-sent to the model endpoint, sampling parameters, a label echoed in a
    result). Python's JSON parser accepts ``NaN``, ``Infinity`` and ``"\\ud800"``; the server's strict encoder,
    and every HTTP peer, would not. ``numbers=False`` is for free-form fields upstream accepted ``NaN`` in
    (``metadata``): only their text is checked."""
    found = _bad_json_value(value, label, numbers)
    if found:
        raise ValueError(f"{found}; it could not be sent on as JSON")
    return value


# -- the controller-host allow-list -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    host: str | None = None  # exact host name or IP literal (lower case, IPv6 without brackets)
    suffix: str | None = None  # "*.example.com" → ".example.com"
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def matches(self, host: str, port: int | None) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host is not None:
            return host == self.host
        if self.suffix is not None:
            return host.endswith(self.suffix) and len(host) > len(self.suffix)
        if self.network is not None:
            try:
                return ipaddress.ip_address(host) in self.network
            except ValueError:
                return False
        return False

    def __str__(self) -> str:
        base = self.host or (f"*{self.suffix}" if self.suffix else str(self.network))
        if self.port is None:
            return base
        return f"[{base}]:{self.port}" if ":" in base else f"{base}:{self.port}"


def _parse_entry(raw: str) -> _Entry:
    text = raw.strip().lower()
    if not text or any(c.isspace() for c in text) or "/" in text and not _looks_like_network(text):
        raise ValueError(f"controller host {raw!r} is not a host name, host:port, *.domain or CIDR network")
    if _looks_like_network(text):
        try:
            return _Entry(network=ipaddress.ip_network(text, strict=False))
        except ValueError as exc:
            raise ValueError(f"controller host {raw!r}: {exc}") from None
    port: int | None = None
    host = text
    if text.startswith("["):  # [v6]:port or [v6]
        end = text.find("]")
        if end < 0:
            raise ValueError(f"controller host {raw!r}: unclosed '['")
        host, rest = text[1:end], text[end + 1:]
        if rest:
            if not rest.startswith(":") or not rest[1:].isdigit():
                raise ValueError(f"controller host {raw!r}: expected [address]:port")
            port = int(rest[1:])
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
        if not port_text.isdigit():
            raise ValueError(f"controller host {raw!r}: the port must be a number")
        port = int(port_text)
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"controller host {raw!r}: port out of range")
    if host.startswith("*."):
        if not host[2:] or "*" in host[2:]:
            raise ValueError(f"controller host {raw!r}: use *.domain for every sub-domain of a domain")
        return _Entry(suffix=host[1:], port=port)
    if "*" in host or not host:
        raise ValueError(f"controller host {raw!r}: a wildcard may only lead (*.domain)")
    return _Entry(host=host, port=port)


def _looks_like_network(text: str) -> bool:
    return "/" in text and not text.startswith("[")


class HostAllowList:
    """The hosts controller-supplied URLs may name.

    Entries: ``host`` (any port), ``host:port``, ``[v6addr]:port``, ``*.domain`` (every sub-domain, not the domain
    itself) and CIDR networks (``10.0.0.0/8``, matched against IP literals only). Host names compare without case;
    the check is on the name as written in the URL (it does not resolve DNS).
    """

    def __init__(self, entries: Iterable[str]) -> None:
        parsed = [_parse_entry(entry) for entry in entries if entry.strip()]
        if not parsed:
            raise ValueError("a controller-host allow-list needs at least one host")
        self._entries = tuple(parsed)

    @classmethod
    def parse(cls, spec: str | Iterable[str]) -> HostAllowList | None:
        """An allow-list from ``"a,b"`` or an iterable of entries; ``None`` when it names no host (no restriction)."""
        items = spec.split(",") if isinstance(spec, str) else [part for item in spec for part in str(item).split(",")]
        items = [item for item in items if item.strip()]
        return cls(items) if items else None

    @property
    def entries(self) -> tuple[str, ...]:
        """The entries, normalised (for messages and banners)."""
        return tuple(str(entry) for entry in self._entries)

    def allows(self, url: str) -> bool:
        """Whether ``url``'s host (and port) is on the list. Call :func:`check_http_url` first."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return False
        return any(entry.matches(host, port) for entry in self._entries)

    def check(self, url: str | None, *, label: str) -> str | None:
        """``url`` (or ``None``) if allowed, else ``ValueError`` naming the field, the host and the allowed hosts."""
        if url is None or self.allows(url):
            return url
        host = urlsplit(url).netloc.rpartition("@")[2]
        raise ValueError(
            f"{label} names host {host!r}, which is not an allowed controller host (allowed: "
            f"{', '.join(self.entries)}; set with --controller-hosts or ${CONTROLLER_HOSTS_ENV})"
        )

    def __repr__(self) -> str:
        return f"HostAllowList({list(self.entries)!r})"


def resolve_controller_hosts(
    controller_hosts: str | Iterable[str] | HostAllowList | None, *, environ: Mapping[str, str] | None = None
) -> HostAllowList | None:
    """The allow-list an app uses: ``controller_hosts`` when given (an empty one lifts any restriction), else
    ``$OSMOSIS_COMPAT_CONTROLLER_HOSTS``, else ``None`` (any host). Raises ``ValueError`` for a malformed entry."""
    if isinstance(controller_hosts, HostAllowList):
        return controller_hosts
    if controller_hosts is None:
        controller_hosts = (environ if environ is not None else os.environ).get(CONTROLLER_HOSTS_ENV, "")
    return HostAllowList.parse(controller_hosts)
