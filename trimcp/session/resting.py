"""Resting: a session whose tasks end while it is idle, keeping only its state.

A session made by :func:`~trimcp.session.engine.resting_session` goes through
:class:`Phase` AWAKE -> WINDING_DOWN -> RESTING and back. Only the reader decides to rest
(:func:`begin_rest`: it is the one task that knows it holds no message half-handled);
:func:`run_awake` then lets the tasks end and either rests (:func:`rest`: the session drops
its :class:`Run`) or, woken meanwhile, runs again with the same queues. :func:`wake` makes a
new run and asks the owner to run :func:`run_awake` again.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp.session.hooks import ImmediateTransport, RestingHandler, RestingTransport
from trimcp.session.options import SessionOptions
from trimcp.session.transport import Outgoing
from trimcp.session.writer import Outbox

if TYPE_CHECKING:
    from trimcp.session.engine import Session


class Phase(enum.IntEnum):
    """A session's phases (AWAKE is 0, so ``if self._phase:`` means "not awake")."""

    AWAKE = 0  # running its tasks
    WINDING_DOWN = 1  # letting them end, to rest
    RESTING = 2  # no tasks, only state


AWAKE, WINDING_DOWN, RESTING = Phase.AWAKE, Phase.WINDING_DOWN, Phase.RESTING


class Run:
    """What a session holds only while awake: its nursery, queues, signals, service scope.

    A resting session drops it; waking makes a new one (:func:`new_run`). ``carry`` hands
    over the queues of a run that was winding down to rest when the session was woken
    again (they may hold messages queued meanwhile).
    """

    __slots__ = (
        "close_requested",
        "handlers_idle",
        "notes_recv",
        "notes_send",
        "nursery",
        "outbox",
        "reader_wakeup",
        "services",
        "services_done",
    )

    def __init__(self, options: SessionOptions, outbox: Outbox, carry: Run | None = None) -> None:
        self.nursery: trio.Nursery
        self.outbox = outbox
        if carry is None:
            self.notes_send, self.notes_recv = trio.open_memory_channel[tuple[str, Any]](
                options.notification_backlog
            )
        else:
            self.notes_send, self.notes_recv = carry.notes_send, carry.notes_recv
        self.reader_wakeup = trio.Event()
        self.handlers_idle = trio.Event()
        self.handlers_idle.set()
        self.close_requested = trio.Event()
        # Shielded: a cancel from outside the session (a deadline around the whole
        # ``async with``) must not kill the writer and closer before the close sequence
        # has run (sent our notifications/cancelled, flushed, closed the transport).
        # The closer cancels this scope at its end; open_session does after close_bound.
        self.services = trio.CancelScope(shield=True)
        self.services_done = trio.Event()


def new_run(session: Session, carry: Run | None = None) -> Run:
    """A run for ``session``, its outbox writing to the session's transport."""
    transport = session._transport
    outbox = Outbox(
        transport,
        session.options.outbox_size,
        on_peer_gone=lambda _unwritten: session.request_close("the peer stopped reading"),
        # Going to rest: the next run drains what is queued meanwhile.
        keep_queue=lambda: session._phase == WINDING_DOWN,
        send_now=transport.send_now if isinstance(transport, ImmediateTransport) else None,
        carry=None if carry is None else carry.outbox,
    )
    return Run(session.options, outbox, carry)


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


def begin_rest(session: Session) -> bool:
    """If nothing at all is under way, start ending the tasks to rest (reader only).

    Synchronous, so nothing can start between the checks and the decision. Nothing
    under way: no handler, no request of ours awaiting an answer, no half-answered
    batch, writer and notifier parked on empty queues, the transport holding no input,
    and the handler's own session task (if any) at rest too.
    """
    run = session._run
    if (
        session._close_wanted
        or session._contexts
        or session._waiters
        or session._relayed
        or session._batch_of
        or session._wake_pending
        or run.outbox.busy
    ):
        return False
    for channel in (run.outbox.send_end, run.notes_send):
        stats = channel.statistics()
        if stats.current_buffer_used or not stats.tasks_waiting_receive:
            return False
    transport_can_rest = session._transport_can_rest
    if transport_can_rest is None or not transport_can_rest():
        return False
    handler = session._handler
    if isinstance(handler, RestingHandler) and not handler.can_rest(session):
        return False
    session._phase = WINDING_DOWN
    run.services.cancel()
    return True


def wake(session: Session) -> None:
    """Make a resting or winding-down session run again (see :meth:`Session.wake`)."""
    phase = session._phase
    if phase == WINDING_DOWN:  # run_awake sees this once its tasks have ended
        session._wake_pending = True
        return
    assert session._waker is not None, "only a session with a waker rests"
    session._waker(session)  # first: it may refuse (raise), leaving the session resting
    session._phase = AWAKE
    session._run = new_run(session)
    if session._close_wanted:
        session._run.close_requested.set()


async def run_awake(session: Session, task_status: trio.TaskStatus[None]) -> bool:
    """See :meth:`Session.run_awake`."""
    while True:
        async with open_nursery_unwrapped() as nursery:
            await session._start(nursery)
            task_status.started()
            task_status = trio.TASK_STATUS_IGNORED
            try:
                await session._run.services_done.wait()
            finally:
                if session._phase == WINDING_DOWN and not session._run.services_done.is_set():
                    # Cancelled from outside while going to rest: nothing is under way.
                    with trio.CancelScope(shield=True):
                        await session._run.services_done.wait()
                        await close_quietly(session, "the server is shutting down")
                await session._stop(nursery)
        if session._phase != WINDING_DOWN:
            return False  # closed
        if not session._wake_pending:
            rest(session)
            return True
        # Woken while the tasks were ending: run again, with the same queues.
        session._wake_pending = False
        session._phase = AWAKE
        session._run = new_run(session, carry=session._run)
        if session._close_wanted:
            session._run.close_requested.set()


def rest(session: Session) -> None:
    """The tasks have ended: keep only the state (the transport drops what it can)."""
    session._phase = RESTING
    session._run = RESTING_RUN
    # Emptied dicts keep the tables they grew to: start from fresh ones.
    session._contexts = {}
    session._waiters = {}
    session._relayed = {}
    session._batch_of = {}
    session._connection.compact()
    closed_event = session._closed_event
    if closed_event is not None and not closed_event.statistics().tasks_waiting:
        session._closed_event = None  # a later waiter makes a new one
    transport = session._transport
    if isinstance(transport, RestingTransport):
        transport.rest()


async def close_quietly(session: Session, reason: str) -> None:
    """Close a session that has nothing under way and no tasks (bounded)."""
    if not session._close_wanted:
        session._close_wanted = True
        session.close_reason = reason
    session.closing = True
    session._phase = AWAKE
    session._connection.close()
    session._task_progress.clear()
    await session._close_transport()
