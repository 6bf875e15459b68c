"""State that tools keep across calls: the :class:`UserStateStore` interface, its budget and
its in-memory implementation.

A server keeps two kinds of state for its callers (see docs/state.md): per-user values
(``ctx.user_state``) and the state behind a handle a tool minted (``ctx.handles``). Both
are *entries* of one owner, the caller's principal key (:func:`trimcp.auth.principal_key`):
an entry is named by its *slot* (a string the server layer makes: ``u:<key>`` for a
per-user value, ``h:<id>`` for a handle's state) and holds opaque bytes (the value's JSON)
and a *version*, which changes on every write. A write may name the version it expects
(compare-and-set): it is refused with :class:`VersionMismatch` when the entry has moved
on, and nothing is written.

Bounds (:class:`StateBudget`): the bytes of one entry, of one owner's entries together and
of every entry in the store, each counted as the slot's and the value's bytes; every entry
has a TTL (a write sets it afresh). A write past a byte budget is refused with
:class:`StateFull`, naming the limit; nothing held is ever dropped to make room.

:class:`MemoryUserStateStore` keeps entries in this process (the default); the Redis one
(:mod:`trimcp.stores.redis_state`) is shared by the replicas on one Redis store and keeps
the same promises, each write one atomic step there.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Final, Protocol, runtime_checkable

import attrs
import trio

from trimcp._record import Record

#: The longest slot (a per-user key of up to 256 bytes, with its ``u:`` prefix), in UTF-8
#: bytes.
MAX_SLOT_BYTES: Final = 260


def _at_least_one(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"StateBudget.{attribute.name} must be an integer >= 1, got {value!r}")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class StateBudget(Record):
    """What the state kept for callers may hold (``StateOptions(budget=...)``).

    ``max_value_bytes``: one entry (its key and its value's JSON encoding);
    ``max_user_bytes``: every entry of one principal together (their per-user values and
    the states of the handles minted for them); ``max_total_bytes``: every entry in the
    store. ``ttl``: seconds a per-user value is kept after its last write;
    ``handle_ttl``: seconds a handle stays valid after it was minted (its state is kept
    as long). Keep ``handle_ttl`` at most the sealing keyring's rotation period (24 h
    with keys shared through Redis) so a handle's key is held while it is valid.
    """

    max_value_bytes: int = attrs.field(default=64 * 1024, validator=_at_least_one)
    max_user_bytes: int = attrs.field(default=1024 * 1024, validator=_at_least_one)
    max_total_bytes: int = attrs.field(default=256 * 1024 * 1024, validator=_at_least_one)
    ttl: int = attrs.field(default=30 * 24 * 3600, validator=_at_least_one)
    handle_ttl: int = attrs.field(default=24 * 3600, validator=_at_least_one)

    def __attrs_post_init__(self) -> None:
        if self.max_value_bytes > self.max_user_bytes:
            raise ValueError("StateBudget: max_value_bytes must not exceed max_user_bytes")
        if self.max_user_bytes > self.max_total_bytes:
            raise ValueError("StateBudget: max_user_bytes must not exceed max_total_bytes")


@attrs.frozen(slots=True)
class Entry:
    """An entry as read: its value's bytes and its version."""

    data: bytes
    version: int


class VersionMismatch(Exception):
    """A write named a version the entry no longer has (``current``: the version it has;
    0: it does not exist); nothing was written."""

    def __init__(self, current: int) -> None:
        super().__init__(f"the entry is at version {current}")
        self.current = current


class StateFull(Exception):
    """A :class:`StateBudget` limit refused a write; nothing was written.

    ``limit`` names the budget's field (``"max_user_bytes"``...), ``value`` its value,
    ``size`` the bytes of the refused entry and ``held`` what was already kept where the
    limit applies (0 for ``max_value_bytes``)."""

    def __init__(self, limit: str, value: int, size: int, held: int) -> None:
        super().__init__(f"{limit}: {size} bytes do not fit ({held} of {value} held)")
        self.limit = limit
        self.value = value
        self.size = size
        self.held = held


def entry_bytes(slot: str, data: bytes) -> int:
    """What an entry counts against the budgets: its slot's and its value's bytes."""
    return len(slot.encode("utf-8", "surrogatepass")) + len(data)


def check_slot(owner: str, slot: str) -> None:
    """Raise ValueError for an owner or slot no store can keep (the server layer names
    the key at fault before it gets here)."""
    if not owner or "|" in owner:
        raise ValueError(f"bad state owner {owner!r}: a principal key has no '|'")
    if len(slot.encode("utf-8", "surrogatepass")) > MAX_SLOT_BYTES:
        raise ValueError(f"a state key is at most {MAX_SLOT_BYTES} bytes")


def check_budget(budget: StateBudget, size: int, old: int, mine: int, total: int) -> None:
    """Raise :class:`StateFull` when an entry of ``size`` bytes replacing one of ``old``
    does not fit next to ``mine`` (its owner's bytes) and ``total`` (the store's)."""
    if size > budget.max_value_bytes:
        raise StateFull("max_value_bytes", budget.max_value_bytes, size, 0)
    if size <= old:
        return  # shrinking or the same: always kept
    if mine - old + size > budget.max_user_bytes:
        raise StateFull("max_user_bytes", budget.max_user_bytes, size, mine)
    if total - old + size > budget.max_total_bytes:
        raise StateFull("max_total_bytes", budget.max_total_bytes, size, total)


class UserStateStore(Protocol):
    """Where per-user values and handle states are kept (see the module docstring).

    Every call is bounded in time (the Redis store by its client's timeout) and raises
    :class:`~trimcp.stores.StoreUnavailable` when the store cannot answer.
    """

    @property
    def budget(self) -> StateBudget: ...

    async def get(self, owner: str, slot: str) -> Entry | None:
        """The entry (None: never written, deleted or expired). Cancellation: nothing
        to undo."""
        ...

    async def put(
        self, owner: str, slot: str, data: bytes, *, ttl: float, expected: int | None = None
    ) -> int:
        """Write the entry, kept ``ttl`` seconds from now; returns its new version.

        ``expected``: the version it must have (0: it must not exist; None: any, the
        last writer wins). Raises :class:`VersionMismatch`, :class:`StateFull` (nothing
        written). One atomic step: a write is never seen half done. Cancellation: the
        write happened whole or not at all (a caller that must know which shields it)."""
        ...

    async def delete(self, owner: str, slot: str, *, expected: int | None = None) -> bool:
        """Remove the entry and give its bytes back; False when there was none. Raises
        :class:`VersionMismatch` when ``expected`` is given and differs. Cancellation: as
        :meth:`put`."""
        ...


@runtime_checkable
class KeepsUserState(Protocol):
    """A shared store that keeps user state where every replica reads it (Redis)."""

    def user_state_store(self, *, budget: StateBudget | None = None) -> UserStateStore:
        """A :class:`UserStateStore` in this store, keeping ``budget`` (None: the default)."""
        ...


@attrs.define(slots=True)
class _Held:
    data: bytes
    version: int
    size: int
    expires_at: float


class MemoryUserStateStore:
    """Entries in this process's memory, bounded by ``budget`` and expiring on ``clock``
    (Trio's clock by default, so tests can jump it). An expired entry is dropped before
    anything is counted (a heap of expiries, amortised O(log n) per write)."""

    def __init__(
        self,
        budget: StateBudget | None = None,
        *,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self._budget = budget or StateBudget()
        self._clock = clock
        self._entries: dict[tuple[str, str], _Held] = {}
        self._owner_bytes: dict[str, int] = {}
        self._total = 0
        #: (expiry, owner, slot): stale items (an entry rewritten since) are skipped.
        self._expiries: list[tuple[float, str, str]] = []
        # Versions never repeat in this store, even for an entry deleted and made again:
        # a compare-and-set that read the old entry can never match the new one.
        self._versions = itertools.count(1)

    @property
    def budget(self) -> StateBudget:
        return self._budget

    @property
    def total_bytes(self) -> int:
        """The bytes every live entry counts, together."""
        self._prune()
        return self._total

    def owner_bytes(self, owner: str) -> int:
        """The bytes ``owner``'s live entries count."""
        self._prune()
        return self._owner_bytes.get(owner, 0)

    async def get(self, owner: str, slot: str) -> Entry | None:
        await trio.lowlevel.checkpoint()
        self._prune()
        held = self._entries.get((owner, slot))
        return None if held is None else Entry(held.data, held.version)

    async def put(
        self, owner: str, slot: str, data: bytes, *, ttl: float, expected: int | None = None
    ) -> int:
        check_slot(owner, slot)
        await trio.lowlevel.checkpoint()  # a cancel lands here, before anything changes
        self._prune()
        held = self._entries.get((owner, slot))
        current = 0 if held is None else held.version
        if expected is not None and expected != current:
            raise VersionMismatch(current)
        size = entry_bytes(slot, data)
        old = 0 if held is None else held.size
        check_budget(self._budget, size, old, self._owner_bytes.get(owner, 0), self._total)
        version = next(self._versions)
        expires_at = self._clock() + ttl
        self._entries[(owner, slot)] = _Held(data, version, size, expires_at)
        self._count(owner, size - old)
        heapq.heappush(self._expiries, (expires_at, owner, slot))
        if len(self._expiries) > 2 * len(self._entries) + 64:
            self._compact()
        return version

    async def delete(self, owner: str, slot: str, *, expected: int | None = None) -> bool:
        await trio.lowlevel.checkpoint()
        self._prune()
        held = self._entries.get((owner, slot))
        current = 0 if held is None else held.version
        if expected is not None and expected != current:
            raise VersionMismatch(current)
        if held is None:
            return False
        del self._entries[(owner, slot)]
        self._count(owner, -held.size)
        return True

    def _count(self, owner: str, delta: int) -> None:
        self._total += delta
        mine = self._owner_bytes.get(owner, 0) + delta
        if mine > 0:
            self._owner_bytes[owner] = mine
        else:
            self._owner_bytes.pop(owner, None)

    def _prune(self) -> None:
        now = self._clock()
        expiries = self._expiries
        while expiries and expiries[0][0] <= now:
            expires_at, owner, slot = heapq.heappop(expiries)
            held = self._entries.get((owner, slot))
            if held is not None and held.expires_at == expires_at:
                del self._entries[(owner, slot)]
                self._count(owner, -held.size)

    def _compact(self) -> None:
        # Each write pushes an expiry; rewritten entries leave stale ones behind. Rebuilt
        # from the live entries when stale ones outnumber them, so memory follows the
        # entries kept, not the writes made.
        self._expiries = [(h.expires_at, o, s) for (o, s), h in self._entries.items()]
        heapq.heapify(self._expiries)
