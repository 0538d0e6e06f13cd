"""``ControllerAuth`` — the bearer on callbacks (upstream ``server/auth.py``, spec §3.7)."""

from __future__ import annotations

from dataclasses import dataclass

from osmosis_compat.runtime.auth import bearer_headers

__all__ = ["ControllerAuth"]


@dataclass
class ControllerAuth:
    """The request's ``controller_api_key``; its repr never shows the key."""

    api_key: str | None = None

    def as_bearer_headers(self) -> dict[str, str] | None:
        """``{"Authorization": "Bearer <key>"}``, or ``None`` when the key is ``None``/empty."""
        return bearer_headers(self.api_key) or None

    def __repr__(self) -> str:
        return f"ControllerAuth(api_key={'<redacted>' if self.api_key is not None else None})"
