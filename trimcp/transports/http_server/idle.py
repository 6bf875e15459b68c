"""The lean server's header timeout, kept by one task for every connection.

Between requests a connection waits for the next request head, for at most the header
timeout (which is also the keep-alive idle time). A deadline cancel scope per wait cost
about 9 us of a 160 us call (trio registers each deadline in a heap, and re-evaluates the
cancel status of the task twice). :class:`IdleTimer` keeps all those deadlines in one queue
instead: every wait has the same timeout, so the queue is in deadline order, and one task
sleeps until the oldest is due and ends that connection (it cancels the connection's own
scope) if it is still waiting. A wait that ends marks its entry stale, which costs nothing.
"""

from __future__ import annotations

import trio

from trimcp.transports.http_server.deadlines import DeadlineQueue


class IdleWait:
    """One connection waiting for its next request head; :meth:`stop` when it arrived."""

    __slots__ = ("due", "expired", "pending", "scope")

    def __init__(self, due: float, scope: trio.CancelScope | None) -> None:
        self.due = due
        #: The connection's scope, cancelled if the wait outlives its deadline.
        self.scope = scope
        #: Whether the wait goes on (``scope`` is set): an attribute, not a property,
        #: since the queue asks it of every entry it passes.
        self.pending = scope is not None
        #: The deadline passed while waiting: the connection was ended.
        self.expired = False

    def stop(self) -> None:
        """The head arrived (or the wait ended otherwise): nothing to cancel."""
        self.scope = None
        self.pending = False


class IdleTimer:
    """Cancels the scope of a connection still waiting ``timeout`` seconds after it began."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._queue: DeadlineQueue[IdleWait] = DeadlineQueue()
        #: Whether :meth:`run` keeps the deadlines (an attribute, not a property: the
        #: lean engine asks once per request).
        self.running = False
        self._scope = trio.CancelScope()
        # The run's clock, read directly while running (trio.current_time() costs two
        # Python calls more, and the lean engine asks once per request).
        self._clock: trio.abc.Clock | None = None

    def start(self, scope: trio.CancelScope) -> IdleWait:
        """A connection begins to wait; its ``scope`` is cancelled at the deadline."""
        clock = self._clock
        now = trio.current_time() if clock is None else clock.current_time()
        wait = IdleWait(now + self.timeout, scope)
        self._queue.push(wait)
        return wait

    def close(self) -> None:
        """Make :meth:`run` return (the server has no connections left)."""
        self._scope.cancel()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the deadlines until :meth:`close` or cancelled.

        Cancellation: stops; connections still waiting then wait without this bound
        (the server is stopping and ends them itself).
        """
        self._clock = trio.lowlevel.current_clock()
        self.running = True
        task_status.started()
        try:
            with self._scope:
                await self._queue.keep(_expire)
        finally:
            self.running = False
            self._queue.clear()


def _expire(wait: IdleWait) -> None:
    scope = wait.scope
    if scope is not None:
        wait.scope = None
        wait.pending = False
        wait.expired = True
        scope.cancel()
