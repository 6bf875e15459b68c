"""The Redis-backed store: replicas behind a load balancer share what they need."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import attrs
import trio

from trimcp.session.options import DEFAULT_IDLE_TIMEOUT
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.event_ids import new_replica_id

if TYPE_CHECKING:
    from trimcp.stores.events import EventStore
    from trimcp.stores.redis_bus import RedisBus
    from trimcp.stores.redis_client import RedisAddress, RedisClient
    from trimcp.stores.redis_follow import ReplicaState, StreamWatcher
    from trimcp.stores.redis_leases import RedisLeases
    from trimcp.stores.redis_state import RedisUserStateStore
    from trimcp.stores.replay import RedisReplayCache
    from trimcp.stores.request_state import RequestStateKeyring
    from trimcp.stores.user_state import StateBudget
    from trimcp.tasks.store import TaskBudget

logger = logging.getLogger("trimcp.stores.redis")

DEFAULT_PREFIX = "trimcp:"
#: How often a replica says it is alive, and how long that lasts.
HEARTBEAT_EVERY = 1.0
HEARTBEAT_TTL = 3.0
#: How late a heartbeat may be before the replica counts as one that missed it.
HEARTBEAT_LATE = 0.5
#: How long a replica that shut down stays known as shut down (then it is just gone).
STOPPED_TTL = 600.0
_ALIVE = b"1"
_STOPPED = b"stopped"


class RedisStore:
    """State shared through one Redis database (``redis://host:port/db``).

    ``prefix`` starts every key (give each application its own); ``timeout`` bounds every
    call (see :class:`~trimcp.stores.redis_client.RedisClient`); ``event_ttl`` is how long
    a session's events stay after its last event (by default the sessions' idle timeout,
    so they do not outlive a session: keep it no longer than ``idle_timeout``);
    ``max_events`` and ``max_event_bytes`` bound each session's event log (events, and
    bytes of their messages and stream names; the oldest are trimmed as each is added).

    Each process using it is one *replica* with a random id; while :meth:`run` runs it
    says every second that it is alive, so other replicas can tell when the one that ran a
    request has died (a client resuming that request's stream then gets a clear end
    instead of waiting for ever).

    Needs the ``redis`` extra (``pip install 'trimcp[redis]'``, which brings hiredis).
    Opens connections on first use; close it with :meth:`aclose`.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = 2.0,
        max_connections: int = 32,
        event_ttl: float = DEFAULT_IDLE_TIMEOUT,
        max_events: int = 512,
        max_event_bytes: int = 4 * 1024 * 1024,
    ) -> None:
        try:
            from trimcp.stores.redis_client import RedisAddress, RedisClient
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                f"RedisStore needs hiredis ({error}): pip install 'trimcp[redis]'"
            ) from error
        self.address: RedisAddress = RedisAddress.from_url(url)
        self.client: RedisClient = RedisClient(
            self.address, timeout=timeout, max_connections=max_connections
        )
        self.prefix = prefix
        self.event_ttl = event_ttl
        self.max_events = max_events
        self.max_event_bytes = max_event_bytes
        #: This process's id among the replicas (see :mod:`trimcp.stores.event_ids`).
        self.replica = new_replica_id()
        self._bus: RedisBus | None = None
        self._watcher: StreamWatcher | None = None
        self._leases: RedisLeases | None = None

    @property
    def bus(self) -> RedisBus:
        """The notification bus through this Redis (made on first use; :meth:`run` runs it)."""
        if self._bus is None:
            from trimcp.stores.redis_bus import RedisBus

            self._bus = RedisBus(self.client, self.prefix, self.replica)
        return self._bus

    @property
    def watcher(self) -> StreamWatcher:
        """The one reader of the streams this replica follows (see
        :mod:`trimcp.stores.redis_follow`; made on first use, :meth:`run` runs it)."""
        if self._watcher is None:
            from trimcp.stores.redis_follow import StreamWatcher

            self._watcher = StreamWatcher(self.client, self.replica_states, count=self.max_events)
        return self._watcher

    def leases(self) -> RedisLeases:
        """The budgets of open things every replica counts in (see
        :mod:`trimcp.stores.redis_leases`; :meth:`run` renews what this replica holds)."""
        if self._leases is None:
            from trimcp.stores.redis_leases import RedisLeases

            self._leases = RedisLeases(self.client, self.prefix, self.replica)
        return self._leases

    async def request_state_keyring(self, *, rotate_every: float) -> RequestStateKeyring:
        """The ``requestState`` keyring every replica using this store shares (see
        :mod:`trimcp.stores.keyring`). Raises StoreUnavailable."""
        from trimcp.stores.keyring import load_shared_keyring

        return await load_shared_keyring(
            self.client, self.key("rs-keys"), rotate_every=rotate_every
        )

    @property
    def shared(self) -> bool:
        return True

    def problem(self) -> str | None:
        """Why this store cannot serve, as the last call found (None: it answered). While
        :meth:`run` runs, a call is made every ``HEARTBEAT_EVERY`` seconds, so this is at
        most that plus ``timeout`` seconds out of date."""
        cause = self.client.outage
        return None if cause is None else f"the store at {self.address} is unavailable ({cause})"

    def replay_cache(self) -> RedisReplayCache:
        """The DPoP proofs every replica has accepted (see :mod:`trimcp.stores.replay`)."""
        from trimcp.stores.replay import RedisReplayCache

        return RedisReplayCache(self.client, self.key("dpop", ""))

    def key(self, *parts: str) -> str:
        """A key in this store's namespace."""
        return self.prefix + ":".join(parts)

    def event_store(self, session_id: str) -> EventStore:
        from trimcp.stores.redis_events import RedisEventStore

        return RedisEventStore(
            self.client,
            self.key("ev", session_id),
            max_events=self.max_events,
            max_bytes=self.max_event_bytes,
            ttl=self.event_ttl,
            replica=self.replica,
            alive=self.replica_alive,
            gone=self.replica_gone,
            watcher=self.watcher,
        )

    def task_store(self, *, budget: TaskBudget | None = None, max_ttl: float = 24 * 3600.0) -> Any:
        """A task store in this Redis (a :class:`~trimcp.stores.redis_tasks.RedisTaskStore`).
        ``serve_http(server, store=...)`` gives a :class:`~trimcp.Server` one while it serves
        (unless it was made with its own ``task_store``). Tasks are readable from any replica;
        a task whose replica died is failed when next read. This store's :meth:`run` must
        run (``serve_http(store=...)`` runs it) so others see this replica alive.
        ``budget``: the tasks it keeps per owner and in total (a served
        :class:`~trimcp.Server` passes its ``TaskOptions.budget``)."""
        from trimcp.stores.redis_tasks import RedisTaskStore

        return RedisTaskStore(
            self.client,
            self.prefix,
            replica=self.replica,
            alive=self.replica_alive,
            budget=budget,
            max_ttl=max_ttl,
        )

    def user_state_store(self, *, budget: StateBudget | None = None) -> RedisUserStateStore:
        """Per-user values and handle states in this Redis (a
        :class:`~trimcp.stores.redis_state.RedisUserStateStore`), read and written by every
        replica. ``serve_http(server, store=...)`` gives a :class:`~trimcp.Server` one
        while it serves, keeping its ``StateOptions.budget``."""
        from trimcp.stores.redis_state import RedisUserStateStore

        return RedisUserStateStore(self.client, self.prefix, budget)

    # --- sessions -------------------------------------------------------------------------

    async def save_session(self, session_id: str, record: bytes, ttl: float) -> None:
        keys = session_keys(self.prefix, session_id)
        ms = _ms(ttl)
        await self.client.pipeline(
            [
                ("SET", keys.record, record, "PX", ms),
                *[("PEXPIRE", key, ms) for key in keys.kept_with_record],
            ]
        )

    async def load_session(self, session_id: str, ttl: float) -> bytes | None:
        # What the bus keeps of the session expires with its record (see session_keys):
        # pushed out together, in the same round trip.
        keys = session_keys(self.prefix, session_id)
        ms = _ms(ttl)
        record, *_ = await self.client.pipeline(
            [
                ("GET", keys.record),
                ("PEXPIRE", keys.record, ms),
                *[("PEXPIRE", key, ms) for key in keys.kept_with_record],
            ]
        )
        return record if isinstance(record, bytes) else None

    async def drop_session(self, session_id: str, ttl: float) -> None:
        from trimcp.stores.redis_events import event_keys

        keys = session_keys(self.prefix, session_id)
        await self.client.pipeline(
            [
                ("SET", keys.record, b"", "PX", _ms(ttl)),
                ("DEL", *keys.kept_with_record, *event_keys(self.key("ev", session_id))),
            ]
        )

    # --- replicas -------------------------------------------------------------------------

    async def replica_alive(self, replica: str) -> bool:
        """Whether the replica with this id said it was alive within the last
        ``HEARTBEAT_TTL`` seconds. Raises StoreUnavailable."""
        return await self.replica_gone(replica) is None

    async def replica_gone(self, replica: str) -> str | None:
        """Why the replica with this id runs no more, in words for a client ("it shut
        down", or it stopped saying it is alive); None while it is alive. Raises
        StoreUnavailable."""
        if replica == self.replica:
            return None
        return _gone(await self.client.execute("GET", self.key("replica", replica)))

    async def replica_beating(self, replica: str) -> bool:
        """Whether the replica with this id said it was alive within the last
        ``HEARTBEAT_EVERY + HEARTBEAT_LATE`` seconds: one that missed a heartbeat may have
        died (it counts as gone only once its heartbeat lapses). Raises StoreUnavailable."""
        return (await self.replica_states([replica]))[replica].beating

    async def replica_states(self, replicas: Sequence[str]) -> dict[str, ReplicaState]:
        """:meth:`replica_gone` and :meth:`replica_beating` of each replica, in one round
        trip. Raises StoreUnavailable."""
        from trimcp.stores.redis_follow import ReplicaState

        others = [replica for replica in replicas if replica != self.replica]
        commands: list[tuple[str, str]] = []
        for replica in others:
            key = self.key("replica", replica)
            commands += [("GET", key), ("PTTL", key)]
        replies = await self.client.pipeline(commands) if commands else []
        fresh = _ms(HEARTBEAT_TTL - HEARTBEAT_EVERY - HEARTBEAT_LATE)
        states = {self.replica: ReplicaState(gone=None, beating=True)}
        for n, replica in enumerate(others):
            state, left = replies[2 * n], replies[2 * n + 1]
            beating = state == _ALIVE and isinstance(left, int) and left >= fresh
            states[replica] = ReplicaState(gone=_gone(state), beating=beating)
        return {replica: states[replica] for replica in replicas}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Say this replica is alive every ``HEARTBEAT_EVERY`` seconds, carry the bus's
        messages, read the streams this replica follows and renew the leases it holds,
        until cancelled.

        A Redis outage is logged (once) and retried; it never stops the server.
        """
        async with trio.open_nursery() as nursery:
            await nursery.start(self.bus.run)
            await nursery.start(self.watcher.run)
            await nursery.start(self.leases().run)
            await self._beat(task_status=task_status)

    async def _beat(self, *, task_status: trio.TaskStatus[None]) -> None:
        key = self.key("replica", self.replica)
        task_status.started()
        try:
            while True:
                with suppress(StoreUnavailable):  # the client logged it; the next beat retries
                    await self.client.execute("SET", key, _ALIVE, "PX", _ms(HEARTBEAT_TTL))
                await trio.sleep(HEARTBEAT_EVERY)
        finally:
            with (
                trio.CancelScope(shield=True),
                trio.move_on_after(self.client.timeout),
                suppress(StoreUnavailable),
            ):
                # Stopped: not alive any more, and saying so tells clients why.
                await self.client.execute("SET", key, _STOPPED, "PX", _ms(STOPPED_TTL))

    async def aclose(self) -> None:
        await self.client.aclose()

    def __repr__(self) -> str:
        return f"RedisStore({str(self.address)!r}, prefix={self.prefix!r})"


@attrs.frozen(slots=True)
class SessionKeys:
    """The keys of one shared session: its record (see
    :meth:`~trimcp.stores.RedisStore.save_session`) and what the bus keeps of it. These
    expire with the record: set to its expiry when written, and pushed out with it on
    every request (:meth:`~trimcp.stores.RedisStore.load_session`); ending the session
    deletes them all."""

    record: str
    subscriptions: str
    values: str
    holder: str

    @property
    def kept_with_record(self) -> tuple[str, str, str]:
        return (self.subscriptions, self.values, self.holder)


def session_keys(prefix: str, session_id: str) -> SessionKeys:
    """The keys of session ``session_id`` under ``prefix``."""
    return SessionKeys(
        record=f"{prefix}session:{session_id}",
        subscriptions=f"{prefix}subs:{session_id}",
        values=f"{prefix}sv:{session_id}",
        holder=f"{prefix}get:{session_id}",
    )


def _gone(state: object) -> str | None:
    """Why a replica whose key holds ``state`` runs no more (None: alive)."""
    if state == _ALIVE:
        return None
    if state == _STOPPED:
        return "it shut down"
    return (
        f"it has not said it is alive for {HEARTBEAT_TTL:g} s: killed, crashed, "
        "or cut off from Redis"
    )


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))
