"""One reader per replica for every stream it follows (a call resumed here that runs on
another replica, see :meth:`~trimcp.stores.redis_events.RedisEventStore.follow`).

:class:`StreamWatcher` reads the event logs of all the sessions followed here on one
connection of its own (``XREAD BLOCK`` over all of their keys, at most
:data:`FOLLOW_CHECK` seconds at a time) and hands each follower (:class:`Watch`) the new
entries of its session's log. Every :data:`FOLLOW_CHECK` seconds it asks after the
replicas running the followed streams, all of them in one pipeline on the store's pool,
and tells each follower what it learnt. However many follows there are, they cost one
connection and a few pooled calls: never a connection each. The connection is opened
when the first follow starts and closed when the last ends; when it fails, every follower
is told (its client resumes again) and the next follow opens a new one.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import attrs
import hiredis
import trio

from trimcp.stores.base import StoreUnavailable
from trimcp.stores.redis_client import (
    Connection,
    RedisClient,
    RedisReplyError,
    close_connection,
    pack,
)

logger = logging.getLogger("trimcp.stores.events")

#: How often the replicas running followed streams are asked after (and the longest
#: ``XREAD BLOCK``, so a new follow's key is read within this).
FOLLOW_CHECK = 0.25

_FAILED = (
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    RedisReplyError,
    hiredis.ProtocolError,
)


@attrs.frozen(kw_only=True, slots=True)
class ReplicaState:
    """What the store says of a replica: why it runs no more (None: alive), and whether
    its heartbeat is on time."""

    gone: str | None
    beating: bool


#: The states of the given replicas, in one round trip. Raises StoreUnavailable.
ReplicaStates = Callable[[Sequence[str]], Awaitable[dict[str, ReplicaState]]]


class Watch:
    """One follower's view of its session's log (made by :meth:`StreamWatcher.watch`)."""

    __slots__ = ("_entries", "_wakeup", "checks", "cursor", "failed", "key", "owner", "state")

    def __init__(self, key: str, owner: str, cursor: str) -> None:
        self.key = key
        self.owner = owner
        #: The newest entry id handed over (entries up to it are never handed again).
        self.cursor = cursor
        self._entries: list[list[object]] = []
        self._wakeup = trio.Event()
        #: What the last check said of ``owner`` (None: not asked yet), and how many
        #: checks there were.
        self.state: ReplicaState | None = None
        self.checks = 0
        #: Why the reader stopped (the follow ends: its client resumes again).
        self.failed: StoreUnavailable | None = None

    def take(self, entries: Sequence[list[object]]) -> None:
        """Hand over ``entries`` (``XRANGE``/``XREAD`` entries of the key, oldest first);
        those up to :attr:`cursor` are left out."""
        cursor = _entry_key(self.cursor)
        fresh = [entry for entry in entries if _entry_key(_id_of(entry)) > cursor]
        if fresh:
            self._entries.extend(fresh)
            self.cursor = _id_of(fresh[-1])
            self._wakeup.set()

    def entries(self) -> list[list[object]]:
        """The entries handed over since last asked."""
        taken, self._entries = self._entries, []
        return taken

    def checked(self, state: ReplicaState) -> None:
        self.state = state
        self.checks += 1
        self._wakeup.set()

    def fail(self, error: StoreUnavailable) -> None:
        self.failed = error
        self._wakeup.set()

    async def wait(self) -> None:
        """Wait for entries, a check or a failure. Cancellation: safe."""
        if not self._entries and self.failed is None:
            await self._wakeup.wait()
        self._wakeup = trio.Event()


class StreamWatcher:
    """The reader of one replica's follows (see the module docstring); :meth:`run` must
    run (a :class:`~trimcp.stores.RedisStore`'s ``run`` runs its own)."""

    def __init__(self, client: RedisClient, states: ReplicaStates, *, count: int = 512) -> None:
        self._client = client
        self._states = states
        self._count = count
        #: Log key -> its watches; and the newest entry id read of it.
        self._watches: dict[str, set[Watch]] = {}
        self._cursors: dict[str, str] = {}
        self._changed = trio.Event()

    @property
    def follows(self) -> int:
        """How many follows are under way here."""
        return sum(len(watches) for watches in self._watches.values())

    @asynccontextmanager
    async def watch(self, key: str, owner: str, cursor: str) -> AsyncIterator[Watch]:
        """Watch log ``key`` for entries after ``cursor`` while the block runs (a stream
        of replica ``owner``). Entries already stored are not read here: the caller
        reads them after entering (entries it gets twice are left out)."""
        watch = Watch(key, owner, cursor)
        watches = self._watches.setdefault(key, set())
        if not watches:
            self._cursors[key] = cursor
        watches.add(watch)
        self._changed.set()
        try:
            yield watch
        finally:
            watches.discard(watch)
            if not watches:
                del self._watches[key]
                del self._cursors[key]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read for the follows under way, until cancelled. Cancellation: the connection
        is closed."""
        task_status.started()
        while True:
            if not self._watches:
                self._changed = trio.Event()
                await self._changed.wait()
                continue
            try:
                await self._serve()
            except StoreUnavailable as error:
                for watches in list(self._watches.values()):
                    for watch in watches:
                        watch.fail(error)
                await trio.sleep(FOLLOW_CHECK)  # (followers end: no retry storm)

    async def _serve(self) -> None:
        """Read on one connection while there are follows; raises StoreUnavailable."""
        client = self._client
        try:
            connection = await client.connect()
        except (*_FAILED, trio.TooSlowError) as error:
            raise StoreUnavailable(
                f"cannot read followed streams in {client.address}: {error}"
            ) from None
        try:
            check_at = trio.current_time()
            while self._watches:
                if trio.current_time() >= check_at:
                    check_at = trio.current_time() + FOLLOW_CHECK
                    await self._check()
                await self._read(connection, check_at)
        finally:
            await close_connection(connection)

    async def _read(self, connection: Connection, until: float) -> None:
        keys = list(self._watches)
        block_ms = max(1, int((until - trio.current_time()) * 1000))  # BLOCK 0: for ever
        command: tuple[str | int, ...] = (
            "XREAD",
            "COUNT",
            self._count,
            "BLOCK",
            block_ms,
            "STREAMS",
            *keys,
            *[self._cursors[key] for key in keys],
        )
        with trio.move_on_after(FOLLOW_CHECK + self._client.timeout) as bound:
            try:
                (reply,) = await connection.roundtrip(pack(command), 1)
            except _FAILED as error:
                raise StoreUnavailable(f"reading followed streams: {error}") from None
        if bound.cancelled_caught:
            address = self._client.address
            raise StoreUnavailable(f"reading followed streams: no answer from {address}")
        if not isinstance(reply, list):
            return  # nothing new within the block
        for raw_key, entries in reply:
            key = raw_key.decode()
            watches = self._watches.get(key)
            if watches is None or not entries:
                continue  # (no follower left)
            self._cursors[key] = _id_of(entries[-1])
            for watch in watches:
                watch.take(entries)

    async def _check(self) -> None:
        owners = sorted({watch.owner for ws in self._watches.values() for watch in ws})
        states = await self._states(owners)
        for watches in list(self._watches.values()):
            for watch in watches:
                state = states.get(watch.owner)
                if state is not None:
                    watch.checked(state)


def _id_of(entry: list[object]) -> str:
    raw = entry[0]
    return raw.decode("ascii") if isinstance(raw, bytes) else str(raw)


def _entry_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)
