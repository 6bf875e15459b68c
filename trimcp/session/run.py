"""What a session holds only while its tasks run: one :class:`Run` per awake spell.

Every session has a run while it is awake; a resting session (see
:mod:`trimcp.session.resting`) holds the shared, closed :data:`RESTING_RUN` instead, and
waking makes a new one. The engine makes runs and reads their fields; the close sequence
(:mod:`trimcp.session.closing`) closes their queues.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextvars import Context
from typing import Any

import trio

from trimcp.session.options import SessionOptions
from trimcp.session.transport import Outgoing
from trimcp.session.writer import Outbox


class Run:
    """A session's nursery, queues, signals and service scope, for one awake spell.

    ``carry`` hands over the queues of a run that was winding down to rest when the session
    was woken again (they may hold messages queued meanwhile).
    """

    __slots__ = (
        "_handlers_busy",
        "clock",
        "close_requested",
        "context",
        "idle_waiter",
        "notes_recv",
        "notes_send",
        "nursery",
        "outbox",
        "quiet",
        "quiet_until",
        "reader_wakeup",
        "services",
        "services_done",
        "taken_at",
    )

    def __init__(
        self,
        options: SessionOptions,
        outbox: Outbox,
        carry: Run | None = None,
        *,
        handlers_busy: Callable[[], bool] = lambda: False,
    ) -> None:
        self.nursery: trio.Nursery
        self.outbox = outbox
        if carry is None:
            self.notes_send, self.notes_recv = trio.open_memory_channel[tuple[str, Any]](
                options.notification_backlog
            )
        else:
            self.notes_send, self.notes_recv = carry.notes_send, carry.notes_recv
        #: Set (and dropped) when a handler ends or a close is asked for: made by the reader
        #: when it waits for room below max_in_flight, None while nobody waits (an event
        #: per request, set by every handler, cost more than the check).
        self.reader_wakeup: trio.Event | None = None
        #: The event :attr:`handlers_idle` handed out while handlers ran: the engine sets
        #: and drops it when the last one ends (None: nobody waits).
        self.idle_waiter: trio.Event | None = None
        self._handlers_busy = handlers_busy
        self.close_requested = trio.Event()
        # Shielded: a cancel from outside the session (a deadline around the whole
        # ``async with``) must not kill the writer and closer before the close sequence
        # has run (sent our notifications/cancelled, flushed, closed the transport).
        # The closer cancels this scope at its end; open_session does after close_bound.
        self.services = trio.CancelScope(shield=True)
        self.services_done = trio.Event()
        #: When :meth:`Session.receive_now` last took a message (the reader's quiet time
        #: counts from it too).
        self.taken_at = -math.inf
        #: The reader's quiet-time scope while it waits in receive (None otherwise), and
        #: its deadline: receive_now moves the deadline on instead of letting the reader
        #: wake every quiet time only to find that the session was busy.
        self.quiet: trio.CancelScope | None = None
        self.quiet_until = math.inf
        #: The context variables of the session's tasks (set by its reader).
        self.context = Context()
        #: The Trio run's clock, set by the run's reader when it starts (None before):
        #: read directly, it costs two Python calls less than trio.current_time().
        self.clock: trio.abc.Clock | None = None

    @property
    def handlers_idle(self) -> trio.Event:
        """An event set once no handler of the session's runs (set already when none
        does). Made when asked (the close sequence asks), not per request."""
        if not self._handlers_busy():
            return _IDLE
        waiter = self.idle_waiter
        if waiter is None:
            waiter = self.idle_waiter = trio.Event()
        return waiter


#: What :attr:`Run.handlers_idle` hands out when no handler runs (set forever).
_IDLE = trio.Event()
_IDLE.set()


class _Nowhere:
    """The transport of the resting run's outbox, which is closed: nothing reaches it."""

    async def receive(self) -> bytes:
        raise trio.ClosedResourceError

    async def send(self, messages: list[Outgoing]) -> None:
        raise trio.ClosedResourceError

    async def aclose(self) -> None:
        pass


#: The run of every resting session: closed queues, so a send that forgot to wake first
#: fails loudly instead of queueing where nobody reads.
RESTING_RUN = Run(
    SessionOptions(notification_backlog=1),
    Outbox(_Nowhere(), 1, on_peer_gone=lambda _unwritten: None),
)
RESTING_RUN.outbox.send_end.close()
RESTING_RUN.notes_send.close()
