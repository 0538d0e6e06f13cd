"""``AppState``: the legacy server's per-app state, kept for code that reads it (spec §2.13).

It is a thin view over the shared :class:`~osmosis_compat.runtime.engine.RolloutEngine`, which owns the
idempotency records, the concurrency slots and the rollout tasks.
"""

from __future__ import annotations

from typing import Any

from osmosis_compat.runtime.engine import RolloutEngine

from .config import RolloutServerSettings, RolloutSettings, get_settings

__all__ = ["AppState"]


class AppState:
    """Limits and records of one legacy RolloutServer (``app.state.rollout_state``)."""

    def __init__(
        self,
        max_concurrent: int | None = None,
        record_ttl_seconds: float | None = None,
        cleanup_interval_seconds: float | None = None,
        settings: RolloutServerSettings | RolloutSettings | None = None,
        agent_loop_name: str = "default",
        *,
        drain_timeout_seconds: float = 10.0,
        store: Any = None,
        instance_id: str | None = None,
    ) -> None:
        """``settings`` is a ``RolloutServerSettings``, as upstream (default: ``get_settings().server``); a whole
        ``RolloutSettings`` is accepted too (its ``server`` part is used). ``self.settings`` is the server part."""
        if settings is None:
            server = get_settings().server
        elif isinstance(settings, RolloutSettings):
            server = settings.server
        elif isinstance(settings, RolloutServerSettings):
            server = settings
        else:
            raise TypeError(
                f"settings must be a RolloutServerSettings (or RolloutSettings), got {type(settings).__name__}"
            )
        self.settings = server
        # `or`, not `is None`: upstream treats 0 like "not given" (spec §2.13).
        self._max_concurrent = max_concurrent or server.max_concurrent_rollouts
        self.record_ttl = record_ttl_seconds or server.record_ttl_seconds
        self._cleanup_interval = cleanup_interval_seconds or server.cleanup_interval_seconds
        self._agent_loop_name = agent_loop_name
        self.engine = RolloutEngine(
            max_concurrent=self._max_concurrent,
            record_ttl_seconds=self.record_ttl,
            cleanup_interval_seconds=self._cleanup_interval,
            drain_timeout_seconds=drain_timeout_seconds,
            keep_completed=True,
            store=store,
            instance_id=instance_id,
        )

    @property
    def active_count(self) -> int:
        """Rollouts running or waiting for a concurrency slot."""
        return self.engine.active_count

    @property
    def completed_count(self) -> int:
        """Finished rollouts whose idempotency records are still inside the TTL."""
        return self.engine.completed_count

    def is_duplicate(self, key: str) -> bool:
        """Whether an init with this idempotency key would be answered from the existing record (this process's
        view: with a shared store, a key another process admitted is found only by admission itself)."""
        if self.engine.get(key) is not None:
            return True
        peek = getattr(self.engine.store, "peek", None)
        return peek is not None and peek(key) is not None

    def _prune_completed_records(self) -> int:
        return self.engine.prune()

    async def cancel_all(self) -> None:
        """Shut the engine down: drain (bounded), cancel the rest and send their ERROR callbacks."""
        await self.engine.shutdown()

    def __repr__(self) -> str:
        snapshot: dict[str, Any] = self.engine.snapshot()
        return f"AppState(agent_loop={self._agent_loop_name!r}, max_concurrent={self._max_concurrent}, {snapshot})"
