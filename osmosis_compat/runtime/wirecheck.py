"""Checks on values a controller sends that the server will later use in a request of its own.

A value that passes admission must be usable later: an id written to logs and paths, a key sent back as an HTTP
header, a URL the server posts to. Rejecting at admission (422, with a message naming the field) is the only
place where the controller still hears about it — afterwards the rollout could only fail silently. Every
protocol's request models call these from their pydantic validators.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["check_header_value", "check_http_url", "check_identifier"]

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
