"""Budgets of what a request holds open (listen streams, follows), counted where every
replica sees them.

A *lease* is one open thing, counted in one or more *scopes* (``Scope``: a counter name
and its limit, e.g. "follows of this principal, at most 100"). :meth:`Leases.acquire`
takes a lease in every scope at once, or none (:class:`LeaseRefused` names the first
full scope); :meth:`Leases.release` gives it back. :func:`held` does both around a block.

:class:`MemoryLeases` counts in this process. A store shared by replicas offers its own
(:class:`SharesLeases`; :class:`~trimcp.stores.redis_leases.RedisLeases` counts in Redis,
as the task store counts tasks: sorted sets scored by expiry, pruned before counting, in
one script), so a budget holds across every replica, not per process.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Protocol, runtime_checkable

import attrs
import trio

from trimcp.stores.base import StoreUnavailable

logger = logging.getLogger("trimcp.stores.leases")

#: How long releasing a lease may take (a store outage: it then expires on its own).
RELEASE_TIMEOUT = 2.0


@attrs.frozen(kw_only=True, slots=True)
class Scope:
    """One count a lease is taken in: ``key`` names the counter (``follow:p:<principal>``),
    ``limit`` is the most it may hold, ``setting`` the setting that raises it (for the
    refusal's message)."""

    key: str
    limit: int
    setting: str


class LeaseRefused(Exception):
    """A scope is full: ``scope`` names it, ``held`` is how many it holds."""

    def __init__(self, scope: Scope, held: int) -> None:
        super().__init__(f"{scope.key} holds {held} (the most, {scope.setting})")
        self.scope = scope
        self.held = held


@attrs.frozen(kw_only=True, slots=True, eq=False)
class Lease:
    """One lease taken (an opaque handle for :meth:`Leases.release`)."""

    member: str
    keys: tuple[str, ...]


class Leases(Protocol):
    """Where leases are counted."""

    async def acquire(self, scopes: Sequence[Scope]) -> Lease:
        """A lease in every scope, or :class:`LeaseRefused` (none taken). Raises
        :class:`~trimcp.stores.StoreUnavailable` when the counts cannot be reached.
        Cancellation: none taken (or one that expires on its own)."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give ``lease`` back (idempotent). Raises StoreUnavailable."""
        ...


@runtime_checkable
class SharesLeases(Protocol):
    """A store whose replicas count leases together."""

    def leases(self) -> Leases:
        """The :class:`Leases` every replica of this store counts in."""
        ...


class MemoryLeases:
    """Leases counted in this process (the default, and any store not shared)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._next = 0
        self._held: set[str] = set()

    def count(self, key: str) -> int:
        """How many leases scope ``key`` holds now."""
        return self._counts.get(key, 0)

    async def acquire(self, scopes: Sequence[Scope]) -> Lease:
        counts = self._counts
        for scope in scopes:
            held = counts.get(scope.key, 0)
            if held >= scope.limit:
                raise LeaseRefused(scope, held)
        for scope in scopes:
            counts[scope.key] = counts.get(scope.key, 0) + 1
        self._next += 1
        member = str(self._next)
        self._held.add(member)
        return Lease(member=member, keys=tuple(scope.key for scope in scopes))

    async def release(self, lease: Lease) -> None:
        if lease.member not in self._held:
            return
        self._held.discard(lease.member)
        counts = self._counts
        for key in lease.keys:
            left = counts[key] - 1
            if left:
                counts[key] = left
            else:
                del counts[key]


@asynccontextmanager
async def held(leases: Leases, scopes: Sequence[Scope]) -> AsyncIterator[Lease]:
    """Hold a lease in ``scopes`` for the block (raises what :meth:`Leases.acquire`
    raises). Released on the way out, even when cancelled (see :func:`give_back`)."""
    lease = await leases.acquire(scopes)
    try:
        yield lease
    finally:
        await give_back(leases, lease)


async def give_back(leases: Leases, lease: Lease) -> None:
    """Release ``lease``, even when cancelled (shielded, bounded by
    :data:`RELEASE_TIMEOUT`: a store outage is logged, and a shared store's lease then
    expires on its own)."""
    with trio.CancelScope(shield=True), trio.move_on_after(RELEASE_TIMEOUT):
        try:
            await leases.release(lease)
        except StoreUnavailable as error:
            logger.warning("a lease was not given back (it expires on its own): %s", error)
