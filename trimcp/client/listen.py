"""``subscriptions/listen`` (2026-07-28): a long-lived request whose answer stream carries
the change notifications the client opted in to.

:meth:`trimcp.client.Client.listen` opens one; this module holds the pieces: the
:class:`Subscription` a caller iterates, and the routing of notifications to it by the
``io.modelcontextprotocol/subscriptionId`` in their ``_meta`` (the JSON-RPC id of the
listen request). The id is not known before the server's acknowledgement arrives, so
listen requests start one at a time: an acknowledgement for an unknown id belongs to the
one starting.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp._record import Record
from trimcp.client.stateless import META_SUBSCRIPTION_ID
from trimcp.errors import CONNECTION_CLOSED, REQUEST_TIMEOUT, LocalError, McpError
from trimcp.types import (
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
)

logger = logging.getLogger("trimcp.client")

#: Notifications a subscription holds for a slow reader; past it the oldest are dropped.
DEFAULT_MAX_BUFFERED = 256
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ListenEvent(Record):
    """One change notification from a subscription: its ``method`` (e.g.
    ``notifications/tools/list_changed``), the resource ``uri`` for
    ``notifications/resources/updated`` (else None), and the typed ``params``."""

    method: str
    uri: str | None
    params: Any


class SubscriptionLost(LocalError):
    """The listen stream ended without the server's closing answer (a dropped connection,
    a server that went away). Code ``-32000``; listen again to resubscribe (and refetch
    what may have changed meanwhile: nothing is replayed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(CONNECTION_CLOSED, f"The subscription was lost: {reason}")


class ListenNotAcknowledged(LocalError, trio.TooSlowError):
    """The server sent no ``notifications/subscriptions/acknowledged`` for a
    ``subscriptions/listen`` within ``ack_timeout``; the request was cancelled. Code
    ``-32001``; also a ``trio.TooSlowError`` (what this wait raised before it had a name).
    ``data`` holds the server and the seconds waited."""

    def __init__(self, server: str, waited: float) -> None:
        super().__init__(
            REQUEST_TIMEOUT,
            f"The server {server} did not acknowledge subscriptions/listen within "
            f"{waited:g}s; the request was cancelled. A server that serves listen "
            "acknowledges it at once: check that it supports 2026-07-28 subscriptions, or "
            "pass a larger ack_timeout to listen() if it is only slow.",
            {"server": server, "waited": waited},
        )


class Subscription:
    """An open ``subscriptions/listen``: iterate it for :class:`ListenEvent` values.

    ``acknowledged`` is the filter the server agreed to honour (kinds it does not support
    are absent: compare with what you asked). Iteration ends when the server closes the
    subscription gracefully, raises :class:`SubscriptionLost` when the stream drops.
    Events wait in a buffer of ``max_buffered``; a reader that falls further behind loses
    the oldest (``dropped`` counts them). Cancellation: cancelling the iteration only
    stops the waiting; leaving the ``async with`` of :meth:`Client.listen` ends the
    subscription on the wire.
    """

    def __init__(self, max_buffered: int) -> None:
        self.id: int | str | None = None
        self.acknowledged: SubscriptionFilter | None = None
        #: Events dropped because the reader fell behind.
        self.dropped = 0
        self._events: collections.deque[ListenEvent] = collections.deque()
        self._max = max_buffered
        self._changed = trio.Event()
        self._ended = False
        self._error: McpError | None = None
        self.started = trio.Event()

    # --- fed by the client ----------------------------------------------------------------

    def acknowledge(self, subscription_id: int | str, params: Any) -> None:
        self.id = subscription_id
        if isinstance(params, SubscriptionsAcknowledgedNotificationParams):
            self.acknowledged = params.notifications
        self.started.set()

    def push(self, event: ListenEvent) -> None:
        if self._ended:
            return
        if len(self._events) >= self._max:
            self._events.popleft()
            self.dropped += 1
        self._events.append(event)
        self._wake()

    def end(self, error: McpError | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        self._error = error
        self.started.set()
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    @property
    def failure(self) -> McpError | None:
        """Why the subscription ended abnormally (None while open or after a clean end)."""
        return self._error

    # --- read by the application --------------------------------------------------------------

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> ListenEvent:
        while not self._events:
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            await self._changed.wait()
        return self._events.popleft()


def subscription_id_of(params: Any) -> int | str | None:
    """The ``subscriptionId`` in a notification's ``_meta``, if it has one."""
    meta = getattr(params, "meta", None)
    if not isinstance(meta, dict):
        return None
    value = meta.get(META_SUBSCRIPTION_ID)
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


class ListenRouter:
    """Routes notifications to the subscriptions they belong to (no I/O)."""

    def __init__(self) -> None:
        self.active: dict[int | str, Subscription] = {}
        #: The subscription whose acknowledgement is awaited (one at a time).
        self.starting: Subscription | None = None

    def route(self, method: str, params: Any) -> None:
        subscription_id = subscription_id_of(params)
        if subscription_id is None:
            return
        if method == ACKNOWLEDGED:
            starting = self.starting
            if subscription_id not in self.active and starting is not None:
                self.starting = None
                starting.acknowledge(subscription_id, params)
                self.active[subscription_id] = starting
            return
        subscription = self.active.get(subscription_id)
        if subscription is None:
            logger.debug("a %s for unknown subscription %r", method, subscription_id)
            return
        uri = getattr(params, "uri", None)
        subscription.push(ListenEvent(method=method, uri=uri, params=params))

    def forget(self, subscription: Subscription) -> None:
        if subscription.id is not None:
            self.active.pop(subscription.id, None)
        if self.starting is subscription:
            self.starting = None


@asynccontextmanager
async def open_subscription(
    send: Callable[[SubscriptionsListenRequestParams], Awaitable[Any]],
    router: ListenRouter,
    start_lock: trio.Lock,
    wanted: SubscriptionFilter,
    *,
    max_buffered: int,
    ack_timeout: float,
    server: str,
) -> AsyncIterator[Subscription]:
    """Send ``subscriptions/listen`` for ``wanted`` (through ``send``) and yield the open
    :class:`Subscription` once the server acknowledged it (within ``ack_timeout``).

    Leaving the block cancels the request: on stdio that sends ``notifications/cancelled``,
    on Streamable HTTP it closes the stream. Raises the server's :class:`McpError` when it
    refuses, :class:`SubscriptionLost` when the stream ends before the acknowledgement,
    :class:`ListenNotAcknowledged` (naming ``server``) past ``ack_timeout``, after
    cancelling the request.
    """
    subscription = Subscription(max_buffered)

    async def run() -> None:
        try:
            await send(SubscriptionsListenRequestParams(notifications=wanted))
        except McpError as exc:
            subscription.end(
                exc if exc.code != CONNECTION_CLOSED else SubscriptionLost(exc.message)
            )
        else:
            subscription.end()  # the server closed it gracefully
        finally:
            router.forget(subscription)

    async with open_nursery_unwrapped() as nursery:
        async with start_lock:
            router.starting = subscription
            nursery.start_soon(run)
            try:
                with trio.move_on_after(ack_timeout) as waiting:
                    await subscription.started.wait()
            finally:
                if router.starting is subscription:
                    router.starting = None
        if waiting.cancelled_caught:
            nursery.cancel_scope.cancel()
            raise ListenNotAcknowledged(server, ack_timeout)
        if subscription.id is None and subscription.failure is not None:
            nursery.cancel_scope.cancel()
            raise subscription.failure
        try:
            yield subscription
        finally:
            nursery.cancel_scope.cancel()
