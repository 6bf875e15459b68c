"""The authorization server's records in Redis: every replica and worker sees one state.

Each record is one string key with a TTL (``PX``), holding the key of its client's
sorted set, a NUL byte and the JSON. A client's sorted set lists its records by expiry:
a write past ``max_per_client`` live records is refused, in the same script that would
store it (one round trip, atomic). ``take`` is ``GET`` and ``DEL`` in one script, so a
code or refresh token is handed to one caller only, whichever replica each asks.

There is no total bound here: Redis's memory is the operator's (``maxmemory``); every key
expires. Scripts run with ``EVAL`` (no script cache to keep in step).
"""

from __future__ import annotations

import hashlib
import time

from trimcp.authserver.store import DEFAULT_MAX_PER_CLIENT, Record, decode, encode
from trimcp.stores.redis import RedisStore

_PUT = """
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if KEYS[2] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
  if not redis.call('ZSCORE', KEYS[2], KEYS[1])
     and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
    return 0
  end
  redis.call('ZADD', KEYS[2], tonumber(ARGV[4]) + tonumber(ARGV[2]), KEYS[1])
  local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[2], newest[2])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

_TAKE = """
local value = redis.call('GET', KEYS[1])
if not value then return false end
redis.call('DEL', KEYS[1])
local cut = string.find(value, '\\0', 1, true)
if cut and cut > 1 then redis.call('ZREM', string.sub(value, 1, cut - 1), KEYS[1]) end
return value
"""


class RedisAuthStore:
    """:class:`~trimcp.authserver.store.AuthStore` in the Redis of a
    :class:`~trimcp.stores.RedisStore` (its keys under the store's prefix, ``as:``).

    Calls raise ``StoreUnavailable`` when Redis does not answer within the store's
    timeout. Cancellation: a write may or may not have happened.
    """

    def __init__(self, store: RedisStore, *, max_per_client: int = DEFAULT_MAX_PER_CLIENT) -> None:
        if max_per_client < 1:
            raise ValueError("max_per_client must be at least 1")
        self.redis = store
        self.max_per_client = max_per_client

    def _key(self, kind: str, key: str) -> str:
        if len(key) > 128:  # e.g. a URL client id: keys stay short
            key = "h" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return self.redis.key("as", kind, key)

    def _client_key(self, client: str) -> str:
        return self.redis.key(
            "as", "client-records", hashlib.sha256(client.encode("utf-8")).hexdigest()[:40]
        )

    async def put(
        self,
        kind: str,
        key: str,
        value: Record,
        ttl: float,
        *,
        client: str | None = None,
        only_new: bool = False,
    ) -> bool:
        owner = "" if client is None else self._client_key(client)
        data = owner.encode("utf-8") + b"\x00" + encode(value)
        reply = await self.redis.client.execute(
            "EVAL",
            _PUT,
            2,
            self._key(kind, key),
            owner,
            data,
            max(1, int(ttl * 1000)),
            "1" if only_new else "0",
            int(time.time() * 1000),
            self.max_per_client,
        )
        return reply == 1

    async def get(self, kind: str, key: str) -> Record | None:
        reply = await self.redis.client.execute("GET", self._key(kind, key))
        return _record(reply)

    async def take(self, kind: str, key: str) -> Record | None:
        reply = await self.redis.client.execute("EVAL", _TAKE, 1, self._key(kind, key))
        return _record(reply)

    async def delete(self, kind: str, key: str) -> None:
        await self.take(kind, key)


def _record(reply: object) -> Record | None:
    if not isinstance(reply, bytes):
        return None
    _, _, data = reply.partition(b"\x00")
    try:
        return decode(data)
    except ValueError:
        return None
