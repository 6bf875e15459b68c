"""Disconnect watching for the requests that need it: those still running after a grace.

A 2026-07-28 request runs in the task that received its POST, and a client that goes away
must cancel it. Watching for that takes a second task blocked on the ASGI ``receive`` (a
socket read): spawning it, and cancelling its read, cost about a fifth of a small call's
CPU (measured: 330 -> 257 us per ``tools/call`` over HTTP without it). Almost every request
is answered long before a client could leave, so :class:`SlowRequests` starts the watcher
only for a request still running ``grace`` seconds after it began. A disconnect is then
noticed at most ``grace`` late, which changes nothing a client can see: it left.

One task (:meth:`SlowRequests.run`, in the app's nursery) does the promoting. Requests are
queued in the order they start, and all share one grace, so the queue is also ordered by
when each is due: the task sleeps until the oldest is due, and finished requests are
dropped as it passes them. The queue holds at most the requests begun in the last
``grace`` seconds. While the task is not running (an app whose ``run`` was not started,
or after it stopped) every request gets its watcher at once, as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import trio

#: How long a request runs before a disconnect watcher is started for it (seconds).
DEFAULT_GRACE = 0.02


class Watch:
    """One request's place in the queue. Call :meth:`done` when the request ends."""

    __slots__ = ("_spawn", "due")

    def __init__(self, due: float, spawn: Callable[[], None] | None) -> None:
        self.due = due
        self._spawn = spawn

    def done(self) -> None:
        """The request ended: never start its watcher (call before its nursery closes)."""
        self._spawn = None

    def promote(self) -> None:
        """Start the watcher now, unless the request already ended."""
        spawn, self._spawn = self._spawn, None
        if spawn is not None:
            spawn()

    @property
    def pending(self) -> bool:
        return self._spawn is not None


class SlowRequests:
    """Starts a request's disconnect watcher once it has run for ``grace`` seconds."""

    def __init__(self, grace: float = DEFAULT_GRACE) -> None:
        self.grace = grace
        self._queue: deque[Watch] = deque()
        self._wake: trio.Event | None = None
        self._running = False

    def add(self, spawn: Callable[[], None]) -> Watch:
        """Queue a request; ``spawn`` starts its watcher (a ``nursery.start_soon`` call).

        ``spawn`` runs from the promoting task, so the nursery it starts in must stay open
        until :meth:`Watch.done` is called.
        """
        watch = Watch(trio.current_time() + self.grace, spawn)
        if not self._running:
            watch.promote()
            return watch
        self._queue.append(watch)
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()
        return watch

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Promote requests as they become due, until cancelled.

        Cancellation: stops promoting; the requests still queued get their watchers at once.
        """
        queue = self._queue
        self._running = True
        task_status.started()
        try:
            while True:
                while queue and not queue[0].pending:
                    queue.popleft()
                if not queue:
                    self._wake = wake = trio.Event()
                    await wake.wait()
                    continue
                head = queue[0]
                if head.due > trio.current_time():
                    await trio.sleep_until(head.due)
                    continue
                queue.popleft()
                head.promote()
        finally:
            self._running = False
            self._wake = None
            while queue:
                queue.popleft().promote()
