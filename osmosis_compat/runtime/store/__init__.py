"""Where the engine keeps what it remembers about rollouts (see :mod:`.base`)."""

from .base import TERMINAL, LeaseCheck, RolloutRecord, RolloutStore, Snapshot, StoreUnavailableError
from .memory import MemoryStore

__all__ = [
    "LeaseCheck",
    "MemoryStore",
    "RolloutRecord",
    "RolloutStore",
    "STORE_ENV",
    "Snapshot",
    "StoreUnavailableError",
    "TERMINAL",
    "open_store",
]

STORE_ENV = "OSMOSIS_COMPAT_STORE"
"""The environment variable naming the rollout store (``redis://…``) when none is passed in code."""


def open_store(url: str | None) -> RolloutStore:
    """The store a URL names: ``None``/``""``/``memory://`` → :class:`MemoryStore`; ``redis://…`` /
    ``rediss://…`` / ``unix://…`` → the Redis store (needs the ``redis`` package)."""
    if not url or url == "memory://":
        return MemoryStore()
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("redis", "rediss", "unix"):
        from .redis import RedisStore

        return RedisStore(url)
    raise ValueError(f"unknown rollout store {url!r}: use memory:// or redis://host:port/db")
