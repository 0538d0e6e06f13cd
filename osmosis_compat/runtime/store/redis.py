"""``RedisStore``: the rollout store on Redis, so several processes and hosts serve as one rollout server.

Layout (every key under a namespace prefix, ``osmosis:`` by default; a mixed server gives each agent and protocol
its own namespace with :meth:`RedisStore.namespaced`):

- ``<ns>r:<rollout key>`` — a HASH, one field per :class:`~.base.RolloutRecord` field that is set, each value
  JSON-encoded, plus ``watchers``: the ids of the processes waiting on it (space-separated); unfinished records
  expire after ``UNFINISHED_TTL_S`` as a last resort, finished ones after their retention;
- ``<ns>owned:<owner>`` — the SET of unfinished keys a process runs; ``<ns>owners`` — the SET of owners seen;
- ``<base>hb:<owner>`` — a process's heartbeat (a key with a short TTL);
- channel ``<base>changes:<process id>`` — a version change is published as ``"<record's Redis key> <version>
  <status>"`` to each *other* process in the record's ``watchers`` (a process becomes one with the lease renewal of
  a long-poll, or a wait's first look): one subscription per process wakes its long-polls on that rollout, whichever
  process changed it, and a status change reaches them without another read. The process that made a change wakes
  its own waiters directly, so a rollout polled where it runs publishes nothing;
- channel ``<base>cancel`` — ``"<owner> <rollout key>"``: the owner cancels the task it runs.

Admission, updates and finishing are single Lua scripts, so exactly one process wins a key and a result is set
once (the first of completion, cancel, lease expiry and abort). Redis errors become
:class:`~.base.StoreUnavailableError` (admission answers 503; nothing is half-admitted: a failed create wrote
nothing). Commands go over redis-py connections through :class:`~.redis_commands.CommandPool` (the client's own pool
costs more per command than the round trip); the pub/sub listener uses the client. Needs the ``redis`` package
(``pip install 'osmosis-compat[redis]'``, with hiredis).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import fields
from typing import Any, TypeVar

from osmosis_compat.observability import metrics

from .base import (
    TERMINAL,
    CancelListener,
    LeaseCheck,
    RolloutRecord,
    RolloutStore,
    Snapshot,
    StoreUnavailableError,
    Watch,
)

__all__ = ["RedisStore", "UNFINISHED_TTL_S"]

logger = logging.getLogger("osmosis_compat.runtime.store.redis")
_T = TypeVar("_T")

#: Unfinished records disappear after a day even if every process that could finish them is gone.
UNFINISHED_TTL_S = 24 * 3600
#: A store call that Redis does not answer within this many seconds fails (503 on admission), as a hung server must
#: not hang requests.
COMMAND_TIMEOUT_S = 5.0
#: How often a heartbeat also measures Redis's clock against this host's (the deadlines of timed scripts).
CLOCK_REFRESH_S = 30.0
#: Store calls in flight at once per process (each holds a pooled connection); more wait for a free one.
MAX_CONNECTIONS = 64
_FIELDS = tuple(f.name for f in fields(RolloutRecord))
_FIELD_NAMES = frozenset(_FIELDS)
_VERSIONED = ("status", "answer")


def _lua_set(names: Iterable[str]) -> str:
    """A Lua table literal used as a set of the given strings."""
    return "{" + ", ".join(f"[{json.dumps(name)}] = true" for name in sorted(names)) + "}"


# The head of every script that writes for a caller waiting on the answer: ARGV[1] is the caller's deadline in
# Redis's clock (ms, redis_commands.DEADLINE, taken off ARGV here). Run later — e.g. queued in the socket while Redis
# was stopped for longer than the command timeout, when the caller has long been answered "unavailable" — the
# script writes nothing and answers an error: a late admission must not register an id nobody runs.
_DEADLINE_CHECK = """
local deadline = tonumber(table.remove(ARGV, 1))
local clock = redis.call('TIME')
if tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) > deadline then
  return redis.error_reply('LATE the caller gave up on this command; nothing written')
end
"""

# KEYS[1] record, KEYS[2] owned set, KEYS[3] owners set; ARGV: ttl_s, owner, then field/value pairs.
_CREATE = _DEADLINE_CHECK + """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
local pairs = {}
for i = 3, #ARGV do pairs[#pairs + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(pairs))
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], KEYS[1])
redis.call('SADD', KEYS[3], ARGV[2])
return false
"""

# Lua helpers. A record's ``watchers`` field lists the processes (space-separated ids) with a long-poll or another
# wait on it; a change is published to each of their channels (``<prefix><id>``) but the changing process's own,
# which wakes its waiters itself (_Shared.wake_local): a rollout nobody else polls publishes nothing.
_WATCHERS = """
local function notify(key, version, status, prefix, self)
  local watchers = redis.call('HGET', key, 'watchers')
  if not watchers then return end
  local message = key .. ' ' .. version .. ' ' .. status
  for id in string.gmatch(watchers, '%S+') do
    if id ~= self then redis.call('PUBLISH', prefix .. id, message) end
  end
end
local function watch(key, self)
  local watchers = redis.call('HGET', key, 'watchers')
  if not watchers then
    redis.call('HSET', key, 'watchers', self)
  elseif not string.find(' ' .. watchers .. ' ', ' ' .. self .. ' ', 1, true) then
    redis.call('HSET', key, 'watchers', watchers .. ' ' .. self)
  end
end
local terminal = """ + _lua_set(json.dumps(s) for s in TERMINAL) + """
"""

# The head of the scripts that change a live record: 0 when KEYS[1] is gone or finished.
_UNLESS_GONE_OR_FINISHED = _WATCHERS + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if terminal[redis.call('HGET', KEYS[1], 'status')] then return 0 end
"""

# KEYS[1] record; ARGV[1] channel prefix, ARGV[2] this process's id, then field/value pairs.
# Returns 0 (gone or finished), {0} (nothing a waiter cares about changed) or {new version, status (JSON)}.
_UPDATE = _DEADLINE_CHECK + _UNLESS_GONE_OR_FINISHED + """
local versioned = """ + _lua_set(_VERSIONED) + """
local bump = false
for i = 3, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old ~= ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    if versioned[ARGV[i]] then bump = true end
  end
end
if not bump then return {0} end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
local status = redis.call('HGET', KEYS[1], 'status')
notify(KEYS[1], version, status, ARGV[1], ARGV[2])
return {version, status}
"""

# KEYS[1] record, KEYS[2] owned-set prefix (+ owner); ARGV: channel prefix, this process's id, status, result,
# finished_at (= now), retention_ms, then optionally the status and result to record instead when the lease ran out.
# Returns 0 (already finished or gone) or {new version, the status recorded (JSON), 1 if the lease's was}.
_FINISH = _DEADLINE_CHECK + _UNLESS_GONE_OR_FINISHED + """
local new_status, result, replaced = ARGV[3], ARGV[4], 0
if ARGV[7] then
  local deadline = redis.call('HGET', KEYS[1], 'lease_deadline')
  if deadline and deadline ~= 'null' and tonumber(deadline) <= tonumber(ARGV[5]) then
    new_status, result, replaced = ARGV[7], ARGV[8], 1
  end
end
redis.call('HSET', KEYS[1], 'status', new_status, 'result', result, 'finished_at', ARGV[5])
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
local owner = cjson.decode(redis.call('HGET', KEYS[1], 'owner'))
redis.call('SREM', KEYS[2] .. owner, KEYS[1])
notify(KEYS[1], version, new_status, ARGV[1], ARGV[2])
local retention = tonumber(ARGV[6])
if retention <= 0 then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], retention) end
return {version, new_status, replaced}
"""

# KEYS[1] record; ARGV: digest (JSON), new deadline, now, this process's id (a watcher from now on when renewed).
# Returns {outcome} or {outcome, version, status, result} (JSON values).
_RENEW = _DEADLINE_CHECK + _WATCHERS + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local digest = redis.call('HGET', KEYS[1], 'lease_digest')
if not digest or digest == 'null' then return {'unknown'} end
if digest ~= ARGV[1] then return {'forbidden'} end
local fields = redis.call('HMGET', KEYS[1], 'version', 'status', 'result', 'lease_deadline')
if terminal[fields[2]] then return {'finished', fields[1], fields[2], fields[3]} end
if fields[4] and fields[4] ~= 'null' and tonumber(fields[4]) <= tonumber(ARGV[3]) then
  return {'expired', fields[1], fields[2], 'null'}
end
redis.call('HSET', KEYS[1], 'lease_deadline', ARGV[2])
watch(KEYS[1], ARGV[4])
return {'renewed', fields[1], fields[2], 'null'}
"""

# KEYS[1] record; ARGV[1] this process's id. Registers it as a watcher; returns {version, status, result} or nil.
_WATCH = _DEADLINE_CHECK + _WATCHERS + """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
watch(KEYS[1], ARGV[1])
return redis.call('HMGET', KEYS[1], 'version', 'status', 'result')
"""

# KEYS[1] record; ARGV[1] cancel channel. Marks the record and tells its owner (finished records too).
_CANCEL = _DEADLINE_CHECK + """
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
redis.call('HSET', KEYS[1], 'cancel_requested', 'true')
redis.call('PUBLISH', ARGV[1], cjson.decode(owner) .. ' ' .. ARGV[2])
return 1
"""

# KEYS[1] record, KEYS[2] owned-set prefix; ARGV[1] channel prefix, ARGV[2] this process's id. 1 if it existed.
_DELETE = _DEADLINE_CHECK + _WATCHERS + """
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
redis.call('SREM', KEYS[2] .. cjson.decode(owner), KEYS[1])
notify(KEYS[1], -1, 'null', ARGV[1], ARGV[2])
redis.call('DEL', KEYS[1])
return 1
"""

# KEYS[1] record, KEYS[2] owned-set prefix; ARGV[1] channel prefix, ARGV[2] this process's id, ARGV[3] the ticket
# (JSON). Deletes the record only if it is unfinished and still the admission with that ticket. 1 if deleted.
_DISCARD = _WATCHERS + """
if redis.call('HGET', KEYS[1], 'ticket') ~= ARGV[3] then return 0 end
if terminal[redis.call('HGET', KEYS[1], 'status')] then return 0 end
local owner = redis.call('HGET', KEYS[1], 'owner')
redis.call('SREM', KEYS[2] .. cjson.decode(owner), KEYS[1])
notify(KEYS[1], -1, 'null', ARGV[1], ARGV[2])
redis.call('DEL', KEYS[1])
return 1
"""


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _encode(record: RolloutRecord) -> list[str]:
    """Field/value pairs of a new record. Fields still at ``None``/``False`` are left out (fewer bytes to pack and
    send on every admission): the scripts read a missing field as unset, and :func:`_decode` restores the default."""
    flat: list[str] = []
    for name in _FIELDS:
        value = getattr(record, name)
        if value is not None and value is not False:
            flat += [name, _json(value)]
    return flat


def _decode(raw: Any) -> RolloutRecord | None:
    """A record from ``HGETALL``: a dict from the client, a flat field/value list from a Lua script."""
    if not raw:
        return None
    pairs = raw.items() if isinstance(raw, dict) else zip(raw[0::2], raw[1::2])
    data = {}
    for name, value in pairs:
        name = _text(name)
        if name in _FIELD_NAMES:  # not the store's own fields (``watchers``)
            data[name] = json.loads(value)
    if isinstance(data.get("version"), float):
        data["version"] = int(data["version"])
    return RolloutRecord.from_dict(data)


class _Shared:
    """What every namespaced view of one Redis store shares: the client, the pub/sub listener, waiters and
    cancel listeners."""

    def __init__(self, url: str, base: str, **client_options: Any) -> None:
        self.url = url
        self.base = base
        self.id = uuid.uuid4().hex  # this process's (this client's) name in records' ``watchers``
        self.client_options = client_options
        self.client: Any = None  # the redis-py client: the pub/sub listener's
        self.commands: Any = None  # a redis_commands.CommandPool: every other command
        self.scripts: dict[str, Any] = {}
        self.waiters: dict[str, set[_RedisWatch]] = {}
        self.cancel_listeners: dict[str, CancelListener] = {}
        self.listener: asyncio.Task[None] | None = None
        self.users = 0
        self.lock: asyncio.Lock | None = None
        self.clock_due = 0.0  # monotonic time of the next clock measurement (heartbeat)

    @property
    def change_prefix(self) -> str:
        return f"{self.base}changes:"

    @property
    def changes(self) -> str:
        """The channel of the changes to records this process watches."""
        return f"{self.change_prefix}{self.id}"

    @property
    def cancels(self) -> str:
        return f"{self.base}cancel"

    async def start(self) -> None:
        if self.lock is None:
            self.lock = asyncio.Lock()
        async with self.lock:
            self.users += 1
            if self.client is not None:
                return
            try:
                import redis.asyncio as redis
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise StoreUnavailableError(
                    "the Redis rollout store needs the redis package: pip install 'osmosis-compat[redis]'"
                ) from exc
            from .redis_commands import CommandPool, Script

            options = {
                # Commands are bounded by the CommandPool's watchdog (COMMAND_TIMEOUT_S); a socket timeout would
                # make redis-py wrap every send in a task. Only the pub/sub listener uses the client's own reads.
                "socket_timeout": None,
                "socket_connect_timeout": 3.0,
                "health_check_interval": 15,
                **self.client_options,
            }
            pool = redis.ConnectionPool.from_url(self.url, **options)
            # 1,000 long-polls renewing at once queue for MAX_CONNECTIONS connections instead of failing.
            commands = CommandPool(pool.make_connection, size=MAX_CONNECTIONS, timeout=COMMAND_TIMEOUT_S)
            try:
                await asyncio.wait_for(commands.execute("PING"), COMMAND_TIMEOUT_S)
            except Exception as exc:
                await commands.close()
                self.users -= 1
                raise StoreUnavailableError(f"cannot reach the rollout store at {_safe_url(self.url)}: {exc}") from exc
            commands.start()
            self.commands = commands
            self.client = redis.Redis(connection_pool=pool)
            try:
                await asyncio.wait_for(commands.measure_clock(), COMMAND_TIMEOUT_S)
            except Exception as exc:
                await commands.close()
                self.users -= 1
                raise StoreUnavailableError(f"cannot read the clock of the rollout store at {_safe_url(self.url)}: {exc}") from exc
            self.scripts = {
                "create": Script(_CREATE, timed=True),
                "update": Script(_UPDATE, timed=True),
                "finish": Script(_FINISH, timed=True),
                "delete": Script(_DELETE, timed=True),
                "renew": Script(_RENEW, timed=True),
                "watch": Script(_WATCH, timed=True),
                "cancel": Script(_CANCEL, timed=True),
                "discard": Script(_DISCARD),
            }
            self.listener = asyncio.get_running_loop().create_task(self._listen(), name="rollout-store-listener")

    async def close(self) -> None:
        if self.lock is None:
            return
        async with self.lock:
            self.users = max(0, self.users - 1)
            if self.users or self.client is None:
                return
            if self.listener is not None:
                self.listener.cancel()
                await asyncio.gather(self.listener, return_exceptions=True)
                self.listener = None
            await self.commands.close()
            await self.client.aclose(close_connection_pool=True)
            self.client = self.commands = None
            self.wake_all()

    async def _listen(self) -> None:
        """One subscription per process: wake local long-polls on changes, deliver cancels to their owners.
        Reconnects with backoff; after a reconnect every waiter is woken (a change may have been missed)."""
        delay = 0.1
        while True:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.changes, self.cancels)
                self.wake_all()
                delay = 0.1
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    channel = _text(message["channel"])
                    data = _text(message["data"])
                    if channel == self.changes:
                        self.wake(data)
                    elif channel == self.cancels:
                        owner, _, key = data.partition(" ")
                        listener = self.cancel_listeners.get(owner)
                        if listener is not None:
                            asyncio.get_running_loop().create_task(listener(key))
            except asyncio.CancelledError:
                await _quietly(pubsub.aclose())
                raise
            except Exception as exc:
                logger.warning("Rollout store subscription lost (%s); reconnecting in %.1fs", exc, delay)
                await _quietly(pubsub.aclose())
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def wake(self, message: str) -> None:
        """``"<redis key> <version> <status JSON>"``, as the scripts publish it (a key may hold spaces)."""
        redis_key, version, status = message.rsplit(" ", 2)
        for watch in self.waiters.get(redis_key, ()):
            watch.changed(int(version), json.loads(status))

    def wake_local(self, redis_key: str, snapshot: Snapshot) -> None:
        """A change this process made (the scripts publish it to the other watchers only), with what a long-poll
        answers from: no message or re-read needed (a terminal snapshot without a result is re-read)."""
        for watch in self.waiters.get(redis_key, ()):
            watch.changed(snapshot.version, snapshot.status, snapshot.result)

    def registered(self, redis_key: str) -> None:
        """This process is now a watcher of ``redis_key`` in Redis: its watches there need no registration."""
        for watch in self.waiters.get(redis_key, ()):
            watch.registered = True

    def wake_all(self) -> None:
        """Wake every watch without a message (it re-reads the record): a change may have been missed."""
        for watches in list(self.waiters.values()):
            for watch in watches:
                watch.changed(None, None)


class RedisStore(RolloutStore):
    """The rollout store on Redis (see the module docstring). ``url`` is a redis URL (``redis://host:6379/0``,
    ``rediss://…``, ``unix:///path?db=0``); ``namespace`` prefixes every key."""

    shared = True

    def __init__(self, url: str, *, namespace: str = "osmosis:", _shared: _Shared | None = None, **client_options: Any) -> None:
        self._shared = _shared or _Shared(url, namespace, **client_options)
        self.namespace = namespace
        self.url = url

    def namespaced(self, suffix: str) -> RedisStore:
        """A view of the same store whose keys live under ``<namespace><suffix>`` (one connection for all views)."""
        return RedisStore(self.url, namespace=f"{self.namespace}{suffix}", _shared=self._shared)

    # -- connection ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (and ping): ``StoreUnavailableError`` naming the URL when Redis cannot be reached."""
        await self._shared.start()

    async def close(self) -> None:
        await self._shared.close()

    async def _run(self, exchange: Callable[[Any], Awaitable[_T]]) -> _T:
        """``await exchange(commands)`` with the store's :class:`~.redis_commands.CommandPool`: the one way to
        Redis (bounded by ``COMMAND_TIMEOUT_S``); every failure becomes :class:`StoreUnavailableError`."""
        commands = self._shared.commands
        if commands is None:
            raise StoreUnavailableError("the rollout store is not started (await store.start() first)")
        observed = metrics.peek()
        started = time.perf_counter() if observed is not None else 0.0
        try:
            result = await exchange(commands)
        except (TimeoutError, asyncio.TimeoutError) as exc:
            if observed is not None:
                observed.store_round_trip("redis", started, False)
            raise StoreUnavailableError(f"rollout store error: no answer within {COMMAND_TIMEOUT_S:g} s") from exc
        except Exception as exc:
            if observed is not None:
                observed.store_round_trip("redis", started, False)
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc
        if observed is not None:
            observed.store_round_trip("redis", started, True)
        return result

    async def _call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        script = self._shared.scripts.get(name)
        return await self._run(lambda commands: script(commands, keys, args))

    def _key(self, key: str) -> str:
        return f"{self.namespace}r:{key}"

    def _owned_prefix(self) -> str:
        return f"{self.namespace}owned:"

    # -- records -------------------------------------------------------------------------------------------

    async def create(self, record: RolloutRecord) -> RolloutRecord | None:
        if not record.created_at:
            record.created_at = time.time()
        raw = await self._call(
            "create",
            [self._key(record.key), f"{self._owned_prefix()}{record.owner}", f"{self.namespace}owners"],
            [UNFINISHED_TTL_S, record.owner, *_encode(record)],
        )
        return _decode(raw) if raw else None

    async def get(self, key: str) -> RolloutRecord | None:
        redis_key = self._key(key)
        return _decode(await self._run(lambda commands: commands.execute("HGETALL", redis_key)))

    async def snapshot(self, key: str) -> Snapshot | None:
        """Version, status and result of ``key`` (a small read: no other field)."""
        redis_key = self._key(key)
        version, status, result = await self._run(
            lambda commands: commands.execute("HMGET", redis_key, "version", "status", "result")
        )
        if version is None:
            return None
        return Snapshot(int(json.loads(version)), json.loads(status), json.loads(result) if result else None)

    async def get_many(self, keys: Iterable[str]) -> list[RolloutRecord | None]:
        reads = [("HGETALL", self._key(key)) for key in keys]
        if not reads:
            return []
        return [_decode(raw) for raw in await self._run(lambda commands: commands.pipeline(reads))]

    async def update(self, key: str, **changes: Any) -> bool:
        if not _FIELD_NAMES.issuperset(changes):
            unknown = set(changes) - _FIELD_NAMES
            raise TypeError(f"unknown record fields: {', '.join(sorted(unknown))}")
        flat: list[str] = []
        for name, value in changes.items():
            flat += [name, _json(value)]
        redis_key = self._key(key)
        reply = await self._call("update", [redis_key], [self._shared.change_prefix, self._shared.id, *flat])
        if reply == 0:
            return False
        if len(reply) == 2:  # a new version: this process's watches learn it here, the others by message
            self._shared.wake_local(redis_key, Snapshot(int(reply[0]), json.loads(reply[1])))
        return True

    async def finish(
        self,
        key: str,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        retention: float | None = None,
        expired: tuple[str, dict[str, Any]] | None = None,
    ) -> bool:
        retention_ms = UNFINISHED_TTL_S * 1000 if retention is None else int(retention * 1000)
        args: list[Any] = [
            self._shared.change_prefix,
            self._shared.id,
            json.dumps(status),
            _json(result),
            json.dumps(time.time()),
            retention_ms,
        ]
        if expired is not None:
            args += [json.dumps(expired[0]), _json(expired[1])]
        redis_key = self._key(key)
        done = await self._call("finish", [redis_key, self._owned_prefix()], args)
        if not done:
            return False
        # This process's own long-polls get the result now, without a message or a re-read (one round trip less
        # per rollout when the poll lands on the process that ran it). A record dropped at once (retention 0) is
        # announced without its result: the watch re-reads and finds it gone.
        version, recorded = int(done[0]), json.loads(done[1])
        held = None
        if retention is None or retention > 0:
            held = expired[1] if expired is not None and int(done[2]) else result
        self._shared.wake_local(redis_key, Snapshot(version, recorded, held))
        return True

    async def delete(self, key: str) -> None:
        redis_key = self._key(key)
        deleted = await self._call("delete", [redis_key, self._owned_prefix()], [self._shared.change_prefix, self._shared.id])
        if deleted:
            self._shared.wake_local(redis_key, Snapshot(-1, "null"))

    @asynccontextmanager
    async def watch(self, key: str) -> AsyncIterator[Watch]:
        """Registers locally at once; in Redis (so other processes' changes are published to this one) by the
        :meth:`renew_lease` made inside the block, or else by the watch's first wait."""
        watch = _RedisWatch(self, key)
        redis_key = self._key(key)
        self._shared.waiters.setdefault(redis_key, set()).add(watch)
        try:
            yield watch
        finally:
            watches = self._shared.waiters.get(redis_key)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    del self._shared.waiters[redis_key]

    async def renew_lease(self, key: str, digest: str, deadline: float, now: float) -> LeaseCheck:
        """Also registers this process as a watcher of a renewed rollout: the long-poll that follows needs no
        registration of its own (see :meth:`watch`)."""
        redis_key = self._key(key)
        raw = await self._call(
            "renew", [redis_key], [json.dumps(digest), json.dumps(deadline), json.dumps(now), self._shared.id]
        )
        outcome = _text(raw[0])
        if len(raw) < 4:
            return LeaseCheck(outcome)
        if outcome == "renewed":
            self._shared.registered(redis_key)
        return LeaseCheck(outcome, Snapshot(int(json.loads(raw[1])), json.loads(raw[2]), json.loads(raw[3])))

    async def _register(self, key: str) -> Snapshot | None:
        """Make this process a watcher of ``key`` in Redis; the record's snapshot then (``None`` if gone)."""
        raw = await self._call("watch", [self._key(key)], [self._shared.id])
        if not raw:
            return None
        version, status, result = raw
        return Snapshot(int(json.loads(version)), json.loads(status), json.loads(result) if result else None)

    async def keys(self, *, prefix: str | None = None) -> list[str]:
        start = len(self._key(""))
        pattern = self._key(_glob_escape(prefix or "")) + "*"

        async def scan(commands: Any) -> list[Any]:
            found, cursor = [], b"0"
            while True:
                cursor, batch = await commands.execute("SCAN", cursor, "MATCH", pattern, "COUNT", 500)
                found += batch
                if int(cursor) == 0:
                    return found

        return sorted(_text(k)[start:] for k in await self._run(scan))

    # -- cancellation ----------------------------------------------------------------------------------------

    async def request_cancel(self, key: str) -> None:
        await self._call("cancel", [self._key(key)], [self._shared.cancels, key])

    def on_cancel(self, owner: str, listener: CancelListener) -> None:
        # An owner id is one engine's (one namespace's): the cancel channel carries "<owner> <rollout key>".
        self._shared.cancel_listeners[owner] = listener

    # -- ownership -------------------------------------------------------------------------------------------

    async def heartbeat(self, owner: str, ttl: float) -> None:
        beat = ("SET", f"{self._shared.base}hb:{owner}", "1", "PX", int(ttl * 1000))
        seen = ("SADD", f"{self.namespace}owners", owner)
        await self._run(lambda commands: commands.pipeline((beat, seen)))
        # The deadlines of timed scripts are in Redis's clock: follow this host's clock steps (NTP) within a minute.
        if time.monotonic() >= self._shared.clock_due:
            self._shared.clock_due = time.monotonic() + CLOCK_REFRESH_S
            await self._run(lambda commands: commands.measure_clock())

    async def ping(self) -> None:
        await self._run(lambda commands: commands.execute("PING"))

    async def discard(self, key: str, ticket: str) -> bool:
        redis_key = self._key(key)
        done = await self._call(
            "discard", [redis_key, self._owned_prefix()], [self._shared.change_prefix, self._shared.id, _json(ticket)]
        )
        if done:
            self._shared.wake_local(redis_key, Snapshot(-1, "null"))
        return bool(done)

    async def alive(self, owner: str) -> bool:
        beat = f"{self._shared.base}hb:{owner}"
        return bool(await self._run(lambda commands: commands.execute("EXISTS", beat)))

    async def owners(self) -> list[str]:
        """Processes that have run rollouts in this namespace (alive or not)."""
        owners = f"{self.namespace}owners"
        return sorted(_text(o) for o in await self._run(lambda commands: commands.execute("SMEMBERS", owners)))

    async def owned(self, owner: str) -> list[str]:
        """Unfinished rollout keys ``owner`` runs (or ran, if it died)."""
        start = len(self._key(""))
        owned = f"{self._owned_prefix()}{owner}"
        return sorted(_text(m)[start:] for m in await self._run(lambda commands: commands.execute("SMEMBERS", owned)))

    async def forget_owner(self, owner: str) -> None:
        """Drop a dead owner's bookkeeping once its rollouts are finished."""
        drop = ("DEL", f"{self._owned_prefix()}{owner}")
        unseen = ("SREM", f"{self.namespace}owners", owner)
        await self._run(lambda commands: commands.pipeline((drop, unseen)))


class _RedisWatch(Watch):
    """One long-poll's registration: this process's own changes and the pub/sub listener (other processes'
    changes, once this process is a watcher of the record in Redis) hand it the newest version and status."""

    def __init__(self, store: RedisStore, key: str) -> None:
        self.store, self.key = store, key
        self.event = asyncio.Event()
        self.version: int | None = None
        self.status: Any = None
        self.result: dict[str, Any] | None = None  # a finished result handed over by this process (wake_local)
        self.reread = False
        self.registered = False  # whether this process is a watcher of the record in Redis

    def changed(self, version: int | None, status: Any, result: dict[str, Any] | None = None) -> None:
        if version is None:
            self.reread = True
        elif self.version is None or version > self.version or version == -1 or (version == self.version and result is not None):
            # -1: deleted. Equal: this process's own finish, with its result, after a message announced it.
            self.version, self.status, self.result = version, status, result
        self.event.set()

    async def wait(self, seen: Snapshot, timeout: float) -> Snapshot | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not self.registered:  # not yet told of other processes' changes: register, and look once more
            now = await self.store._register(self.key)
            self.registered = True
            if now is None or now.version != seen.version:
                return now
        while True:
            if not self.reread and (self.version is None or 0 <= self.version <= seen.version):
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return seen
                self.event.clear()
                try:
                    await asyncio.wait_for(self.event.wait(), remaining)
                except (TimeoutError, asyncio.TimeoutError):
                    return seen
                continue  # a message about an older version, or a wake to re-read: look again
            if self.version == -1:
                return None  # deleted
            if not self.reread:  # a newer version was announced
                if self.status not in TERMINAL:
                    return Snapshot(self.version, self.status)  # the message said it all
                if self.result is not None:
                    return Snapshot(self.version, self.status, self.result)
            self.reread = False
            now = await self.store.snapshot(self.key)  # a result to read, or a change that may have been missed
            if now is None or now.version != seen.version:
                return now
            # Woken without a change (the listener re-subscribed, or a message of an earlier incarnation of the
            # key): forget it and wait on until the deadline.
            self.version, self.status, self.result = None, None, None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


async def _quietly(awaitable: Any) -> None:
    try:
        await awaitable
    except Exception:
        pass
