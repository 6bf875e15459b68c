"""The context a tool gets when it runs as a task.

The tool body is the same as for a plain call (``ctx.report_progress``, ``ctx.log``,
``ctx.elicit``, ``ctx.sample``...), but the request that created the task has already been
answered, so:

- questions to the client (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) wait in the
  task (status ``input_required``) until the client answers them through ``tasks/result``
  (2025-11-25) or ``tasks/update`` (the 2026 extension);
- notifications (progress, logs) go to the session that created the task while it is open,
  tagged with the related-task ``_meta``, and are dropped once it has closed: a client that
  went away does not fail or stop the task; progress uses the creating request's token
  and stops at the task's terminal status;
- cancellation comes from ``tasks/cancel``, the TTL, or server shutdown (never from the
  creating request or its session).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from trimcp import serde
from trimcp._validators import DEFAULT
from trimcp.errors import LocalProtocolError, McpError
from trimcp.server.context import Context
from trimcp.session.context import RequestContext
from trimcp.types import RELATED_TASK_META_KEY, LoggingLevel

if TYPE_CHECKING:
    from trimcp.tasks.manager import TaskOptions, _TaskHandle


class TaskRequestContext(RequestContext):
    """A :class:`RequestContext` for work running as a task (see the module docs)."""

    __slots__ = ("_handle", "_input_timeout")

    def __init__(
        self,
        origin: RequestContext,
        handle: _TaskHandle,
        options: TaskOptions,
    ) -> None:
        super().__init__(
            origin.session,
            origin.request_id,
            origin.method,
            origin.params,
            origin.progress_token,
            handle.cancel_scope,
            negotiated=origin.negotiated,
            outlet=origin.outlet,
            principal=origin.principal,
            trace=origin.trace,
        )
        self._handle = handle
        self._input_timeout = options.input_timeout

    @property
    def task_id(self) -> str:
        return self._handle.record.task_id

    def _related(self) -> dict[str, Any]:
        return {RELATED_TASK_META_KEY: {"taskId": self.task_id}}

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send progress for the task on its creating session, under the creating
        request's ``progressToken`` (valid until the task ends, as the spec says);
        dropped once that session closed, and once the task ended or is ending (cancelled,
        past its TTL). ``progress`` must increase. Cancellation: atomic."""
        if self.progress_token is None or self._handle.ending:
            return
        if self._last_progress is not None and not progress > self._last_progress:
            raise LocalProtocolError(
                f"progress must increase: {progress!r} after {self._last_progress!r}"
            )
        self._last_progress = progress
        params: dict[str, Any] = {
            "progressToken": self.progress_token,
            "progress": progress,
            "_meta": self._related(),
        }
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._notify("notifications/progress", params)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """Send a notification tied to the task (dropped once its session closed)."""
        if isinstance(params, dict):
            meta = params.get("_meta")
            params = {
                **params,
                "_meta": {**(meta if isinstance(meta, dict) else {}), **self._related()},
            }
        await self._notify(method, params)

    async def _notify(self, method: str, params: Any) -> None:
        # A stateless (2026-07-28) request's stream ended with the CreateTaskResult: the
        # extension has no progress or log messages for tasks, so they are dropped.
        if self.session is None or self.session.closed:
            return
        with contextlib.suppress(McpError):  # the session closed meanwhile: go on
            await self.session.send_notification(method, params)

    async def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = DEFAULT,
        on_progress: Any = None,
        reset_timeout_on_progress: bool = False,
    ) -> Any:
        """Ask the client on behalf of the task: the task is ``input_required`` until the
        answer arrives (``tasks/result`` or ``tasks/update``). ``timeout`` defaults to
        ``TaskOptions.input_timeout`` (None: until the task's TTL)."""
        wait = self._input_timeout if timeout is DEFAULT else timeout
        return await self._handle.ask(method, params, wait)


class TaskContext(Context):
    """The :class:`~trimcp.server.context.Context` of a tool running as a task."""

    __slots__ = ()

    @property
    def task_id(self) -> str:
        """The id of the task this tool call runs as."""
        request = self.request_context
        assert isinstance(request, TaskRequestContext)
        return request.task_id

    async def log(self, level: LoggingLevel, data: Any, *, logger: str | None = None) -> None:
        """As :meth:`Context.log`; dropped once the creating session has closed (and for
        a 2026-07-28 task, which has no session)."""
        session = self.request_context.session
        if session is None or session.closed:
            return
        with contextlib.suppress(McpError):
            await super().log(level, data, logger=logger)

    async def _send(
        self,
        method: str,
        params: Any,
        timeout: float | None,
        key: str | None,
        result_type: type[Any],
    ) -> Any:
        # Both eras: the question waits in the task (tasks/result or tasks/get+update),
        # never the 2026 input_required retry of the request that created it.
        request = self.request_context
        if timeout is DEFAULT:
            value = await request.send_request(method, params)
        else:
            value = await request.send_request(method, params, timeout=timeout)
        return serde.structure(value, result_type) if isinstance(value, dict) else value

    async def set_status_message(self, message: str | None) -> None:
        """Set the ``statusMessage`` clients see in ``tasks/get`` (e.g. "40% done")."""
        request = self.request_context
        assert isinstance(request, TaskRequestContext)
        await request._handle.set_message(message)
