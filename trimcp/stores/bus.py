"""The notification bus: events one replica raises, heard by every replica.

A server raises events that clients connected elsewhere must hear: a list changed, a
resource was updated, a client's answer to a server request (or its cancel) arrived on the
wrong replica. It publishes each as a small JSON object on its store's bus
(``store.bus``); every replica's subscribers get it once, the publishing replica included
(it handles its own events directly, and drops the copy Redis sends it back).

Two kinds of bus, one interface (:class:`Bus`): :class:`MemoryBus` (one process: the
default, what :class:`~trimcp.stores.MemoryStore` gives) delivers to this process only;
:class:`~trimcp.stores.redis_bus.RedisBus` delivers through Redis pub/sub to every replica
that uses the same Redis database and prefix. Delivery is at most once: an event published
while a replica is cut off from Redis is lost for that replica, which hears a ``gap``
event once it is connected again (its subscribers then assume anything may have changed).

A message is a ``dict`` of JSON values with a ``t`` (its type). Replicas are told apart
by their *tag* (:attr:`Bus.tag`, a small integer): :meth:`Bus.send_nowait` reaches one
replica only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

import trio

logger = logging.getLogger("trimcp.stores.bus")

#: A bus message: JSON values, with its type under ``t``.
BusMessage = dict[str, Any]
#: A subscriber: called once per message, in the bus's task (it must not wait long:
#: each call is bounded by the bus's ``handler_timeout``).
BusHandler = Callable[[BusMessage], Awaitable[None]]

#: Request ids of server-to-client requests start at ``tag << TAG_SHIFT`` on a shared bus,
#: so the replica waiting for an answer is known from the answer's id alone (below 2**53:
#: every JSON number a JavaScript client can hold).
TAG_BITS = 20
TAG_SHIFT = 32


def tag_of_request_id(request_id: object) -> int | None:
    """The tag of the replica that issued a server-to-client request with this id (None:
    not an id a replica on a shared bus issued)."""
    if type(request_id) is not int or request_id < (1 << TAG_SHIFT):
        return None
    tag = request_id >> TAG_SHIFT
    return tag if tag < (1 << TAG_BITS) else None


@runtime_checkable
class ReplicaOutlet(Protocol):
    """A session's transport that knows whether the session is shared between replicas
    (its id in the store) and whether its server-to-client stream is open here."""

    @property
    def shared_session_id(self) -> str | None: ...

    def has_standalone_stream(self) -> bool: ...


@runtime_checkable
class Bus(Protocol):
    """Publish events to every replica; hear the events of every replica."""

    @property
    def shared(self) -> bool:
        """Whether other processes hear what is published (False: this process only)."""
        ...

    @property
    def tag(self) -> int:
        """This replica's tag (0 for a bus that is not shared)."""
        ...

    def subscribe(self, handler: BusHandler) -> Callable[[], None]:
        """Call ``handler`` with every message other replicas publish (and ``gap`` events);
        returns the function that unsubscribes it."""
        ...

    def publish_nowait(self, message: BusMessage) -> None:
        """Queue ``message`` for the other replicas; never waits (a full queue drops it,
        logged). This replica's own subscribers are not called: the publisher handles its
        own events. Safe from any thread."""
        ...

    def send_nowait(self, tag: int, message: BusMessage) -> None:
        """Queue ``message`` for the replica with tag ``tag`` only (as :meth:`publish_nowait`)."""
        ...

    async def send(self, tag: int | None, message: BusMessage) -> int:
        """Send ``message`` to the replica with tag ``tag`` now (``tag`` None: to every
        other replica); returns how many replicas were listening (for every replica, this one
        counts too). Bounded; raises StoreUnavailable, or ValueError for a message over the
        bus's size bound."""
        ...

    async def add_subscription(self, session_id: str, uri: str, limit: int) -> bool:
        """Record, where every replica sees it, that the session subscribes to ``uri``;
        False (and not recorded) when it would hold more than ``limit``. Raises
        StoreUnavailable."""
        ...

    async def remove_subscription(self, session_id: str, uri: str) -> None:
        """Forget that subscription. Raises StoreUnavailable."""
        ...

    async def subscribed(self, session_ids: list[str], uri: str) -> list[bool]:
        """Whether each session subscribes to ``uri`` (one round trip). Raises
        StoreUnavailable."""
        ...

    async def save_session_value(self, session_id: str, name: str, value: str) -> None:
        """Keep a small value of a shared session where every replica sees it (expiring a
        day after it was last set). Raises StoreUnavailable."""
        ...

    async def load_session_value(self, session_id: str, name: str) -> str | None:
        """That value (None: never set, or expired). Raises StoreUnavailable."""
        ...

    async def set_stream_holder(self, session_id: str, ttl: float) -> None:
        """Record that this replica holds the session's GET stream now (for ``ttl``
        seconds). Raises StoreUnavailable."""
        ...

    async def stream_holder(self, session_id: str) -> int | None:
        """The tag of the replica holding the session's GET stream (None: unknown).
        Raises StoreUnavailable."""
        ...

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Carry messages while the server runs. Cancellation: stops."""
        ...


class Subscribers:
    """The handlers of one bus, each call bounded in time and isolated from the others."""

    def __init__(self, handler_timeout: float) -> None:
        self.handler_timeout = handler_timeout
        self._handlers: list[BusHandler] = []

    def add(self, handler: BusHandler) -> Callable[[], None]:
        self._handlers.append(handler)

        def unsubscribe() -> None:
            if handler in self._handlers:
                self._handlers.remove(handler)

        return unsubscribe

    def __bool__(self) -> bool:
        return bool(self._handlers)

    async def deliver(self, message: BusMessage) -> None:
        """Call every handler with ``message``; one that fails or overruns is logged."""
        for handler in list(self._handlers):
            with trio.move_on_after(self.handler_timeout) as scope:
                try:
                    await handler(message)
                except Exception:
                    logger.exception("a bus subscriber failed on a %r event", message.get("t"))
            if scope.cancelled_caught:
                logger.warning(
                    "a bus subscriber took more than %gs over a %r event; cut short",
                    self.handler_timeout,
                    message.get("t"),
                )


class MemoryBus:
    """The bus of one process: nothing to carry, since the publisher handles its own events."""

    def __init__(self, *, handler_timeout: float = 5.0) -> None:
        self._subscribers = Subscribers(handler_timeout)

    @property
    def shared(self) -> bool:
        return False

    @property
    def tag(self) -> int:
        return 0

    def subscribe(self, handler: BusHandler) -> Callable[[], None]:
        return self._subscribers.add(handler)

    def publish_nowait(self, message: BusMessage) -> None:
        return None  # no other replica

    def send_nowait(self, tag: int, message: BusMessage) -> None:
        return None  # tag 0 is this process, whose ids carry no tag: nothing is sent to it

    async def send(self, tag: int | None, message: BusMessage) -> int:
        return 0

    # One process keeps subscriptions with its sessions: nothing to share.

    async def add_subscription(self, session_id: str, uri: str, limit: int) -> bool:
        return True

    async def remove_subscription(self, session_id: str, uri: str) -> None:
        return None

    async def subscribed(self, session_ids: list[str], uri: str) -> list[bool]:
        return [False] * len(session_ids)

    async def save_session_value(self, session_id: str, name: str, value: str) -> None:
        return None

    async def load_session_value(self, session_id: str, name: str) -> str | None:
        return None

    async def set_stream_holder(self, session_id: str, ttl: float) -> None:
        return None

    async def stream_holder(self, session_id: str) -> int | None:
        return None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
