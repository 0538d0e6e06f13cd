"""Bearer-token handling shared by every inbound route that checks a key."""

from __future__ import annotations

import secrets

__all__ = ["bearer_headers", "extract_bearer_token", "keys_match"]


def extract_bearer_token(header: str | None) -> str | None:
    """Token from an ``Authorization`` header, with the legacy server's lenient rules.

    Strip; empty → ``None``; ``"<bearer> <token>"`` (scheme case-insensitive, exactly two parts) → the token;
    anything else → the whole stripped header (so a raw key without "Bearer" is accepted, and "Bearer" alone or
    "Bearer a b" yields the full string).
    """
    if header is None:
        return None
    value = header.strip()
    if not value:
        return None
    parts = value.split()
    if len(parts) == 2 and parts[0].lower() == "bearer":
        return parts[1]
    return value


def keys_match(provided: str | None, expected: str | None) -> bool:
    """Constant-time comparison; ``None`` never matches."""
    if provided is None or expected is None:
        return False
    return secrets.compare_digest(provided.encode("utf-8"), expected.encode("utf-8"))


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """``{"Authorization": "Bearer <key>"}`` when the key is truthy, else ``{}``."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
