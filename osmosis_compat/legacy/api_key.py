"""The RolloutServer API key: the Bearer token the controller presents to this server (spec §1.6)."""

from __future__ import annotations

import secrets
from typing import Optional

__all__ = ["API_KEY_PREFIX", "API_KEY_RANDOM_BYTES", "generate_api_key", "validate_api_key"]

API_KEY_PREFIX = "osm_rollout_"
API_KEY_RANDOM_BYTES = 32


def generate_api_key() -> str:
    """A fresh key: ``"osm_rollout_" + secrets.token_urlsafe(32)`` (55 characters)."""
    return API_KEY_PREFIX + secrets.token_urlsafe(API_KEY_RANDOM_BYTES)


def validate_api_key(provided: Optional[str], expected: str) -> bool:
    """Constant-time, case-sensitive comparison; ``False`` when nothing was provided."""
    if provided is None:
        return False
    return secrets.compare_digest(provided.encode("utf-8"), expected.encode("utf-8"))
