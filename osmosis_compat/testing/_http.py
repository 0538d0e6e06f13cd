"""Request plumbing shared by the fake controllers (FastAPI is imported by their modules, not here)."""

from __future__ import annotations

import json
import secrets
from typing import Any

INVALID_KEY = {"detail": "Invalid or missing API key"}


def parse_json(raw: bytes) -> tuple[Any, str | None]:
    """``(body, None)`` for a JSON object, else ``(body_or_None, error message)``."""
    try:
        body = json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"request body is not valid JSON: {exc}"
    if not isinstance(body, dict):
        return body, "request body must be a JSON object"
    return body, None


def bearer_matches(header: str | None, expected: str) -> bool:
    """True when ``header`` is ``Bearer <expected>`` (scheme case-insensitive, constant-time compare)."""
    if not header:
        return False
    parts = header.strip().split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return False
    return secrets.compare_digest(parts[1].encode(), expected.encode())


def validation_error(loc: list[str], message: str, value: Any = None) -> dict[str, Any]:
    """A FastAPI-style 422 body, so clients that parse ``detail`` see the familiar shape."""
    return {"detail": [{"type": "value_error", "loc": loc, "msg": message, "input": value}]}


def callback_reply(status: int) -> tuple[int, Any]:
    """``(status, json body or None)`` for a scripted callback answer."""
    if status == 204:
        return status, None
    if 200 <= status < 300:
        return status, {"status": "ok"}
    return status, {"detail": f"scripted failure (HTTP {status})"}


def json_or_text(response: Any) -> Any:
    """An httpx response's JSON body, or its text when it is not JSON."""
    try:
        return response.json()
    except ValueError:
        return response.text
