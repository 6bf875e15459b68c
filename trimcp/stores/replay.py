"""The DPoP replay cache replicas share: a proof accepted by one is refused by every other.

:class:`RedisReplayCache` keeps each key's accepted proofs (by its JWK thumbprint) in a
sorted set of its own in Redis, scored by when each would be refused as stale anyway, so
the cache bounds itself in time: no entry outlives the proof age a
:class:`~trimcp.auth.dpop.DpopChecker` accepts. And in room: a key holds at most
``max_entries_per_key`` proofs; past that it forgets its own oldest and from then on
refuses its own proofs no newer (the newest expiry it forgot is kept next to the set),
as :class:`~trimcp.auth.dpop.MemoryReplayCache` does, so no key's flood touches another
key. A store that offers one is :class:`SharesReplayCache`; the HTTP app then hands it to
its :class:`~trimcp.auth.ProtectedResource` for every request.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from trimcp.auth.dpop import MAX_PROOFS_PER_KEY, share_full

if TYPE_CHECKING:
    from trimcp.auth.dpop import ReplayCache
    from trimcp.stores.redis_client import RedisClient


@runtime_checkable
class SharesReplayCache(Protocol):
    """A store whose replicas share one DPoP replay cache."""

    def replay_cache(self) -> ReplayCache:
        """The :class:`~trimcp.auth.dpop.ReplayCache` every replica of this store sees."""
        ...


# KEYS[1]: the key's proofs (a sorted set: jti digest -> expiry), KEYS[2]: the newest
# expiry its share forgot. ARGV: the jti digest, now, its expiry, the share.
# Answers "new", "used" (seen before) or "old" (no newer than one the share forgot).
_FIRST_USE = """
local now, expires = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 'used' end
local horizon = redis.call('GET', KEYS[2])
if horizon and expires <= tonumber(horizon) then return 'old' end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local forgotten = tonumber(oldest[2])
  if expires <= forgotten then return 'old' end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, 0)
  redis.call('SET', KEYS[2], oldest[2], 'PX', math.max(1, math.ceil((forgotten - now) * 1000)))
end
redis.call('ZADD', KEYS[1], expires, ARGV[1])
local ttl = math.max(1, math.ceil((expires - now) * 1000))
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 'new'
"""


class RedisReplayCache:
    """A :class:`~trimcp.auth.dpop.ReplayCache` in Redis, under ``prefix``; each key
    (thumbprint) holds at most ``max_entries_per_key`` proofs (see the module docstring).

    :meth:`first_use` raises ``StoreUnavailable`` when Redis does not answer in time (the
    proof is then refused: a replay check that cannot be made is not passed).
    """

    def __init__(
        self, client: RedisClient, prefix: str, *, max_entries_per_key: int = MAX_PROOFS_PER_KEY
    ) -> None:
        if max_entries_per_key < 1:
            raise ValueError("max_entries_per_key must be at least 1")
        self.client = client
        self.prefix = prefix
        self.max_entries_per_key = max_entries_per_key

    async def first_use(self, thumbprint: str, jti: str, expires_at: float) -> bool:
        """One round trip (a script). Cancellation: the proof may or may not be recorded."""
        # Digests keep keys and members short and of one length, whatever the proof says.
        key = _digest(thumbprint)
        reply = await self.client.execute(
            "EVAL",
            _FIRST_USE,
            2,
            f"{self.prefix}{key}",
            f"{self.prefix}{key}:forgot",
            _digest(jti),
            repr(time.time()),
            repr(expires_at),
            self.max_entries_per_key,
        )
        if reply == b"old":
            raise share_full(
                f"RedisReplayCache max_entries_per_key: {self.max_entries_per_key} proofs"
            )
        return reply == b"new"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]
