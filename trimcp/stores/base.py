"""What a server keeps where a second process could find it, behind one small interface.

A *store* gives each session its resumability event store (and, as replicas need them,
the other shared state). :class:`MemoryStore` keeps everything in this process (the
default: nothing to run, nothing to configure); :class:`~trimcp.stores.RedisStore` keeps
it in Redis so replicas behind a load balancer share it.
"""

from __future__ import annotations

from typing import Protocol

from trimcp.transports.http_server.event_store import EventStore, InMemoryEventStore


class StoreUnavailable(Exception):
    """The shared store could not be reached, or did not answer in time.

    The message names the store's address and the cause; the caller's operation did not
    happen (or its outcome is unknown, for a write cut mid-way).
    """


class Store(Protocol):
    """Where the HTTP server keeps state that must outlive a request."""

    def event_store(self, session_id: str) -> EventStore:
        """The resumability event store of one session (called once per session)."""
        ...

    async def aclose(self) -> None:
        """Release the store's connections. Cancellation: stops waiting, leaks nothing."""
        ...


class MemoryStore:
    """Everything in this process's memory: the default, for one process."""

    def __init__(self, *, max_events: int = 512, max_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes

    def event_store(self, session_id: str) -> EventStore:
        return InMemoryEventStore(max_events=self.max_events, max_bytes=self.max_bytes)

    async def aclose(self) -> None:
        return None
