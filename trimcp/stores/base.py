"""What a server keeps where a second process could find it, behind one small interface.

A *store* gives each session its resumability event store (and, as replicas need them,
the other shared state). :class:`MemoryStore` keeps everything in this process (the
default: nothing to run, nothing to configure); :class:`~trimcp.stores.RedisStore` keeps
it in Redis so replicas behind a load balancer share it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import trio

from trimcp.stores.bus import Bus, MemoryBus

if TYPE_CHECKING:  # the HTTP server imports this module: no cycle at run time
    from trimcp.stores.events import EventStore
    from trimcp.stores.request_state import RequestStateKeyring


class StoreUnavailable(Exception):
    """The shared store could not be reached, or did not answer in time.

    The message names the store's address and the cause; the caller's operation did not
    happen (or its outcome is unknown, for a write cut mid-way). ``reported``: the store
    has already logged this outage (once, as it began), so a caller says what it cost only
    at debug level (:func:`log_unavailable`): an outage is one line, not one per call.
    """

    def __init__(self, message: str, *, reported: bool = False) -> None:
        super().__init__(message)
        self.reported = reported


def log_unavailable(
    logger: logging.Logger, level: int, error: StoreUnavailable, message: str, *args: object
) -> None:
    """Log what an outage cost (``message % args``, then ``": "`` and the error) at
    ``level``, or at debug level when the store already reported the outage."""
    logger.log(logging.DEBUG if error.reported else level, message + ": %s", *args, error)


class Store(Protocol):
    """Where the HTTP server keeps state that must outlive a request.

    ``shared``: whether other processes see what it keeps (then the server looks sessions
    it does not hold up in it). Session records are opaque bytes with an expiry.
    """

    @property
    def shared(self) -> bool: ...

    def problem(self) -> str | None:
        """Why the store cannot serve, naming it, as last seen (None: it served the last
        call). Answers from memory, never by asking the store: ``/healthz`` reads it."""
        ...

    @property
    def bus(self) -> Bus:
        """The notification bus of the replicas sharing this store (see
        :mod:`trimcp.stores.bus`); :meth:`run` carries its messages."""
        ...

    def event_store(self, session_id: str) -> EventStore:
        """The resumability event store of one session (called once per session)."""
        ...

    async def request_state_keyring(self, *, rotate_every: float) -> RequestStateKeyring | None:
        """The ``requestState`` keyring the replicas share (None: each process keeps its
        own). Raises StoreUnavailable."""
        ...

    async def save_session(self, session_id: str, record: bytes, ttl: float) -> None:
        """Keep a session's record for ``ttl`` seconds. Raises StoreUnavailable."""
        ...

    async def load_session(self, session_id: str, ttl: float) -> bytes | None:
        """A session's record (None: unknown or expired), its expiry pushed to ``ttl``
        seconds from now. Raises StoreUnavailable."""
        ...

    async def drop_session(self, session_id: str, ttl: float) -> None:
        """The session was ended: drop its events, and keep an empty record for ``ttl``
        seconds (replicas holding it end it when they see that). Raises StoreUnavailable."""
        ...

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The store's own background work (e.g. saying this replica is alive), while the
        server runs. Cancellation: stops it."""
        ...

    async def aclose(self) -> None:
        """Release the store's connections. Cancellation: stops waiting, leaks nothing."""
        ...


@runtime_checkable
class SharesTasks(Protocol):
    """A store that keeps task records where every replica reads them (Redis)."""

    def task_store(self, *, budget: Any = None) -> Any:
        """A :class:`~trimcp.server.tasks.TaskStore` in this store, keeping ``budget`` (a
        :class:`~trimcp.tasks.store.TaskBudget`; None: the default one)."""
        ...


class MemoryStore:
    """Everything in this process's memory: the default, for one process."""

    def __init__(self, *, max_events: int = 512, max_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._bus = MemoryBus()

    @property
    def bus(self) -> Bus:
        return self._bus

    async def request_state_keyring(self, *, rotate_every: float) -> RequestStateKeyring | None:
        return None  # one process: the server's own keyring serves

    @property
    def shared(self) -> bool:
        return False

    def problem(self) -> str | None:
        return None  # this process's memory

    def event_store(self, session_id: str) -> EventStore:
        from trimcp.stores.events import InMemoryEventStore

        return InMemoryEventStore(max_events=self.max_events, max_bytes=self.max_bytes)

    # Sessions live in the server's own memory: nothing to keep here.

    async def save_session(self, session_id: str, record: bytes, ttl: float) -> None:
        return None

    async def load_session(self, session_id: str, ttl: float) -> bytes | None:
        return None

    async def drop_session(self, session_id: str, ttl: float) -> None:
        return None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def aclose(self) -> None:
        return None
