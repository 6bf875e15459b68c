"""The client running tasks for the server (2025-11-25): task-augmented
``sampling/createMessage`` and ``elicitation/create``, and the server's ``tasks/*`` requests.

A server may ask the client to run one of its requests as a task (``params.task =
{ttl}``) when the client declared ``capabilities.tasks.requests.sampling.createMessage``
or ``...elicitation.create``. The client then answers at once with ``CreateTaskResult``,
runs the registered handler in the background, and serves the server's ``tasks/get``,
``tasks/result`` (blocks until the task ends, then answers what the request would have
answered, with the related-task ``_meta``), ``tasks/list`` and ``tasks/cancel``; it sends
``notifications/tasks/status`` when a task's status changes.

The capability is declared only for what has a handler (sampling, elicitation), only
when offering 2025-11-25, and only when the task runner is open: the openers
(``connect_stdio``, ``connect_http``...) open it inside the session; a client attached by
hand opens it with ``async with client.open_task_runner():`` around ``attach``.

Lifetimes and limits (the shared engine, :class:`~trimcp.tasks.TaskManager`, with
client defaults, :data:`CLIENT_TASK_OPTIONS`):

- Tasks run in a nursery the client owns, inside its session; each in its own cancel
  scope whose deadline is the task's TTL (clamped to ``min_ttl``..``max_ttl``).
  ``tasks/cancel`` cancels that scope: the handler sees ``trio.Cancelled`` at its next
  checkpoint, its ``finally`` blocks run, and the task is recorded ``cancelled``. A task
  that runs past its TTL is cancelled the same way and recorded ``failed`` (``-32001``).
  A handler that raises fails its task as it would fail the request (``McpError``: that
  error; anything else, ``SystemExit`` and ``KeyboardInterrupt`` included: ``-32603``);
  the client goes on.
- At most ``max_running`` tasks run at once; one more is refused with ``-32603`` (the
  request, not a task, fails). Finished tasks are kept until their TTL passes, at most
  ``max_kept`` of them (:class:`~trimcp.tasks.MemoryTaskStore`); an unknown or
  expired task id gets ``-32602``.
- When the client closes (or the server goes away), running tasks get
  ``shutdown_grace`` seconds (0 by default), then they are cancelled; nothing outlives
  the client.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import attrs

from trimcp._groups import open_nursery_unwrapped
from trimcp.errors import METHOD_NOT_FOUND, McpError
from trimcp.protocol.versions import V2025_11_25
from trimcp.session import RequestContext, Session
from trimcp.tasks.manager import TaskManager, TaskOptions, _TaskHandle
from trimcp.tasks.store import MemoryTaskStore, TaskBudget, TaskRecord
from trimcp.tasks.wire import final_answer, task_fields
from trimcp.types import (
    CancelTaskResult,
    ClientCapabilities,
    ClientTaskRequests,
    ClientTasksCapability,
    CreateTaskResult,
    ElicitationTaskRequests,
    GetTaskResult,
    ListTasksResult,
    SamplingTaskRequests,
    Task,
    TaskStatusNotificationParams,
)

#: The defaults of a client's task runner: an hour's TTL unless the server asks another
#: (1 s to 1 day), 64 tasks running at once, no grace when the client closes.
CLIENT_TASK_OPTIONS: Final = TaskOptions(
    default_ttl=3600.0,
    min_ttl=1.0,
    max_ttl=86_400.0,
    poll_interval=1.0,
    shutdown_grace=0.0,
    max_running=64,
    page_size=100,
)
#: Finished tasks kept (until their TTL) at most, by default.
DEFAULT_MAX_KEPT: Final = 1000

#: The server requests a client may run as tasks.
TASK_REQUESTS: Final = frozenset({"sampling/createMessage", "elicitation/create"})

Inner = Callable[[RequestContext], Awaitable[Any]]


def declared_for(capabilities: ClientCapabilities | None, method: str) -> bool:
    """Whether ``capabilities`` declare running ``method`` as a task."""
    tasks = capabilities.tasks if capabilities is not None else None
    requests = tasks.requests if tasks is not None else None
    if requests is None:
        return False
    if method == "sampling/createMessage":
        return requests.sampling is not None and requests.sampling.create_message is not None
    if method == "elicitation/create":
        return requests.elicitation is not None and requests.elicitation.create is not None
    return False


class TaskReceiver:
    """Runs the server's task-augmented requests for one client (see the module docs).

    ``options`` (default :data:`CLIENT_TASK_OPTIONS`) sets TTLs, ``max_running`` and the
    grace period at close; ``max_kept`` bounds the tasks remembered (running or finished).
    """

    def __init__(self, options: TaskOptions | None = None, max_kept: int = DEFAULT_MAX_KEPT):
        if max_kept < 1:
            raise ValueError(f"max_kept must be >= 1, got {max_kept!r}")
        self.manager = TaskManager(
            # One server owns every task a client runs: the whole budget is its.
            MemoryTaskStore(budget=TaskBudget(max_tasks=max_kept, max_tasks_per_owner=max_kept)),
            options or CLIENT_TASK_OPTIONS,
            holder="client",
        )

    @property
    def running(self) -> bool:
        """Whether the runner is open (tasks are accepted)."""
        return self.manager.running

    def live_count(self) -> int:
        """How many tasks run now."""
        return self.manager.live_count()

    @contextlib.asynccontextmanager
    async def open(self, session: Session | None = None) -> AsyncIterator[None]:
        """Run tasks for the body. On exit, and as soon as ``session`` closes (the server
        went away: nobody can fetch a result any more), running tasks are cancelled and
        recorded ``cancelled``; on exit they get ``shutdown_grace`` seconds first.

        Cancellation: the exit sequence runs shielded and bounded by ``shutdown_grace``
        (plus a bounded store update per task).
        """
        async with open_nursery_unwrapped() as watchers, self.manager.open():
            if session is not None:
                watchers.start_soon(self._stop_when_closed, session)
            try:
                yield
            finally:
                watchers.cancel_scope.cancel()

    async def _stop_when_closed(self, session: Session) -> None:
        await session.wait_closed()
        self.manager.cancel_all()

    def declare(self, capabilities: ClientCapabilities, version: str) -> ClientCapabilities:
        """``capabilities`` plus ``tasks`` for the requests a handler is declared for
        (sampling, elicitation), when offering 2025-11-25 with the runner open."""
        if version != V2025_11_25 or not self.running:
            return capabilities
        sampling = SamplingTaskRequests(create_message={}) if capabilities.sampling else None
        elicitation = ElicitationTaskRequests(create={}) if capabilities.elicitation else None
        if sampling is None and elicitation is None:
            return capabilities
        tasks = ClientTasksCapability(
            list_={},
            cancel={},
            requests=ClientTaskRequests(sampling=sampling, elicitation=elicitation),
        )
        return attrs.evolve(capabilities, tasks=tasks)

    # --- the server's requests ---------------------------------------------------------

    async def handle_request(self, ctx: RequestContext, inner: Inner) -> Any:
        """Answer one server request: a task-augmented one the client declared becomes a
        task (answered with ``CreateTaskResult``); ``tasks/*`` are served; anything else
        (and a ``task`` the client did not declare, which the spec says to ignore) goes to
        ``inner``. Cancellation: of a ``tasks/result``, stops waiting (the task goes on)."""
        method = ctx.method
        negotiated = ctx.negotiated
        declared = negotiated.client_capabilities if negotiated is not None else None
        tasks_declared = declared is not None and declared.tasks is not None
        if method.startswith("tasks/") and tasks_declared:
            return await self._serve_tasks_method(ctx)
        task = getattr(ctx.params, "task", None)
        if task is not None and method in TASK_REQUESTS and declared_for(declared, method):
            return await self._create(ctx, task.ttl, inner)
        return await inner(ctx)

    async def _create(self, ctx: RequestContext, ttl_ms: int | None, inner: Inner) -> Any:
        session = ctx.session

        async def run(handle: _TaskHandle) -> Any:
            return await inner(ctx)

        async def notify(record: TaskRecord) -> None:
            if session is not None and not session.closed:
                params = TaskStatusNotificationParams(**task_fields(record))
                await session.send_notification("notifications/tasks/status", params)

        record = await self.manager.create(
            run,
            owner=None,
            method=ctx.method,
            protocol_version=V2025_11_25,
            ttl_ms=ttl_ms,
            listener=notify,
        )
        return CreateTaskResult(task=Task(**task_fields(record)))

    async def _serve_tasks_method(self, ctx: RequestContext) -> Any:
        method = ctx.method
        manager = self.manager
        if method == "tasks/get":
            record = await manager.find(ctx.params.task_id, None)
            return GetTaskResult(**task_fields(record))
        if method == "tasks/result":
            record = await manager.wait_terminal(ctx.params.task_id, None)
            return final_answer(record)
        if method == "tasks/list":
            cursor = ctx.params.cursor if ctx.params is not None else None
            records, next_cursor = await manager.list(None, cursor)
            return ListTasksResult(
                tasks=[Task(**task_fields(record)) for record in records],
                next_cursor=next_cursor,
            )
        if method == "tasks/cancel":
            record = await manager.cancel(ctx.params.task_id, None)
            return CancelTaskResult(**task_fields(record))
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
