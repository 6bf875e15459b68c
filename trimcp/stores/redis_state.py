"""User state on Redis: per-user values and handle states every replica reads and writes.

Keys (``<prefix>`` is the store's):

- ``<prefix>st:<owner>|<slot>``: one entry, a hash ``{v: version, d: value bytes}``,
  expiring with the entry (``PEXPIRE``);
- ``<prefix>st-exp``: a sorted set of every entry (``<owner>|<slot>``) scored by its
  expiry (Unix ms), and ``<prefix>st-size``: a hash of each entry's counted bytes, plus
  their sum under the empty field;
- ``<prefix>st-owner:<owner>``: the bytes one owner's entries count;
- ``<prefix>st-version``: the last version given (every write takes the next one).

A write and a delete are each one Lua script, so one atomic step in Redis: it first prunes
what has expired (giving its bytes back to its owner and to the total; bounded work per
call, the rest on later calls), then checks the expected version and the budget, and
writes the entry, its expiry and its counts together or not at all. Times come from
Redis's own clock (``TIME``), so replicas whose clocks differ agree on what has expired.
A read is one ``HMGET``. Versions come from one counter for the whole store, so an entry
deleted (or expired) and made again never shows a version a reader of the old one could
expect. The bookkeeping keys expire after the longest entry TTL (plus a minute) without a
write: by then every entry has expired too.

Standalone Redis only (the scripts reach the keys of pruned entries by name).
"""

from __future__ import annotations

from trimcp.stores.redis_client import RedisClient, reply_error
from trimcp.stores.user_state import (
    Entry,
    StateBudget,
    StateFull,
    VersionMismatch,
    check_slot,
    entry_bytes,
)

#: Extra life of the bookkeeping keys past the longest entry TTL (seconds).
_MARGIN = 60.0

#: Prunes up to 10 x 100 expired entries: removed, their bytes given back.
#: KEYS[2] the expiry set, KEYS[3] the size hash; ARGV[1] the key prefix; ``now`` in ms.
_PRUNE = """
local function prune(now)
  for _ = 1, 10 do
    local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)
    if #gone == 0 then return end
    redis.call('ZREM', KEYS[2], unpack(gone))
    local sizes = redis.call('HMGET', KEYS[3], unpack(gone))
    redis.call('HDEL', KEYS[3], unpack(gone))
    local freed = 0
    for i = 1, #gone do
      local size = tonumber(sizes[i] or '0')
      freed = freed + size
      redis.call('DEL', ARGV[1] .. 'st:' .. gone[i])
      local owner = ARGV[1] .. 'st-owner:' .. string.match(gone[i], '^([^|]*)|')
      if size > 0 and redis.call('EXISTS', owner) == 1 then
        if redis.call('DECRBY', owner, size) <= 0 then redis.call('DEL', owner) end
      end
    end
    if freed > 0 then redis.call('HINCRBY', KEYS[3], '', -freed) end
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
prune(now)
"""

#: KEYS: the entry, the expiry set, the size hash, the owner's count, the version
#: counter. ARGV: the prefix,
#: the member (``owner|slot``), the value, the expected version ('' for any), the ttl ms,
#: the entry's size, the most bytes per entry, per owner and in total, the bookkeeping
#: keys' ttl ms. Returns {'ok', version}, {'conflict', current}, or {limit, held} when
#: a budget refuses (nothing written).
_PUT = (
    _PRUNE
    + """
local current = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= current then return {'conflict', current} end
local size = tonumber(ARGV[6])
local old = tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0')
if size > tonumber(ARGV[7]) then return {'max_value_bytes', 0} end
local mine = tonumber(redis.call('GET', KEYS[4]) or '0')
local all = tonumber(redis.call('HGET', KEYS[3], '') or '0')
if size > old then
  if mine - old + size > tonumber(ARGV[8]) then return {'max_user_bytes', mine} end
  if all - old + size > tonumber(ARGV[9]) then return {'max_total_bytes', all} end
end
local version = redis.call('INCR', KEYS[5])
redis.call('HSET', KEYS[1], 'v', version, 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], size)
redis.call('HINCRBY', KEYS[3], '', size - old)
redis.call('INCRBY', KEYS[4], size - old)
for i = 2, 5 do redis.call('PEXPIRE', KEYS[i], ARGV[10]) end
return {'ok', version}
"""
)

#: KEYS[1..4], ARGV[1..4] as for _PUT. Returns {'ok', version}, {'absent', 0} or
#: {'conflict', current}.
_DELETE = (
    _PRUNE
    + """
local current = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= current then return {'conflict', current} end
if current == 0 then return {'absent', 0} end
local old = tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('HINCRBY', KEYS[3], '', -old)
if redis.call('EXISTS', KEYS[4]) == 1 and redis.call('DECRBY', KEYS[4], old) <= 0 then
  redis.call('DEL', KEYS[4])
end
return {'ok', current}
"""
)


class RedisUserStateStore:
    """A :class:`~trimcp.stores.user_state.UserStateStore` in Redis (see the module
    docstring). Made by :meth:`trimcp.stores.RedisStore.user_state_store`;
    ``serve_http(store=...)`` gives a served :class:`~trimcp.Server` one. Every call is
    one round trip, bounded by the client's timeout; raises StoreUnavailable."""

    def __init__(self, client: RedisClient, prefix: str, budget: StateBudget | None = None) -> None:
        self._client = client
        self._prefix = prefix
        self._budget = budget or StateBudget()
        longest = max(self._budget.ttl, self._budget.handle_ttl) + _MARGIN
        self._books_ttl_ms = int(longest * 1000)

    @property
    def budget(self) -> StateBudget:
        return self._budget

    def _keys(self, owner: str, slot: str) -> list[str]:
        return [
            f"{self._prefix}st:{owner}|{slot}",
            f"{self._prefix}st-exp",
            f"{self._prefix}st-size",
            f"{self._prefix}st-owner:{owner}",
        ]

    async def get(self, owner: str, slot: str) -> Entry | None:
        reply = await self._client.execute("HMGET", self._keys(owner, slot)[0], "v", "d")
        if not isinstance(reply, list) or len(reply) != 2:
            raise ValueError(f"unexpected reply from the state store: {reply!r}")
        version, data = reply
        if not isinstance(version, bytes) or not isinstance(data, bytes):
            return None
        return Entry(data, int(version))

    async def put(
        self, owner: str, slot: str, data: bytes, *, ttl: float, expected: int | None = None
    ) -> int:
        check_slot(owner, slot)
        budget = self._budget
        size = entry_bytes(slot, data)
        if size > budget.max_value_bytes:  # refused here: never sent
            raise StateFull("max_value_bytes", budget.max_value_bytes, size, 0)
        outcome, number = await self._script(
            _PUT,
            owner,
            slot,
            [f"{self._prefix}st-version"],
            data,
            "" if expected is None else expected,
            max(1, int(ttl * 1000)),
            size,
            budget.max_value_bytes,
            budget.max_user_bytes,
            budget.max_total_bytes,
            self._books_ttl_ms,
        )
        if outcome == "ok":
            return number
        if outcome == "conflict":
            raise VersionMismatch(number)
        limit = outcome
        raise StateFull(limit, getattr(budget, limit), size, number)

    async def delete(self, owner: str, slot: str, *, expected: int | None = None) -> bool:
        check_slot(owner, slot)
        outcome, number = await self._script(
            _DELETE, owner, slot, [], b"", "" if expected is None else expected
        )
        if outcome == "conflict":
            raise VersionMismatch(number)
        return outcome == "ok"

    async def _script(
        self, script: str, owner: str, slot: str, more: list[str], *args: bytes | str | int
    ) -> tuple[str, int]:
        keys = self._keys(owner, slot) + more
        reply = await self._client.execute(
            "EVAL", script, len(keys), *keys, self._prefix, f"{owner}|{slot}", *args
        )
        if reply_error(reply) or not isinstance(reply, list) or len(reply) != 2:
            raise ValueError(f"unexpected reply from the state store: {reply!r}")
        outcome, number = reply
        if not isinstance(outcome, bytes) or not isinstance(number, int):
            raise ValueError(f"unexpected reply from the state store: {reply!r}")
        return outcome.decode("ascii"), number
