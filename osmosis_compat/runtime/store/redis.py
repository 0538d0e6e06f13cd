"""``RedisStore``: the rollout store on Redis, so several processes and hosts serve as one rollout server.

Layout (every key under a namespace prefix, ``osmosis:`` by default; a mixed server gives each agent and protocol
its own namespace with :meth:`RedisStore.namespaced`):

- ``<ns>r:<rollout key>`` — a HASH, one field per :class:`~.base.RolloutRecord` field, each value JSON-encoded;
  unfinished records expire after ``UNFINISHED_TTL_S`` as a last resort, finished ones after their retention;
- ``<ns>owned:<owner>`` — the SET of unfinished keys a process runs; ``<ns>owners`` — the SET of owners seen;
- ``<base>hb:<owner>`` — a process's heartbeat (a key with a short TTL);
- channel ``<base>changes`` — every version change publishes ``"<record's Redis key> <version> <status>"``: one
  subscription per process wakes the long-polls waiting on that rollout, whichever process admitted it, and a
  status change reaches them without another read;
- channel ``<base>cancel`` — ``"<owner> <rollout key>"``: the owner cancels the task it runs.

Admission, updates and finishing are single Lua scripts, so exactly one process wins a key and a result is set
once (the first of completion, cancel, lease expiry and abort). Redis errors become
:class:`~.base.StoreUnavailableError` (admission answers 503; nothing is half-admitted: a failed create wrote
nothing). Needs the ``redis`` package (``pip install 'osmosis-compat[redis]'``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import fields
from typing import Any

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

#: Unfinished records disappear after a day even if every process that could finish them is gone.
UNFINISHED_TTL_S = 24 * 3600
_FIELDS = tuple(f.name for f in fields(RolloutRecord))
_VERSIONED = ("status", "answer")
_TERMINAL_JSON = tuple(json.dumps(s) for s in sorted(TERMINAL))

# KEYS[1] record, KEYS[2] owned set, KEYS[3] owners set; ARGV: ttl_s, owner, then field/value pairs.
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
local pairs = {}
for i = 3, #ARGV do pairs[#pairs + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(pairs))
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], KEYS[1])
redis.call('SADD', KEYS[3], ARGV[2])
return false
"""

# The head of the scripts that change a live record: 0 when KEYS[1] is gone or finished (ARGV[2]: the terminal
# statuses, space-separated JSON).
_UNLESS_GONE_OR_FINISHED = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local status = redis.call('HGET', KEYS[1], 'status')
for terminal in string.gmatch(ARGV[2], '%S+') do
  if status == terminal then return 0 end
end
"""

# KEYS[1] record; ARGV[1] changes channel, ARGV[2] terminal statuses (space-separated JSON), ARGV[3] versioned
# fields (space-separated), then field/value pairs.
_UPDATE = _UNLESS_GONE_OR_FINISHED + """
local versioned = {}
for name in string.gmatch(ARGV[3], '%S+') do versioned[name] = true end
local bump = false
for i = 4, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old ~= ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    if versioned[ARGV[i]] then bump = true end
  end
end
if bump then
  local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
  redis.call('PUBLISH', ARGV[1], KEYS[1] .. ' ' .. version .. ' ' .. redis.call('HGET', KEYS[1], 'status'))
end
return 1
"""

# KEYS[1] record, KEYS[2] owned-set prefix (+ owner); ARGV: channel, terminal statuses, status, result, finished_at
# (= now), retention_ms, then optionally the status and result to record instead when the lease ran out.
# Returns 0 (already finished or gone) or {new version, the status recorded (JSON), 1 if the lease's was}.
_FINISH = _UNLESS_GONE_OR_FINISHED + """
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
local retention = tonumber(ARGV[6])
if retention <= 0 then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], retention) end
redis.call('PUBLISH', ARGV[1], KEYS[1] .. ' ' .. version .. ' ' .. new_status)
return {version, new_status, replaced}
"""

# KEYS[1] record; ARGV: digest (JSON), new deadline, now, terminal statuses.
# Returns {outcome} or {outcome, version, status, result} (JSON values).
_RENEW = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local digest = redis.call('HGET', KEYS[1], 'lease_digest')
if not digest or digest == 'null' then return {'unknown'} end
if digest ~= ARGV[1] then return {'forbidden'} end
local fields = redis.call('HMGET', KEYS[1], 'version', 'status', 'result', 'lease_deadline')
for terminal in string.gmatch(ARGV[4], '%S+') do
  if fields[2] == terminal then return {'finished', fields[1], fields[2], fields[3]} end
end
if fields[4] and fields[4] ~= 'null' and tonumber(fields[4]) <= tonumber(ARGV[3]) then
  return {'expired', fields[1], fields[2], 'null'}
end
redis.call('HSET', KEYS[1], 'lease_deadline', ARGV[2])
return {'renewed', fields[1], fields[2], 'null'}
"""

# KEYS[1] record; ARGV[1] cancel channel. Marks the record and tells its owner (finished records too).
_CANCEL = """
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
redis.call('HSET', KEYS[1], 'cancel_requested', 'true')
redis.call('PUBLISH', ARGV[1], cjson.decode(owner) .. ' ' .. ARGV[2])
return 1
"""

# KEYS[1] record, KEYS[2] owned-set prefix; ARGV[1] channel.
_DELETE = """
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then redis.call('SREM', KEYS[2] .. cjson.decode(owner), KEYS[1]) end
if redis.call('DEL', KEYS[1]) == 1 then redis.call('PUBLISH', ARGV[1], KEYS[1] .. ' -1 null') end
return true
"""


def _encode(record: RolloutRecord) -> list[str]:
    flat: list[str] = []
    for name, value in record.to_dict().items():
        flat += [name, json.dumps(value, separators=(",", ":"), sort_keys=True)]
    return flat


def _decode(raw: Any) -> RolloutRecord | None:
    """A record from ``HGETALL``: a dict from the client, a flat field/value list from a Lua script."""
    if not raw:
        return None
    pairs = raw.items() if isinstance(raw, dict) else zip(raw[0::2], raw[1::2])
    data = {_text(name): json.loads(_text(value)) for name, value in pairs}
    if isinstance(data.get("version"), float):
        data["version"] = int(data["version"])
    return RolloutRecord.from_dict(data)


class _Shared:
    """What every namespaced view of one Redis store shares: the client, the pub/sub listener, waiters and
    cancel listeners."""

    def __init__(self, url: str, base: str, **client_options: Any) -> None:
        self.url = url
        self.base = base
        self.client_options = client_options
        self.client: Any = None
        self.scripts: dict[str, Any] = {}
        self.waiters: dict[str, set[_RedisWatch]] = {}
        self.cancel_listeners: dict[str, CancelListener] = {}
        self.listener: asyncio.Task[None] | None = None
        self.users = 0
        self.lock: asyncio.Lock | None = None

    @property
    def changes(self) -> str:
        return f"{self.base}changes"

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
            options = {
                "socket_timeout": 5.0,
                "socket_connect_timeout": 3.0,
                "health_check_interval": 15,
                "max_connections": 64,
                "timeout": 10.0,  # waiting for a free pooled connection
                **self.client_options,
            }
            # A blocking pool: 1,000 long-polls reading at once queue for 64 connections instead of failing.
            pool = redis.BlockingConnectionPool.from_url(self.url, **options)
            client = redis.Redis(connection_pool=pool)
            try:
                await client.ping()
            except Exception as exc:
                await client.aclose(close_connection_pool=True)
                self.users -= 1
                raise StoreUnavailableError(f"cannot reach the rollout store at {_safe_url(self.url)}: {exc}") from exc
            self.client = client
            self.scripts = {
                "create": client.register_script(_CREATE),
                "update": client.register_script(_UPDATE),
                "finish": client.register_script(_FINISH),
                "delete": client.register_script(_DELETE),
                "renew": client.register_script(_RENEW),
                "cancel": client.register_script(_CANCEL),
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
            await self.client.aclose(close_connection_pool=True)
            self.client = None
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
        """A change this process made, with what a long-poll answers from: no message or re-read needed."""
        for watch in self.waiters.get(redis_key, ()):
            watch.changed(snapshot.version, snapshot.status, snapshot.result)

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

    def _client(self) -> Any:
        if self._shared.client is None:
            raise StoreUnavailableError("the rollout store is not started (await store.start() first)")
        return self._shared.client

    async def _call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        self._client()
        try:
            return await self._shared.scripts[name](keys=keys, args=args)
        except StoreUnavailableError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc

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
        try:
            return _decode(await self._client().hgetall(self._key(key)))
        except StoreUnavailableError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc

    async def snapshot(self, key: str) -> Snapshot | None:
        """Version, status and result of ``key`` (a small read: no other field)."""
        try:
            version, status, result = await self._client().hmget(self._key(key), "version", "status", "result")
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc
        if version is None:
            return None
        return Snapshot(int(json.loads(version)), json.loads(status), json.loads(result) if result else None)

    async def get_many(self, keys: Iterable[str]) -> list[RolloutRecord | None]:
        keys = list(keys)
        if not keys:
            return []
        try:
            async with self._client().pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hgetall(self._key(key))
                return [_decode(raw) for raw in await pipe.execute()]
        except StoreUnavailableError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc

    async def update(self, key: str, **changes: Any) -> RolloutRecord | None:
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise TypeError(f"unknown record fields: {', '.join(sorted(unknown))}")
        flat: list[str] = []
        for name, value in changes.items():
            flat += [name, json.dumps(value, separators=(",", ":"), sort_keys=True)]
        changed = await self._call(
            "update",
            [self._key(key)],
            [self._shared.changes, " ".join(_TERMINAL_JSON), " ".join(_VERSIONED), *flat],
        )
        return bool(changed)

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
            self._shared.changes,
            " ".join(_TERMINAL_JSON),
            json.dumps(status),
            json.dumps(result, separators=(",", ":"), sort_keys=True),
            json.dumps(time.time()),
            retention_ms,
        ]
        if expired is not None:
            args += [json.dumps(expired[0]), json.dumps(expired[1], separators=(",", ":"), sort_keys=True)]
        done = await self._call("finish", [self._key(key), self._owned_prefix()], args)
        if not done:
            return False
        # This process's own long-polls get the result now, not via pub/sub and a re-read (one round trip less
        # per rollout when the poll lands on the process that ran it); the message that follows is a no-op.
        version, recorded = int(done[0]), json.loads(_text(done[1]))
        if retention is None or retention > 0:
            held = expired[1] if expired is not None and int(done[2]) else result
            if held is not None:
                self._shared.wake_local(self._key(key), Snapshot(version, recorded, held))
        return True

    async def delete(self, key: str) -> None:
        await self._call("delete", [self._key(key), self._owned_prefix()], [self._shared.changes])

    @asynccontextmanager
    async def watch(self, key: str) -> AsyncIterator[Watch]:
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
        raw = await self._call(
            "renew", [self._key(key)], [json.dumps(digest), json.dumps(deadline), json.dumps(now), " ".join(_TERMINAL_JSON)]
        )
        outcome = _text(raw[0])
        if len(raw) < 4:
            return LeaseCheck(outcome)
        return LeaseCheck(outcome, Snapshot(int(json.loads(raw[1])), json.loads(raw[2]), json.loads(raw[3])))

    async def keys(self, *, prefix: str | None = None) -> list[str]:
        start = len(self._key(""))
        pattern = self._key(_glob_escape(prefix or "")) + "*"
        try:
            found = [_text(k)[start:] async for k in self._client().scan_iter(match=pattern, count=500)]
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc
        return sorted(found)

    # -- cancellation ----------------------------------------------------------------------------------------

    async def request_cancel(self, key: str) -> None:
        await self._call("cancel", [self._key(key)], [self._shared.cancels, key])

    def on_cancel(self, owner: str, listener: CancelListener) -> None:
        # An owner id is one engine's (one namespace's): the cancel channel carries "<owner> <rollout key>".
        self._shared.cancel_listeners[owner] = listener

    # -- ownership -------------------------------------------------------------------------------------------

    async def heartbeat(self, owner: str, ttl: float) -> None:
        try:
            async with self._client().pipeline(transaction=False) as pipe:
                pipe.set(f"{self._shared.base}hb:{owner}", "1", px=int(ttl * 1000))
                pipe.sadd(f"{self.namespace}owners", owner)
                await pipe.execute()
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc

    async def alive(self, owner: str) -> bool:
        try:
            return bool(await self._client().exists(f"{self._shared.base}hb:{owner}"))
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc

    async def owners(self) -> list[str]:
        """Processes that have run rollouts in this namespace (alive or not)."""
        try:
            return sorted(_text(o) for o in await self._client().smembers(f"{self.namespace}owners"))
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc

    async def owned(self, owner: str) -> list[str]:
        """Unfinished rollout keys ``owner`` runs (or ran, if it died)."""
        start = len(self._key(""))
        try:
            members = await self._client().smembers(f"{self._owned_prefix()}{owner}")
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc
        return sorted(_text(m)[start:] for m in members)

    async def forget_owner(self, owner: str) -> None:
        """Drop a dead owner's bookkeeping once its rollouts are finished."""
        try:
            async with self._client().pipeline(transaction=False) as pipe:
                pipe.delete(f"{self._owned_prefix()}{owner}")
                pipe.srem(f"{self.namespace}owners", owner)
                await pipe.execute()
        except Exception as exc:
            raise StoreUnavailableError(f"rollout store error: {exc}") from exc


class _RedisWatch(Watch):
    """One long-poll's registration: the pub/sub listener hands it the newest (version, status) it heard."""

    def __init__(self, store: RedisStore, key: str) -> None:
        self.store, self.key = store, key
        self.event = asyncio.Event()
        self.version: int | None = None
        self.status: Any = None
        self.result: dict[str, Any] | None = None  # a finished result handed over by this process (wake_local)
        self.reread = False

    def changed(self, version: int | None, status: Any, result: dict[str, Any] | None = None) -> None:
        if version is None:
            self.reread = True
        elif self.version is None or version > self.version or (version == self.version and result is not None):
            # equal: this process's own finish, with its result, after the pub/sub message announced it
            self.version, self.status, self.result = version, status, result
        self.event.set()

    async def wait(self, seen: Snapshot, timeout: float) -> Snapshot | None:
        if not self.reread and (self.version is None or self.version <= seen.version):
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), timeout)
            except (TimeoutError, asyncio.TimeoutError):
                return seen
        if self.version == -1:
            return None  # deleted
        if not self.reread and self.version is not None:
            if self.version <= seen.version:
                return seen
            if self.status not in TERMINAL:
                return Snapshot(self.version, self.status)  # the message said it all
            if self.result is not None:
                return Snapshot(self.version, self.status, self.result)
        return await self.store.snapshot(self.key)  # a result to read, or a change that may have been missed


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
