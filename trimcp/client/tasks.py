"""Client side of tasks: :class:`TaskHandle`, what ``Client.call_tool_as_task`` returns.

    handle = await client.call_toolas_task("render", {"scene": "x"}, ttl=600)
    async for task in handle:              # each status change until it ends
        print(task.status, task.status_message)
    result = await handle.result()         # the CallToolResult (or the tool's McpError)

How it waits: it polls ``tasks/get`` at the server's ``pollInterval`` hint (bounded below
by ``min_poll_interval``), woken early by ``notifications/tasks/status``. When the task
needs input (``input_required``) it calls ``tasks/result``, on which the server sends its
elicitation/sampling requests; the client's registered handlers answer them as for any
request. Once the task has ended, ``tasks/result`` returns what the tool call would have
returned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

import trio

from trimcp import serde
from trimcp.errors import McpError, RequestTimeout
from trimcp.types import (
    CallToolResult,
    CancelTaskRequestParams,
    GetTaskPayloadRequestParams,
    GetTaskRequestParams,
    Task,
    TaskStatusNotificationParams,
)

if TYPE_CHECKING:
    from trimcp.client.client import Client

TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: The poll interval used when the server gives no hint, in seconds.
DEFAULT_POLL_INTERVAL: Final = 1.0


def as_task(value: Any) -> Task:
    return Task(
        task_id=value.task_id,
        status=value.status,
        created_at=value.created_at,
        last_updated_at=value.last_updated_at,
        ttl=value.ttl,
        status_message=value.status_message,
        poll_interval=value.poll_interval,
    )


class TaskHandle:
    """A tool call running as a task on the server.

    ``status`` is the last :class:`~trimcp.types.Task` state seen (from the creation, a
    poll or a status notification). Methods raise what client requests raise
    (:class:`McpError` with the server's error, ``SessionClosed``...). The handle does not
    own the task: leaving it alone (or closing the client) does not cancel the task; call
    :meth:`cancel` for that.
    """

    def __init__(
        self, client: Client, task: Task, *, min_poll_interval: float = 0.05
    ) -> None:
        self._client = client
        self.status: Task = task
        self.min_poll_interval = min_poll_interval
        self._changed = trio.Event()
        self._result: CallToolResult | None = None
        self._error: McpError | None = None

    def __repr__(self) -> str:
        return f"<TaskHandle {self.task_id} {self.status.status}>"

    @property
    def task_id(self) -> str:
        return self.status.task_id

    @property
    def done(self) -> bool:
        """Whether the last state seen is terminal (completed, failed or cancelled)."""
        return self.status.status in TERMINAL

    def _update(self, task: Task) -> bool:
        """Take a newer state; True when status or message changed. Terminal is final."""
        if self.done:
            return False
        old = self.status
        self.status = task
        changed = (old.status, old.status_message) != (task.status, task.status_message)
        if changed:
            self._changed.set()
            self._changed = trio.Event()
        return changed

    def _notified(self, params: TaskStatusNotificationParams) -> None:
        self._update(as_task(params))

    async def refresh(self) -> Task:
        """Fetch the current state (``tasks/get``). Cancellation: as any request."""
        await self._refresh()
        return self.status

    async def _refresh(self) -> bool:
        got = await self._client.session.send_request(
            "tasks/get", GetTaskRequestParams(task_id=self.task_id)
        )
        return self._update(as_task(got))

    async def cancel(self) -> Task:
        """Cancel the task (``tasks/cancel``); returns its state after cancelling.

        Raises :class:`McpError` ``-32602`` when it had already ended (the server's rule).
        """
        got = await self._client.session.send_request(
            "tasks/cancel", CancelTaskRequestParams(task_id=self.task_id)
        )
        self._update(as_task(got))
        return self.status

    async def _sleep_or_change(self) -> None:
        hint = self.status.poll_interval
        interval = hint / 1000 if hint is not None else DEFAULT_POLL_INTERVAL
        changed = self._changed
        with trio.move_on_after(max(interval, self.min_poll_interval)):
            await changed.wait()

    async def wait(self) -> Task:
        """Wait until the task ends; returns its terminal state. While it needs input,
        serves the server's questions through ``tasks/result`` (registered handlers answer).
        Cancellation: stops waiting; the task goes on."""
        async for _ in self:
            pass
        return self.status

    def __aiter__(self) -> AsyncIterator[Task]:
        """Iterate over the task's states: the current one, then one at each change of
        status or message, until (and including) the terminal one. Breaking out early is
        fine (nothing is left running); the task goes on."""
        return _Changes(self)

    async def _next_change(self, seen: tuple[str, str | None]) -> None:
        while not self.done:
            if self.status.status == "input_required":
                await self._fetch_payload(until_done=True)
            else:
                await self._sleep_or_change()
                await self._refresh()
            if (self.status.status, self.status.status_message) != seen:
                return

    async def _fetch_payload(self, *, until_done: bool) -> None:
        try:
            raw = await self._client.session.send_request(
                "tasks/result", GetTaskPayloadRequestParams(task_id=self.task_id), timeout=None
            )
        except McpError as exc:
            if isinstance(exc, RequestTimeout):
                raise
            # The task failed with a JSON-RPC error: that is its result.
            await self.refresh()
            self._error = exc
            return
        self._result = serde.structure(raw, CallToolResult)
        if until_done and not self.done:
            await self.refresh()

    async def result(self) -> CallToolResult:
        """Wait for the task to end and return the tool's result (``tasks/result``).

        Raises the task's JSON-RPC error as :class:`McpError` (for a cancelled task too).
        Cancellation: stops waiting; the task goes on.
        """
        if self._result is None and self._error is None:
            await self.wait()
            if self._result is None and self._error is None:
                await self._fetch_payload(until_done=False)
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


class _Changes:
    """The iterator behind ``async for task in handle`` (a class, not an async
    generator, so that breaking out of the loop leaves nothing to finalize)."""

    __slots__ = ("_handle", "_seen")

    def __init__(self, handle: TaskHandle) -> None:
        self._handle = handle
        self._seen: tuple[str, str | None] | None = None

    def __aiter__(self) -> _Changes:
        return self

    async def __anext__(self) -> Task:
        handle = self._handle
        if self._seen is not None:
            if handle.done and self._seen[0] in TERMINAL:
                raise StopAsyncIteration
            await handle._next_change(self._seen)
            if (handle.status.status, handle.status.status_message) == self._seen:
                raise StopAsyncIteration
        self._seen = (handle.status.status, handle.status.status_message)
        return handle.status
