"""Deadlines that all share one delay, kept by one task: :class:`DeadlineQueue`.

The lean engine's header timeout and the 2026 app's disconnect-watching grace are the same
kind of timer: every entry is due a fixed delay after it was added, so the order entries
are added in is the order they fall due. One task sleeps until the oldest is due and fires
it, unless it ended first (an ended entry is *stale* and costs nothing: it is dropped when
it reaches the front, by :meth:`DeadlineQueue.push` or by the task). This replaces a
deadline cancel scope, or a task, per entry: trio keeps each deadline in a heap and
re-evaluates cancel status on every change, which cost about 9 us a request.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import trio

__all__ = ["DeadlineQueue", "Entry"]


class Entry(Protocol):
    """What the queue needs of an entry: when it is due, and whether it still matters."""

    @property
    def due(self) -> float: ...

    @property
    def pending(self) -> bool: ...


E = TypeVar("E", bound=Entry)


class DeadlineQueue(Generic[E]):
    """Entries in the order they fall due; :meth:`keep` fires each one still pending."""

    def __init__(self) -> None:
        self._queue: deque[E] = deque()
        self._wake: trio.Event | None = None

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, entry: E) -> None:
        """Add ``entry`` (due no earlier than any entry added before it)."""
        queue = self._queue
        # Stale entries at the front go now: under load the queue then holds about the
        # entries still pending, not every entry of the last delay.
        while queue and not queue[0].pending:
            queue.popleft()
        queue.append(entry)
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()

    def clear(self) -> list[E]:
        """Empty the queue; returns the entries still pending."""
        pending = [entry for entry in self._queue if entry.pending]
        self._queue.clear()
        self._wake = None
        return pending

    async def keep(self, fire: Callable[[E], None]) -> None:
        """Call ``fire(entry)`` for each entry when it is due and still pending; forever.

        Cancellation: stops at once (nothing is fired for the remaining entries).
        """
        queue = self._queue
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
            fire(head)
