"""Client side of tasks: :class:`TaskHandle`, what ``Client.call_tool_as_task`` returns.

    handle = await client.call_tool_as_task("render", {"scene": "x"}, ttl=600)
    async for task in handle:              # each status change until it ends
        print(task.status, task.status_message)
    result = await handle.result()         # the CallToolResult (or the tool's McpError)

The same API in both eras. How it waits: it polls ``tasks/get`` at the server's poll
interval hint (bounded below by ``min_poll_interval``), woken early by
``notifications/tasks/status`` (2025-11-25). When the task needs input
(``input_required``), the client's registered handlers (elicitation, sampling, roots)
answer, as for any request: in 2025-11-25 through ``tasks/result``, on which the server
sends its requests; with the 2026-07-28 extension by answering the ``inputRequests`` of
``tasks/get`` with ``tasks/update``. The result is what the tool call would have returned:
``tasks/result`` (2025-11-25) or the result inlined in ``tasks/get`` (2026).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from trimcp import serde
from trimcp.client.deadline import CallDeadline
from trimcp.errors import INTERNAL_ERROR, McpError, RequestTimeout
from trimcp.protocol import tasks_ext
from trimcp.types import (
    TERMINAL_TASK_STATUSES,
    CallToolResult,
    CancelTaskRequestParams,
    ClientCapabilities,
    GetTaskPayloadRequestParams,
    GetTaskRequestParams,
    Task,
    TaskStatusNotificationParams,
)

if TYPE_CHECKING:
    from trimcp.client.client import Client

TASKS_EXTENSION: Final = tasks_ext.EXTENSION_ID

TERMINAL: Final = TERMINAL_TASK_STATUSES
#: The poll interval used when the server gives no hint, in seconds.
DEFAULT_POLL_INTERVAL: Final = 1.0
#: ``inputRequests`` keys remembered per task (answered ones are not answered again).
MAX_ANSWERED_KEYS: Final = 1024


def is_task_answer(answer: Any) -> bool:
    """Whether a ``tools/call`` answer is the 2026 extension's ``CreateTaskResult``."""
    return isinstance(answer, Mapping) and answer.get("resultType") == tasks_ext.RESULT_TYPE_TASK


async def cancel_unreached_task(client: Client, answer: Any) -> None:
    """What a 2026-07-28 ``tools/call`` does with its answer when it comes after its caller
    left (cancelled, or timed out): a task the server made of the call, whose id nobody
    else can ever learn, is cancelled (``tasks/cancel``, shielded, bounded by
    ``SessionOptions.cancel_notify_timeout``; a failure changes nothing); any other answer
    is dropped. Run by the session (``on_late_answer`` of
    :meth:`~trimcp.session.Session.send_request`)."""
    if is_task_answer(answer):
        await TaskHandle(client, as_task(answer), modern=True)._abandon()


def with_tasks_extension(capabilities: ClientCapabilities) -> ClientCapabilities:
    """``capabilities`` declaring the tasks extension too (a trimcp client can always
    follow a task the server chooses to create)."""
    extensions = capabilities.extensions or {}
    if TASKS_EXTENSION in extensions:
        return capabilities
    return attrs.evolve(capabilities, extensions={**extensions, TASKS_EXTENSION: {}})


def as_task(value: Any) -> Task:
    """A :class:`Task` from a 2025-11-25 task object or a 2026 extension one (wire dict)."""
    if isinstance(value, Mapping):
        task_id = value.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise McpError(INTERNAL_ERROR, "The server sent a task without a taskId")
        return Task(
            task_id=task_id,
            status=value.get("status", "working"),
            created_at=str(value.get("createdAt", "")),
            last_updated_at=str(value.get("lastUpdatedAt", "")),
            ttl=value.get("ttlMs"),
            status_message=value.get("statusMessage"),
            poll_interval=value.get("pollIntervalMs"),
        )
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
    own the task: leaving it alone (or closing the client), or cancelling a wait on it,
    does not cancel the task; call :meth:`cancel` for that. :meth:`follow` is the
    exception: the wait of a caller who did not ask for a task (``call_tool``), which
    cancels the task when its caller goes.
    """

    def __init__(
        self,
        client: Client,
        task: Task,
        *,
        modern: bool = False,
        min_poll_interval: float = 0.05,
    ) -> None:
        self._client = client
        self.status: Task = task
        #: True when the task runs under the 2026-07-28 tasks extension.
        self.modern = modern
        self.min_poll_interval = min_poll_interval
        self._changed = trio.Event()
        self._result: CallToolResult | None = None
        self._error: McpError | None = None
        self._input_requests: dict[str, Any] = {}
        self._answered: dict[str, None] = {}

    @classmethod
    def finished(cls, client: Client, result: CallToolResult) -> TaskHandle:
        """A handle for a call the server answered at once instead of creating a task
        (2026-07-28 allows it): ``task_id`` is empty, ``result()`` returns at once."""
        handle = cls(
            client,
            Task(task_id="", status="completed", created_at="", last_updated_at="", ttl=None),
            modern=True,
        )
        handle._result = result
        return handle

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
        if not self.modern:
            got = await self._client._request(
                "tasks/get", GetTaskRequestParams(task_id=self.task_id)
            )
            return self._update(as_task(got))
        got = await self._client._request("tasks/get", {"taskId": self.task_id})
        if not isinstance(got, Mapping):
            raise McpError(INTERNAL_ERROR, "The server sent a tasks/get result that is no object")
        status = got.get("status")
        if status == "completed" and isinstance(got.get("result"), Mapping):
            self._result = serde.structure(dict(got["result"]), CallToolResult)
        elif status == "failed":
            raw_error = got.get("error")
            error: Mapping[str, Any] = raw_error if isinstance(raw_error, Mapping) else {}
            self._error = McpError(
                int(error.get("code", INTERNAL_ERROR)),
                str(error.get("message", "The task failed")),
                error.get("data"),
            )
        requests = got.get("inputRequests")
        self._input_requests = dict(requests) if isinstance(requests, Mapping) else {}
        return self._update(as_task(got))

    async def cancel(self) -> Task:
        """Cancel the task (``tasks/cancel``); returns its state after cancelling.

        2025-11-25: raises :class:`McpError` ``-32602`` when it had already ended (the
        server's rule). 2026 (extension): cancelling is acknowledged whatever the state and
        takes effect eventually; the state returned is the next ``tasks/get``.
        """
        await self._send_cancel()
        if self.modern:
            return await self.refresh()
        return self.status

    async def _send_cancel(self) -> None:
        if not self.modern:
            got = await self._client._request(
                "tasks/cancel", CancelTaskRequestParams(task_id=self.task_id)
            )
            self._update(as_task(got))
            return
        await self._client._request("tasks/cancel", {"taskId": self.task_id})

    async def follow(self, deadline: CallDeadline, target: str | None) -> CallToolResult:
        """Wait for the result as the caller's own call: what ``call_tool`` does with a
        task the server chose to make of a plain call (2026-07-28).

        ``deadline`` is the call's (:class:`~trimcp.client.deadline.CallDeadline`): it
        bounds the whole call, the request that created the task included; with
        ``reset_timeout_on_progress`` each change of the task's status or status message
        (its progress: the extension has no progress notifications for tasks) restarts
        it, never past the hard maximum. When it passes, or the caller is cancelled, the
        task is cancelled (``tasks/cancel``, shielded, bounded by
        ``SessionOptions.cancel_notify_timeout``), then the wait ends: the server cancels
        the task's scope, its handler sees ``trio.Cancelled``.

        Raises what :meth:`result` raises, and :class:`RequestTimeout` (as a plain
        request's timeout) when the deadline passes. Cancellation: cancels the task as
        said, then ``trio.Cancelled`` propagates.
        """
        try:
            with trio.CancelScope(deadline=deadline.at) as scope:
                first = True
                async for _task in self:
                    if not first:
                        deadline.progressed(scope)
                    first = False
                return await self.result()
        except BaseException:
            if not self.done:
                await self._abandon()
            raise
        if self.done:  # the end and the deadline raced; the end wins
            return await self.result()
        await self._abandon()
        raise deadline.timed_out("tools/call", target)

    async def _abandon(self) -> None:
        """Cancel the task for a caller who stopped waiting: shielded, bounded by
        ``SessionOptions.cancel_notify_timeout``; a failure to tell the server (the
        session closed, the task ended meanwhile) changes nothing for the caller."""
        bound = self._client.session.options.cancel_notify_timeout
        with (
            trio.CancelScope(shield=True, deadline=trio.current_time() + bound),
            contextlib.suppress(McpError, trio.BrokenResourceError, trio.ClosedResourceError),
        ):
            await self._send_cancel()

    async def _answer_inputs(self) -> None:
        """2026: answer the pending ``inputRequests`` with the registered handlers and send
        them with ``tasks/update``; keys already answered are skipped (deduplication)."""
        from trimcp.client.mrtr import answer_input_requests

        pending = {k: v for k, v in self._input_requests.items() if k not in self._answered}
        if not pending:
            await self._sleep_or_change()
            return
        client = self._client
        responses = await answer_input_requests(client.handlers, client.session, pending)
        await client._request("tasks/update", {"taskId": self.task_id, "inputResponses": responses})
        for key in responses:
            self._answered[key] = None
            if len(self._answered) > MAX_ANSWERED_KEYS:
                del self._answered[next(iter(self._answered))]

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
            if self.status.status == "input_required" and self.modern:
                await self._answer_inputs()
                await self._refresh()
            elif self.status.status == "input_required":
                await self._fetch_payload(until_done=True)
            else:
                await self._sleep_or_change()
                await self._refresh()
            if (self.status.status, self.status.status_message) != seen:
                return

    async def _fetch_payload(self, *, until_done: bool) -> None:
        if self.modern:  # 2026: the outcome came inlined with the last tasks/get
            if self._result is None and self._error is None:
                self._error = McpError(
                    INTERNAL_ERROR,
                    f"Task {self.task_id} ended {self.status.status} without a result "
                    f"({self.status.status_message or 'no reason given'})",
                )
            return
        try:
            raw = await self._client._request(
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
        Cancellation: stops waiting; the task goes on (call :meth:`cancel` to stop it;
        :meth:`follow` is the wait that cancels the task with its caller).
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
