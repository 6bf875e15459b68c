"""The waiting side of one of our requests: its answer slot, progress queue and deadline."""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from trimcp.errors import McpError

#: ``on_progress(progress, total, message)``; may be a plain or an async function.
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]

#: Progress updates kept while the caller is busy; older ones are dropped (progress is a
#: snapshot, so the newest is what matters and the queue must stay bounded).
PROGRESS_BACKLOG = 32


class Waiter:
    """Everything the reader task needs to complete one outbound request.

    The reader fills in the outcome or queues progress and sets ``wakeup``; the calling task
    sleeps on ``wakeup`` and does the rest (callbacks run in the caller's task, so they can
    be async and their exceptions reach the caller).
    """

    __slots__ = (
        "deadline_scope",
        "error",
        "follow",
        "hard_deadline",
        "progress",
        "reset_on_progress",
        "result",
        "timeout",
        "wakeup",
    )

    def __init__(self, timeout: float, hard_deadline: float, reset_on_progress: bool) -> None:
        self.wakeup = trio.Event()
        self.result: Any = None
        self.error: McpError | None = None
        self.progress: deque[tuple[float, float | None, str | None]] | None = None
        self.timeout = timeout
        self.hard_deadline = hard_deadline
        self.reset_on_progress = reset_on_progress
        self.deadline_scope: trio.CancelScope | None = None
        #: A task-augmented request's progress callback: its progress goes through the
        #: session's notification task (before and after the answer, in order).
        self.follow: ProgressCallback | None = None

    @property
    def done(self) -> bool:
        return self.result is not None or self.error is not None

    def resolve(self, result: Any) -> None:
        # A None result would look "not done"; results are always objects, but be safe.
        self.result = result if result is not None else {}
        self.wakeup.set()

    def fail(self, error: McpError) -> None:
        self.error = error
        self.wakeup.set()

    def add_progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.progress is None:
            self.progress = deque(maxlen=PROGRESS_BACKLOG)
        self.progress.append((progress, total, message))
        self.extend_deadline()
        self.wakeup.set()

    def extend_deadline(self) -> None:
        """Progress came: restart the timeout if the caller asked for that."""
        if self.reset_on_progress and self.deadline_scope is not None:
            self.deadline_scope.deadline = min(
                trio.current_time() + self.timeout, self.hard_deadline
            )

    async def wait(self, on_progress: ProgressCallback | None) -> Any:
        """Sleep until answered; run progress callbacks meanwhile. Raises the peer's error."""
        while not self.done:
            await self.wakeup.wait()
            self.wakeup = trio.Event()
            if self.progress and on_progress is not None:
                await _drain_progress(self.progress, on_progress)
        if self.progress and on_progress is not None:
            await _drain_progress(self.progress, on_progress)
        if self.error is not None:
            raise self.error
        return self.result


async def _drain_progress(
    updates: deque[tuple[float, float | None, str | None]], callback: ProgressCallback
) -> None:
    while updates:
        progress, total, message = updates.popleft()
        outcome = callback(progress, total, message)
        if inspect.isawaitable(outcome):
            await outcome


class TaskProgress:
    """One progress update of a task-augmented request of ours (before or after its
    answer): delivered to the caller's callback in the session's notification task."""

    __slots__ = ("callback", "message", "progress", "total")

    def __init__(
        self,
        callback: ProgressCallback,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        self.callback = callback
        self.progress = progress
        self.total = total
        self.message = message

    async def deliver(self) -> None:
        outcome = self.callback(self.progress, self.total, self.message)
        if inspect.isawaitable(outcome):
            await outcome
