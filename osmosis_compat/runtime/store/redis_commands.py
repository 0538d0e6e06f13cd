"""``CommandPool``: the Redis store's commands on redis-py connections, without the client's per-command overhead.

A command through ``redis.asyncio.Redis`` costs ~100 µs of CPU on a 2-core VM, against ~55 µs for the round trip
itself over a bare asyncio socket: on every checkout and release its connection pool takes a lock, probes the
socket for stray data and records observability counters, and a socket timeout wraps every send in a task. The
store's commands are plain request/reply exchanges on connections the store owns alone, so this keeps redis-py's
connection class — URL options, TLS, auth, RESP2/3 parsing (hiredis when installed), error replies as exceptions —
and replaces only the pooling around it: a free list, a semaphore bounding the connections, and one watchdog task
that ends exchanges Redis does not answer in time (a timer per command would cost ~15 µs more).

Imported only once the ``redis`` package is known to be installed (``RedisStore.start``). Replies are raw (bytes, lists; a map is a dict under RESP3 and a flat list under RESP2): redis-py's per-command
response callbacks are not applied.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

try:  # hiredis (redis[hiredis]) packs a command in C, ~7x faster than redis-py's asyncio connection does in Python
    from hiredis import pack_command as _hiredis_pack
except ImportError:  # pragma: no cover - depends on the install
    _hiredis_pack = None

__all__ = ["DEADLINE", "CommandPool", "Script"]

logger = logging.getLogger("osmosis_compat.runtime.store.redis")

Command = Sequence[Any]

#: A ``TIME`` sample with a longer round trip (seconds) does not change the clock offset.
CLOCK_SAMPLE_MAX_RTT = 0.05


class _Deadline:
    """Placeholder for the exchange's deadline in a command (see :data:`DEADLINE`)."""

    def __repr__(self) -> str:
        return "DEADLINE"


DEADLINE: Any = _Deadline()
"""An argument the pool replaces, when it sends the command, by the moment (Redis's clock, in milliseconds) after
which the command must not run: the exchange's start plus :attr:`CommandPool.deadline_fraction` of its timeout. A
script given it refuses to write when Redis runs it later — e.g. after a stall longer than the timeout, when the
caller has long been told "unavailable" (issue 20: nothing half-admitted)."""


class Script:
    """A Lua script run by its SHA-1 (``EVALSHA``), sent whole (``EVAL``) once when the server lacks it.
    ``timed=True``: :data:`DEADLINE` goes first in ``ARGV`` (the script must begin with the deadline check,
    ``redis.py``'s ``_DEADLINE_CHECK``)."""

    def __init__(self, text: str, *, timed: bool = False) -> None:
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()
        self.timed = timed

    async def __call__(self, pool: CommandPool, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        if self.timed:
            args = (DEADLINE, *args)
        try:
            return await pool.execute("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:  # a new or restarted server: EVAL caches it for the next EVALSHA
            return await pool.execute("EVAL", self.text, len(keys), *keys, *args)


class CommandPool:
    """Request/reply exchanges with one Redis server over at most ``size`` connections made by ``connect`` (a
    redis-py ``ConnectionPool.make_connection``). An exchange Redis does not answer within ``timeout`` seconds —
    waiting for a free connection included — raises ``TimeoutError``; a connection error raises redis-py's
    ``ConnectionError``; an error reply raises its ``ResponseError``. :meth:`start` before use, :meth:`close` after."""

    #: Share of the timeout after which a timed command may no longer run: the rest is margin for the reply, so
    #: that a command that did run is, all but always, also answered in time.
    deadline_fraction = 0.6

    def __init__(self, connect: Callable[[], Any], *, size: int, timeout: float) -> None:
        self._connect = connect
        self._timeout = timeout
        self.clock_offset = 0.0
        """Redis's clock minus this host's (seconds), measured with ``TIME`` (:meth:`measure_clock`)."""
        self._slots = asyncio.Semaphore(size)
        self._free: list[Any] = []
        self._busy: dict[Any, float] = {}  # connection -> loop time its exchange began
        self._timed_out: set[Any] = set()
        self._watchdog: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the watchdog (idempotent)."""
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch(), name="rollout-store-watchdog")

    async def close(self) -> None:
        """Stop the watchdog and close every connection (exchanges in flight fail with a connection error)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            await asyncio.gather(self._watchdog, return_exceptions=True)
            self._watchdog = None
        connections, self._free = [*self._free, *self._busy], []
        for connection in connections:
            await _disconnect(connection)

    async def measure_clock(self) -> None:
        """Update :attr:`clock_offset` from one ``TIME``; a sample whose round trip took longer than
        ``CLOCK_SAMPLE_MAX_RTT`` is ignored (its error is half the round trip: a busy event loop that read the
        reply late must not move every deadline)."""
        import time

        before = time.time()
        seconds, micros = await self.execute("TIME")
        after = time.time()
        if after - before <= CLOCK_SAMPLE_MAX_RTT:
            self.clock_offset = int(seconds) + int(micros) / 1e6 - (before + after) / 2

    async def execute(self, *command: Any) -> Any:
        """Send ``command`` (``"HGET", key, field``…) and return its reply."""
        return (await self.pipeline((command,)))[0]

    async def pipeline(self, commands: Sequence[Command]) -> list[Any]:
        """Send ``commands`` in one write and return their replies in order. Every reply is read even when one is
        an error reply; the first error reply is then raised."""
        if self._slots.locked():  # waiting for a connection counts against the timeout too
            await asyncio.wait_for(self._slots.acquire(), self._timeout)
        else:
            await self._slots.acquire()
        try:
            reused = bool(self._free)
            connection = self._free.pop() if reused else self._connect()
            try:
                return await self._exchange(connection, commands)
            except (RedisConnectionError, OSError) as exc:
                if not reused or isinstance(exc, TimeoutError):  # (TimeoutError is an OSError)
                    raise
                # A pooled connection the server closed since its last use (Redis restarted, an idle timeout):
                # the command never reached a live server, so it is sent once more on a new connection.
                return await self._exchange(self._connect(), commands)
        finally:
            self._slots.release()

    async def _exchange(self, connection: Any, commands: Sequence[Command]) -> list[Any]:
        self._busy[connection] = asyncio.get_running_loop().time()
        replies: list[Any] = []
        error: ResponseError | None = None
        try:
            if not connection.is_connected:
                await connection.connect()
            if any(DEADLINE in command for command in commands):
                commands = self._stamped(commands)
            await connection.send_packed_command(_pack(connection, commands), check_health=False)
            for _ in commands:
                try:
                    replies.append(await connection.read_response())
                except ResponseError as exc:  # the connection stays usable: read on
                    error = error or exc
                    replies.append(exc)
        except BaseException as exc:
            await _disconnect(connection)
            if connection in self._timed_out:
                self._timed_out.discard(connection)
                raise TimeoutError(f"Redis did not answer within {self._timeout:g} s") from exc
            raise
        finally:
            del self._busy[connection]
        self._timed_out.discard(connection)  # answered just as the watchdog closed it: reconnects on next use
        self._free.append(connection)
        if error is not None:
            raise error
        return replies

    def _stamped(self, commands: Sequence[Command]) -> list[Command]:
        import time

        deadline_ms = int((time.time() + self.clock_offset + self._timeout * self.deadline_fraction) * 1000)
        return [tuple(deadline_ms if arg is DEADLINE else arg for arg in command) for command in commands]

    async def _watch(self) -> None:
        """End exchanges older than the timeout by closing their connection: the pending read fails at once."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(1.0, self._timeout / 5))
            now = loop.time()
            for connection, began in list(self._busy.items()):
                if now - began > self._timeout and connection not in self._timed_out:
                    self._timed_out.add(connection)
                    await _disconnect(connection)


def _pack(connection: Any, commands: Sequence[Command]) -> Any:
    if _hiredis_pack is not None:
        if len(commands) == 1:
            return _hiredis_pack(tuple(commands[0]))
        return b"".join(_hiredis_pack(tuple(command)) for command in commands)
    if len(commands) == 1:
        return connection.pack_command(*commands[0])
    return connection.pack_commands(commands)


async def _disconnect(connection: Any) -> None:
    try:
        await connection.disconnect(nowait=True)
    except Exception:  # closing a broken socket may fail too; the connection is dropped either way
        logger.debug("closing a Redis connection failed", exc_info=True)
