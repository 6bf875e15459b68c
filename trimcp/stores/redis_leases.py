"""Leases counted in Redis: a budget of open things holds across every replica.

Each scope is a sorted set (``<prefix>lease:<scope key>``) of the leases it holds, each
scored by when it expires (Unix time). Taking a lease is one script, as creating a task
is (:mod:`trimcp.stores.redis_tasks`): it removes the expired members of every scope,
counts each against its limit, and adds the lease to all of them, or to none. A replica
renews the leases it holds every :data:`RENEW_EVERY` seconds (one pipeline), so a lease
of a replica that died stops counting within :data:`LEASE_TTL` seconds; each set expires
when nothing renews it. Releasing removes the lease from its sets.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence
from contextlib import suppress

import trio

from trimcp.stores.base import StoreUnavailable
from trimcp.stores.leases import Lease, LeaseRefused, Scope
from trimcp.stores.redis_client import Command, RedisClient

logger = logging.getLogger("trimcp.stores.leases")

#: How long a lease counts without being renewed (a dead replica's leases, at most).
LEASE_TTL = 15.0
#: How often a replica renews the leases it holds.
RENEW_EVERY = 5.0


class RedisLeases:
    """The :class:`~trimcp.stores.leases.Leases` of the replicas sharing one Redis prefix.

    Made by :meth:`trimcp.stores.RedisStore.leases`; its :meth:`run` (which the store's
    ``run`` runs) renews what this replica holds.
    """

    def __init__(self, client: RedisClient, prefix: str, replica: str) -> None:
        self._client = client
        self._prefix = prefix
        self._replica = replica
        self._numbers = itertools.count(1)
        #: The leases this replica holds (member -> its set keys).
        self._held: dict[str, tuple[str, ...]] = {}
        #: Leases given back and not yet removed, and whether a task is removing them.
        self._returned: list[Lease] = []
        self._returning = False

    def _key(self, scope_key: str) -> str:
        return f"{self._prefix}lease:{scope_key}"

    async def acquire(self, scopes: Sequence[Scope]) -> Lease:
        member = f"{self._replica}:{next(self._numbers)}"
        keys = tuple(self._key(scope.key) for scope in scopes)
        now = time.time()
        reply = await self._client.execute(
            "EVAL",
            _ACQUIRE,
            len(keys),
            *keys,
            repr(now),
            repr(now + LEASE_TTL),
            member,
            int(LEASE_TTL * 1000),
            *[scope.limit for scope in scopes],
        )
        if not isinstance(reply, list) or len(reply) != 2:
            raise StoreUnavailable(f"unexpected reply from the lease script: {reply!r}")
        full, count = reply
        if isinstance(full, int) and full > 0:
            raise LeaseRefused(scopes[full - 1], int(count))
        self._held[member] = keys
        return Lease(member=member, keys=keys)

    async def release(self, lease: Lease) -> None:
        """Give ``lease`` back. Leases given back at once (every stream of a client that
        went away) share one pipeline, on one pooled connection: a release made while
        another is under way is left to it (and returns at once). Raises
        StoreUnavailable."""
        if self._held.pop(lease.member, None) is None:
            return
        self._returned.append(lease)
        if self._returning:
            return
        self._returning = True
        try:
            while self._returned:
                batch, self._returned = self._returned, []
                await self._client.pipeline(
                    [("ZREM", key, given.member) for given in batch for key in given.keys]
                )
        finally:
            self._returning = False
            self._returned.clear()  # (not removed: they expire on their own)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Renew the leases this replica holds every :data:`RENEW_EVERY` seconds, until
        cancelled. An outage is logged by the client; the next round retries."""
        task_status.started()
        while True:
            await trio.sleep(RENEW_EVERY)
            held = list(self._held.items())
            if not held:
                continue
            expiry = repr(time.time() + LEASE_TTL)
            ttl = int(LEASE_TTL * 1000)
            commands: list[Command] = []
            for member, keys in held:
                commands.extend(("ZADD", key, "XX", expiry, member) for key in keys)
            commands.extend(("PEXPIRE", key, ttl) for key in {k for _, keys in held for k in keys})
            with suppress(StoreUnavailable):
                await self._client.pipeline(commands)


#: KEYS: the scopes' sets; ARGV: now, the lease's expiry (Unix), its member, the sets' ttl
#: ms, then each scope's limit. Prunes expired leases, then {i, count} for the first
#: full scope i, else adds the lease to every set: {0, 0}.
_ACQUIRE = """
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', ARGV[1])
  local held = redis.call('ZCARD', KEYS[i])
  if held >= tonumber(ARGV[4 + i]) then return {i, held} end
end
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[i], ARGV[4])
end
return {0, 0}
"""
