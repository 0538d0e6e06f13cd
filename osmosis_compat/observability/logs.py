"""Log output: plain text (the default) or one JSON object per line (``--log-format json``,
``$OSMOSIS_COMPAT_LOG_FORMAT=json``), and in both never a key or a bearer token.

A JSON line holds ``timestamp`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``, ``message`` and, when
known, ``rollout_id``, ``protocol``, ``agent`` (from the rollout the code works for, :mod:`.context`), ``event``
and ``duration_ms`` (passed as ``extra={"event": …, "duration_ms": …}``), and ``exception`` (the traceback as
text). uvicorn's own loggers (``uvicorn.error``, ``uvicorn.access``) use the same format.

Redaction (:class:`RedactSecrets`, installed on the handlers :func:`configure` sets up): ``Bearer <token>``,
``api_key=…`` / ``"api_key": "…"`` and the other credential fields of the wire protocols, and every value passed to
:func:`redact_value` (the server's own key) are replaced by ``[redacted]`` in the final text of every record.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from typing import Any

from . import context

__all__ = [
    "LOG_FORMAT_ENV",
    "LOG_FORMATS",
    "JSONFormatter",
    "RedactSecrets",
    "configure",
    "redact",
    "redact_value",
    "resolve_format",
    "uvicorn_log_config",
]

LOG_FORMAT_ENV = "OSMOSIS_COMPAT_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REDACTED = "[redacted]"

_SECRET_NAMES = r"(?:api[_-]?key|controller[_-]api[_-]key|llm[_-]api[_-]key|polling[_-]lease[_-]token|x-osmosis-rollout-lease|authorization|password|secret|token)"
_PATTERNS = (
    re.compile(r"(?i)(\bbearer\s+)[^\s'\",;]+"),
    # key=value, key: value, "key": "value", 'key': 'value'
    re.compile(r"(?i)(\b" + _SECRET_NAMES + r"\b['\"]?\s*[:=]\s*['\"]?)(?!\[redacted\])[^\s'\",;}&)]+"),
)
_known: set[str] = set()


def redact_value(value: str | None) -> None:
    """Never log ``value`` (e.g. the server's API key) anywhere in a message (values under 8 characters are not
    matched, lest every short word be hidden)."""
    if value and len(value) >= 8:
        _known.add(value)


def redact(text: str) -> str:
    """``text`` with bearer tokens, credential fields and known secret values replaced by ``[redacted]``."""
    for value in _known:
        if value in text:
            text = text.replace(value, REDACTED)
    if "earer" in text or "=" in text or ":" in text:
        for pattern in _PATTERNS:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


class RedactSecrets(logging.Filter):
    """Rewrites each record's message (arguments merged) with :func:`redact`; exceptions are redacted when
    formatted (see the formatters)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: let logging report it as it does
            return True
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        return True


class _TextFormatter(logging.Formatter):
    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return redact(super().formatException(ei))


class JSONFormatter(logging.Formatter):
    """One JSON object per record (module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        created = record.created
        payload: dict[str, Any] = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        scope = context.current()
        rollout_id = getattr(record, "rollout_id", None) or (scope.rollout_id if scope else None)
        if rollout_id is not None:
            payload["rollout_id"] = rollout_id
        protocol = getattr(record, "protocol", None) or (scope.protocol if scope else None)
        if protocol:
            payload["protocol"] = protocol
        agent = getattr(record, "agent", None) or (scope.agent if scope else None)
        if agent:
            payload["agent"] = agent
        for name in ("event", "duration_ms", "status_code", "outcome"):
            value = getattr(record, name, None)
            if value is not None:
                payload[name] = value
        if record.exc_info:
            payload["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload, ensure_ascii=False, default=str)


def resolve_format(value: str | None = None) -> str:
    """``value`` (a ``--log-format``), else ``$OSMOSIS_COMPAT_LOG_FORMAT``, else ``text``; ``ValueError`` for
    anything but ``text`` / ``json``."""
    chosen = (value or os.environ.get(LOG_FORMAT_ENV) or "text").strip().lower()
    if chosen not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {chosen!r} (--log-format / ${LOG_FORMAT_ENV})")
    return chosen


def _formatter(fmt: str) -> logging.Formatter:
    return JSONFormatter() if fmt == "json" else _TextFormatter(TEXT_FORMAT)


def configure(fmt: str | None = None, level: str | int = "INFO") -> str:
    """Send the root logger to stderr in ``fmt`` (:func:`resolve_format`), secrets redacted; returns the format.
    Replaces handlers an earlier call installed, leaves others alone."""
    fmt = resolve_format(fmt)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_osmosis_compat", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._osmosis_compat = True  # type: ignore[attr-defined]
    handler.setFormatter(_formatter(fmt))
    handler.addFilter(RedactSecrets())
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    return fmt


def uvicorn_log_config(fmt: str, level: str = "info") -> dict[str, Any]:
    """A ``uvicorn.run(log_config=…)`` dict: uvicorn's loggers and the root logger in ``fmt``, secrets redacted."""
    formatter = (
        {"()": "osmosis_compat.observability.logs.JSONFormatter"}
        if fmt == "json"
        else {"()": "osmosis_compat.observability.logs._TextFormatter", "fmt": TEXT_FORMAT}
    )
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "default",
        "filters": ["redact"],
        "stream": "ext://sys.stderr",
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact": {"()": "osmosis_compat.observability.logs.RedactSecrets"}},
        "formatters": {"default": formatter},
        "handlers": {"default": handler},
        "root": {"handlers": ["default"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"handlers": [], "level": level.upper(), "propagate": True},
            "uvicorn.error": {"handlers": [], "level": level.upper(), "propagate": True},
            "uvicorn.access": {"handlers": [], "level": level.upper(), "propagate": True},
            # A line per outbound request (model calls, callbacks) at INFO is noise, and names controller URLs.
            "httpx": {"level": "WARNING"},
            "httpcore": {"level": "WARNING"},
        },
    }
