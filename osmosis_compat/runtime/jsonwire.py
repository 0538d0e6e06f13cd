"""Strict JSON encoding for everything we put on the wire.

Matches httpx 0.28's ``json=`` encoding (compact separators, ``ensure_ascii=False``, ``allow_nan=False``) but
encodes once, up front, so a payload that cannot be encoded fails *before* any request with an error that
names the offending value's path instead of a bare ``TypeError``/``ValueError`` from deep inside httpx.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["NotJSONError", "dumps", "find_non_json"]


class NotJSONError(ValueError):
    """A payload holds a value JSON cannot carry (bytes, datetime, NaN, infinity, …)."""


def dumps(payload: Any) -> bytes:
    """Encode ``payload`` as compact UTF-8 JSON; raise :class:`NotJSONError` naming the bad path."""
    try:
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        where = find_non_json(payload)
        detail = f" at {where}" if where else ""
        raise NotJSONError(f"payload is not JSON-serialisable{detail}: {exc}") from exc


def find_non_json(value: Any, path: str = "$") -> str | None:
    """Return a JSONPath-like location of the first value JSON cannot encode, or ``None``."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                return f"{path}[{key!r}]"
            found = find_non_json(item, f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = find_non_json(item, f"{path}[{index}]")
            if found:
                return found
        return None
    return path
