"""Resting: a session whose tasks end while it is idle, keeping only its state.

A session made by :func:`~trimcp.session.engine.resting_session` (and able to rest: an
owner to wake it, a transport that can say it holds nothing) holds a :class:`Resting`,
which owns its :class:`Phase` (AWAKE -> WINDING_DOWN -> RESTING and back), whether it was
woken while winding down, its owner's ``waker``, its ``rest_after`` and the transport's
resting hooks. The engine asks it and acts on the answers: its reader, the one task that
knows it holds no message half-handled, offers to rest (:meth:`Resting.begin_rest`);
:meth:`Resting.wake` says whether the session needs a new run; :meth:`Resting.tasks_ended`
says what comes after the tasks have ended. A resting session keeps only its state and the
shared closed run (:data:`trimcp.session.run.RESTING_RUN`).

Resting reaches nothing of the session: it is handed the run to look at, and the session
itself only to pass it to the owner's waker.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

from trimcp.session.hooks import RestingTransport

if TYPE_CHECKING:
    from trimcp.session.engine import Session
    from trimcp.session.run import Run


class Phase(enum.IntEnum):
    """A session's phases (AWAKE is 0, so ``if resting.phase:`` means "not awake")."""

    AWAKE = 0  # running its tasks
    WINDING_DOWN = 1  # letting them end, to rest
    RESTING = 2  # no tasks, only state


AWAKE, WINDING_DOWN, RESTING = Phase.AWAKE, Phase.WINDING_DOWN, Phase.RESTING


class Resting:
    """A session's resting: its phase and what it needs to rest and be woken.

    Its fields are written by its own methods alone; the engine reads ``phase`` (on every
    send: a resting session is woken first) and ``rest_after`` (its reader's quiet time).
    """

    __slots__ = ("phase", "rest_after", "transport", "wake_pending", "waker")

    def __init__(
        self, waker: Callable[[Session], None], rest_after: float, transport: RestingTransport
    ) -> None:
        self.phase = AWAKE
        #: Woken while winding down: run again, with the same queues, once the tasks end.
        self.wake_pending = False
        #: The owner's ``waker(session)``: runs ``Session.run_awake`` in a task of its own.
        self.waker = waker
        #: Seconds with nothing under way before the session rests.
        self.rest_after = rest_after
        self.transport = transport

    def begin_rest(self, run: Run) -> bool:
        """Start ending ``run``'s tasks to rest, if nothing at all is under way (True).

        The reader asks, once its session has nothing of its own under way (no handler,
        no request awaiting an answer, no half-answered batch, no close asked for, the
        handler's own session task at rest). Synchronous, so nothing can start between the
        checks and the decision: here, no wake pending, writer and notifier parked on
        empty queues, and the transport holding no input.
        """
        if self.wake_pending or run.outbox.busy:
            return False
        for channel in (run.outbox.send_end, run.notes_send):
            stats = channel.statistics()
            if stats.current_buffer_used or not stats.tasks_waiting_receive:
                return False
        if not self.transport.can_rest():
            return False
        self.phase = WINDING_DOWN
        run.services.cancel()
        return True

    def winding_down(self) -> bool:
        """Whether its tasks are ending, to rest (a writer ending now keeps its queue for
        the next run, in case of a wake meanwhile)."""
        return self.phase == WINDING_DOWN

    def wake(self, session: Session) -> bool:
        """Wake from rest (see :meth:`Session.wake`); True: make the session a new run.

        Winding down: noted, the tasks run again once they have ended (False). Resting:
        the owner's waker is asked first and may refuse (it raises; the session stays
        resting), then the session is awake and needs a run.
        """
        if self.phase == WINDING_DOWN:
            self.wake_pending = True
            return False
        self.waker(session)
        self.phase = AWAKE
        return True

    def tasks_ended(self) -> Phase | None:
        """The session's tasks have ended: what now.

        None: it was not going to rest (it closed). RESTING: it rests now; the session
        drops its run and compacts its state, then calls :meth:`rest`. AWAKE: it was woken
        while the tasks ended; it runs again, with the same queues.
        """
        if self.phase != WINDING_DOWN:
            return None
        if not self.wake_pending:
            return RESTING
        self.wake_pending = False
        self.phase = AWAKE
        return AWAKE

    def rest(self) -> None:
        """The session keeps only its state now (the transport drops what it can)."""
        self.phase = RESTING
        self.transport.rest()

    def give_up(self) -> None:
        """The session closes instead of resting (cancelled while winding down)."""
        self.phase = AWAKE
