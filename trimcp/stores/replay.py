"""The DPoP replay cache replicas share: a proof accepted by one is refused by every other.

:class:`RedisReplayCache` keeps each accepted proof's key in Redis with ``SET ... NX PX``
until the proof would be refused as stale anyway, so the cache bounds itself: no entry
outlives the proof age a :class:`~trimcp.auth.dpop.DpopChecker` accepts. A store that
offers one is :class:`SharesReplayCache`; the HTTP app then hands it to its
:class:`~trimcp.auth.ProtectedResource` for every request.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from trimcp.auth.dpop import ReplayCache
    from trimcp.stores.redis_client import RedisClient


@runtime_checkable
class SharesReplayCache(Protocol):
    """A store whose replicas share one DPoP replay cache."""

    def replay_cache(self) -> ReplayCache:
        """The :class:`~trimcp.auth.dpop.ReplayCache` every replica of this store sees."""
        ...


class RedisReplayCache:
    """A :class:`~trimcp.auth.dpop.ReplayCache` in Redis, under ``prefix``.

    :meth:`first_use` raises ``StoreUnavailable`` when Redis does not answer in time (the
    proof is then refused: a replay check that cannot be made is not passed).
    """

    def __init__(self, client: RedisClient, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    async def first_use(self, key: str, expires_at: float) -> bool:
        """One round trip (``SET NX PX``). Cancellation: the key may or may not be set."""
        ttl_ms = max(1, int((expires_at - time.time()) * 1000))
        # A digest keeps keys short and of one length, whatever the proof's jti.
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        reply = await self.client.execute("SET", self.prefix + digest, b"1", "NX", "PX", ttl_ms)
        return reply is not None
