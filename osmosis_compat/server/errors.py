"""The one validation-error answer every app factory installs: 422, FastAPI's shape, always encodable, no secrets.

FastAPI's own handler answers ``{"detail": [{"type", "loc", "msg", "input", "ctx"}, …]}`` by JSON-encoding the
errors as they are — including the ``input`` the caller sent. Three things go wrong with that on a rollout server:

- ``NaN`` / ``Infinity`` in the body (Python's JSON parser accepts them) come back as ``input``; strict JSON
  encoding then fails and the caller gets a 500 instead of the 422;
- a lone surrogate (``"x\\ud800y"``, which ``\\u`` escapes can express) cannot be encoded as UTF-8: 500 again;
- the echoed ``input`` of a rejected key (``api_key``, ``controller_api_key``, ``llm_api_key``), or of a whole body
  that holds one, sends the caller's secret back in a response that proxies and logs keep.

:func:`validation_error_handler` keeps the wire shape (the same keys, ``loc`` and ``msg`` untouched apart from
encoding) and fixes all three: non-finite numbers become the strings ``"NaN"`` / ``"Infinity"`` /
``"-Infinity"``, unencodable characters are shown as ``\\udXXX`` escapes, and the value of every secret field is
replaced by ``"[redacted]"`` wherever it appears. :func:`validation_error_response` builds the same answer for checks
a route makes itself after parsing (e.g. the controller-host allow-list), so every 422 looks alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

__all__ = [
    "REDACTED",
    "SECRET_FIELDS",
    "install_error_handlers",
    "sanitize",
    "store_unavailable_handler",
    "validation_error",
    "validation_error_handler",
    "validation_error_response",
]

REDACTED = "[redacted]"

#: Body fields and headers whose values are credentials (compared case-insensitively, ``-`` and ``_`` alike).
SECRET_FIELDS = frozenset(
    {
        "api_key",
        "controller_api_key",
        "llm_api_key",
        "authorization",
        "x_osmosis_rollout_lease",
        "polling_lease_token",
    }
)


def _is_secret(name: Any) -> bool:
    return isinstance(name, str) and name.lower().replace("-", "_") in SECRET_FIELDS


def _text(value: str) -> str:
    # Lone surrogates cannot be UTF-8 encoded; show them as escapes so the caller still sees what was wrong.
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


def sanitize(value: Any) -> Any:
    """``value`` (already JSON-like) made safe to send: secrets redacted, non-finite floats and unencodable text
    turned into strings. Dict keys are cleaned too."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, Mapping):
        return {
            _text(str(key)): (REDACTED if _is_secret(key) and item is not None else sanitize(item))
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [sanitize(item) for item in value]
    return value


def _clean_error(error: Mapping[str, Any]) -> dict[str, Any]:
    cleaned = sanitize(jsonable_encoder(dict(error)))
    loc = error.get("loc") or ()
    field = loc[-1] if loc else None
    if _is_secret(field) and cleaned.get("input") is not None:
        # The rejected value *is* the secret (e.g. a key with a line break): say what was wrong, not what it was.
        cleaned["input"] = REDACTED
    ctx = cleaned.get("ctx")
    if _is_secret(field) and isinstance(ctx, dict):
        cleaned["ctx"] = {key: (REDACTED if key in ("input", "value") else item) for key, item in ctx.items()}
    return cleaned


def validation_error(loc: Sequence[str | int], msg: str, input: Any = None, *, type: str = "value_error") -> dict[str, Any]:
    """One error entry in FastAPI's shape (``msg`` gets pydantic's ``"Value error, "`` prefix for ``value_error``)."""
    text = f"Value error, {msg}" if type == "value_error" else msg
    return {"type": type, "loc": list(loc), "msg": text, "input": input, "ctx": {"error": {}}}


def validation_error_response(errors: Iterable[Mapping[str, Any]]) -> JSONResponse:
    """The 422 answer for ``errors`` (FastAPI's shape), sanitised (see the module docstring)."""
    return JSONResponse(status_code=422, content={"detail": [_clean_error(error) for error in errors]})


async def validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI exception handler for :class:`RequestValidationError`: :func:`validation_error_response`."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    return validation_error_response(errors)


async def store_unavailable_handler(request: Request, exc: Exception) -> JSONResponse:
    """503 while the rollout store (e.g. Redis) cannot be reached: nothing was admitted, the caller may retry."""
    return JSONResponse(status_code=503, content={"detail": "rollout store unavailable; retry later"})


def install_error_handlers(app: FastAPI) -> None:
    """Install the sanitising 422 handler and the store-unavailable 503 on ``app`` (every app factory of
    :mod:`osmosis_compat.server` does)."""
    from osmosis_compat.runtime.store import StoreUnavailableError

    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(StoreUnavailableError, store_unavailable_handler)
