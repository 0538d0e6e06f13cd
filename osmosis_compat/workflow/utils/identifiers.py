"""Identifier checks (upstream ``utils/identifiers.py``, 0.2.28+).

A ``rollout_id`` names a directory (``~/.osmosis/<rollout_id>/artifacts``) and appears in URLs, so it must be
one path segment: never empty, ``.``/``..``, or containing ``/``, ``\\`` or NUL.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ensure_single_path_segment", "is_single_path_segment"]


def is_single_path_segment(name: str) -> bool:
    """True when ``name`` is usable as exactly one path segment (see module docstring)."""
    if not isinstance(name, str) or name in ("", ".", ".."):
        return False
    if "/" in name or "\\" in name or "\x00" in name:
        return False
    return Path(name).name == name


def ensure_single_path_segment(value: str, *, label: str = "id") -> str:
    """Return ``value`` if it is a single path segment, else raise ``ValueError`` naming ``label``."""
    if not is_single_path_segment(value):
        raise ValueError(
            f"{label} must be a single path segment (not empty, '.', or '..', and without '/', '\\' or NUL); "
            f"got {value!r}"
        )
    return value
