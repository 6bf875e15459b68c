"""Disconnect watching for the requests that need it: those still running after a grace.

A 2026-07-28 request runs in the task that received its POST, and a client that goes away
must cancel it. Watching for that takes a second task blocked on the ASGI ``receive`` (a
socket read): spawning it per request, in a nursery per request, and cancelling its read
cost about a fifth of a small call's CPU (measured: 330 -> 257 us per ``tools/call`` over
HTTP without it). Almost every request is answered long before a client could leave, so
:class:`SlowRequests` starts the watcher only for a request still running ``grace``
seconds after it began. A disconnect is then noticed at most ``grace`` late, which changes
nothing a client can see: it left.

One task (:meth:`SlowRequests.run`, in the app's nursery) does the promoting, and the
watchers run in its nursery. Requests are queued in the order they start, and all share one
grace, so the queue is also ordered by when each is due: the task sleeps until the oldest is
due, and finished requests are dropped as it passes them. The queue holds at most the
requests begun in the last ``grace`` seconds. A request that ends calls :meth:`Watch.end`,
which stops its watcher (if it had one) and waits until it has stopped, so the watcher
never touches the connection once the request is over.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import trio

from trimcp.transports.http_server.deadlines import DeadlineQueue

#: How long a request runs before a disconnect watcher is started for it (seconds).
DEFAULT_GRACE = 0.02

Watcher = Callable[[], Awaitable[None]]


class Watch:
    """One request's place in the queue. Await :meth:`end` when the request ends."""

    __slots__ = ("_exited", "_scope", "_watcher", "due", "pending")

    def __init__(self, due: float, watcher: Watcher | None) -> None:
        self.due = due
        self._watcher = watcher
        #: Still waiting to be promoted (the request runs and has no watcher yet). An
        #: attribute, not a property: the queue asks it of every entry it passes.
        self.pending = watcher is not None
        self._scope: trio.CancelScope | None = None
        self._exited: trio.Event | None = None

    @property
    def watched(self) -> bool:
        """A watcher was started for this request."""
        return self._exited is not None

    def promote(self, nursery: trio.Nursery) -> None:
        """Start the watcher in ``nursery`` now, unless the request already ended."""
        watcher, self._watcher = self._watcher, None
        self.pending = False
        if watcher is None:
            return
        self._scope = trio.CancelScope()
        self._exited = trio.Event()
        nursery.start_soon(self._watch, watcher)

    async def _watch(self, watcher: Watcher) -> None:
        assert self._scope is not None and self._exited is not None  # noqa: PT018
        try:
            with self._scope:
                await watcher()
        finally:
            self._exited.set()

    def end_now(self) -> bool:
        """:meth:`end` without a coroutine when the request has no watcher (True); False
        when it has one: then await :meth:`end`."""
        self._watcher = None
        self.pending = False
        return self._exited is None

    async def end(self) -> None:
        """The request ended: stop its watcher, if it has one, and wait until it stopped.

        Without a watcher this returns at once (no checkpoint). Cancellation: the wait
        is shielded; it is short, since the watcher is cancelled first.
        """
        self._watcher = None
        self.pending = False
        exited = self._exited
        if exited is not None:
            assert self._scope is not None
            self._scope.cancel()
            with trio.CancelScope(shield=True):
                await exited.wait()


class SlowRequests:
    """Starts a request's disconnect watcher once it has run for ``grace`` seconds."""

    def __init__(self, grace: float = DEFAULT_GRACE) -> None:
        self.grace = grace
        self._queue: DeadlineQueue[Watch] = DeadlineQueue()
        self._nursery: trio.Nursery | None = None
        # The run's clock, read directly (trio.current_time() costs two Python calls
        # more, once per request).
        self._clock: trio.abc.Clock | None = None

    def add(self, watcher: Watcher) -> Watch:
        """Queue a running request; ``watcher`` watches its client once it is due.

        While :meth:`run` is not running nothing is watched (the HTTP app serves no
        request then: its session manager refuses them).
        """
        clock = self._clock
        if self._nursery is None or clock is None:
            return Watch(math.inf, watcher)  # never promoted
        watch = Watch(clock.current_time() + self.grace, watcher)
        self._queue.push(watch)
        return watch

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Promote requests as they become due, until cancelled.

        Cancellation: stops promoting and cancels the watchers (their requests are
        being cancelled too: this runs as long as the app serves).
        """
        async with trio.open_nursery() as nursery:
            self._clock = trio.lowlevel.current_clock()
            self._nursery = nursery
            task_status.started()
            try:
                await self._queue.keep(lambda watch: watch.promote(nursery))
            finally:
                self._nursery = None
                self._queue.clear()
