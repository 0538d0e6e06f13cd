"""The rollout store: what the engine remembers about rollouts, behind one small interface.

Every protocol keeps its per-rollout state here: the idempotency record that makes a duplicate admission a
duplicate (and the answer it gets), the status a polling controller sees, the polling lease, the held final
result and its retention. The engine and the protocol routers only talk to this interface, so serving from several
processes or hosts is a matter of choosing a shared implementation (Redis) instead of the in-memory default —
never a second copy of admission logic.

Times are wall-clock seconds (``time.time()``): records are shared between hosts, so monotonic clocks would not
compare. Records are plain data (JSON-compatible), so a shared store can hold them.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["LeaseCheck", "RolloutRecord", "RolloutStore", "Snapshot", "StoreUnavailableError", "TERMINAL", "Watch"]

#: Statuses after which a record's result never changes.
TERMINAL = frozenset({"success", "failure", "cancelled"})


class StoreUnavailableError(RuntimeError):
    """The store cannot be reached; the request that needed it fails cleanly (503 on admission)."""


@dataclass
class RolloutRecord:
    """What is remembered about one admitted rollout.

    ``version`` grows with every change a waiter may care about (status, result), so a long-poll can wait for
    "anything after what I saw". ``answer`` is what a duplicate admission is told (the legacy init response).
    ``lease_digest`` is the SHA-256 (hex) of the polling lease token; the token itself is never stored.
    """

    key: str
    owner: str
    protocol: str = ""
    status: str = "queued"
    version: int = 0
    created_at: float = 0.0
    answer: Any = None
    lease_digest: str | None = None
    lease_deadline: float | None = None
    result: dict[str, Any] | None = None
    finished_at: float | None = None
    cancel_requested: bool = False
    ticket: str | None = None
    """Names one admission attempt (set by the engine), so that its leftovers can be told from a later one's."""

    @property
    def finished(self) -> bool:
        """Whether the rollout reached a terminal status (its result no longer changes)."""
        return self.status in TERMINAL

    def snapshot(self) -> Snapshot:
        """What a long-poll needs of this record."""
        return Snapshot(self.version, self.status, self.result)

    def to_dict(self) -> dict[str, Any]:
        """The record as plain data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolloutRecord:
        """A record from :meth:`to_dict` output (unknown keys ignored, for rolling upgrades)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


CancelListener = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class Snapshot:
    """The part of a record a long-poll answers from: its version, status and (once finished) held result."""

    version: int
    status: str
    result: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class LeaseCheck:
    """What :meth:`RolloutStore.renew_lease` found: ``outcome`` is ``"unknown"`` (no such record, or one without a
    lease), ``"forbidden"`` (wrong token), ``"finished"`` (the result is held; the lease stopped), ``"expired"``
    (the lease ran out while the rollout ran; not renewed) or ``"renewed"``; ``snapshot`` is the record then
    (``None`` for unknown and forbidden)."""

    outcome: str
    snapshot: Snapshot | None = None


class Watch(abc.ABC):
    """A registration for changes of one record, made *before* reading it, so no change can slip in between."""

    @abc.abstractmethod
    async def wait(self, seen: Snapshot, timeout: float) -> Snapshot | None:
        """Wait until the record changes after ``seen`` (or ``timeout``); the snapshot then — ``seen`` itself when
        nothing changed, ``None`` if the record is gone. A change made since the watch began returns at once."""


class RolloutStore(abc.ABC):
    """Shared rollout state. Implementations: :class:`~.memory.MemoryStore` (default), ``RedisStore``.

    Every method may raise :class:`StoreUnavailableError`. Retention: a record with ``ttl`` is dropped that many
    seconds after the call that set it (``None`` = kept until finished; finishing sets the retention).
    """

    #: Whether several processes can share this store (``serve --workers N`` requires it).
    shared: bool = False

    def namespaced(self, suffix: str) -> RolloutStore:
        """A view of this store whose keys live under their own namespace (shared stores: several apps in one
        process, e.g. the agents of a mixed server, each keep their rollouts apart)."""
        raise NotImplementedError(f"{type(self).__name__} has no namespaces")

    async def start(self) -> None:
        """Connect / start background work (idempotent)."""

    async def close(self) -> None:
        """Release connections and background work."""

    @abc.abstractmethod
    async def create(self, record: RolloutRecord) -> RolloutRecord | None:
        """Store ``record`` unless its key exists — atomically, so exactly one admission wins a key.

        Returns ``None`` when created, else the existing record (the caller is a duplicate).
        """

    @abc.abstractmethod
    async def get(self, key: str) -> RolloutRecord | None:
        """The record for ``key``, or ``None`` (never admitted, or dropped after its retention)."""

    @abc.abstractmethod
    async def update(self, key: str, **changes: Any) -> bool:
        """Set fields of an unfinished record; a change of ``status`` or ``answer`` bumps ``version`` and wakes
        watches. ``False`` (nothing changed) when the record is absent or finished."""

    @abc.abstractmethod
    async def finish(
        self,
        key: str,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        retention: float | None = None,
        expired: tuple[str, dict[str, Any]] | None = None,
    ) -> bool:
        """Give ``key`` its terminal ``status`` (and ``result``) unless it already has one; keep it ``retention``
        seconds (``0`` drops it at once). ``expired`` is ``(status, result)`` to record instead when the record's
        lease deadline has passed. ``True`` if this call finished it (compare-and-set: one caller wins)."""

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Forget ``key`` (no-op when absent)."""

    async def discard(self, key: str, ticket: str) -> bool:
        """Forget ``key`` only if it is unfinished and still the admission named ``ticket`` (an admission that was
        answered "unavailable" although its write may have happened); ``True`` if something was forgotten."""
        record = await self.get(key)
        if record is None or record.finished or record.ticket != ticket:
            return False
        await self.delete(key)
        return True

    async def ping(self) -> None:
        """Raise :class:`StoreUnavailableError` unless the store answers (readiness probes)."""

    @abc.abstractmethod
    def watch(self, key: str) -> AbstractAsyncContextManager[Watch]:
        """``async with store.watch(key) as changes:`` — register for ``key``'s changes (see :class:`Watch`)."""

    async def wait_for_change(self, key: str, version: int, timeout: float) -> RolloutRecord | None:
        """Wait until ``key``'s ``version`` exceeds ``version``, or ``timeout`` seconds; return the record then
        (``None`` if it is gone)."""
        async with self.watch(key) as changes:
            record = await self.get(key)
            if record is None or record.version > version:
                return record
            if await changes.wait(record.snapshot(), timeout) == record.snapshot():
                return record  # nothing changed
        return await self.get(key)

    @abc.abstractmethod
    async def renew_lease(self, key: str, digest: str, deadline: float, now: float) -> LeaseCheck:
        """Check a polling lease and, if the rollout still runs within it, move its deadline to ``deadline`` — in
        one step (see :class:`LeaseCheck`). ``digest`` is the SHA-256 hex of the caller's token."""

    @abc.abstractmethod
    async def keys(self, *, prefix: str | None = None) -> list[str]:
        """Keys of the records held (all, or those starting with ``prefix``)."""

    def prune(self, now: float | None = None) -> int:
        """Drop records whose retention ended, for stores that do not expire them themselves; how many."""
        return 0

    async def get_many(self, keys: Iterable[str]) -> list[RolloutRecord | None]:
        """:meth:`get` for several keys (implementations may batch)."""
        return [await self.get(key) for key in keys]

    # -- cancellation across processes -------------------------------------------------------------------

    @abc.abstractmethod
    async def request_cancel(self, key: str) -> None:
        """Ask the process that runs ``key`` to cancel it (delivered to that process's cancel listener), also when
        the record is already finished (a cancel or lease expiry finishes the record before the task stops)."""

    @abc.abstractmethod
    def on_cancel(self, owner: str, listener: CancelListener) -> None:
        """Call ``listener(key)`` when a cancel is requested for a rollout ``owner`` runs."""

    # -- ownership (several processes) -------------------------------------------------------------------

    async def heartbeat(self, owner: str, ttl: float) -> None:
        """Say ``owner`` is alive for ``ttl`` more seconds (no-op for a store only one process uses)."""

    async def alive(self, owner: str) -> bool:
        """Whether ``owner`` sent a heartbeat within its ttl (always ``True`` for a single-process store)."""
        return True

    async def owners(self) -> list[str]:
        """Processes that have run rollouts in this store (alive or not); none for a single-process store."""
        return []

    async def owned(self, owner: str) -> list[str]:
        """Keys of the unfinished rollouts ``owner`` runs (or ran, if it died)."""
        return []

    async def forget_owner(self, owner: str) -> None:
        """Drop a dead owner's bookkeeping once its rollouts are finished."""
