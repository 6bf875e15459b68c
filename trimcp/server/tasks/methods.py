"""The server side of tasks on the wire (2025-11-25): task-augmented ``tools/call`` and
``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``, plus
``notifications/tasks/status``.

Ownership: a task belongs to whoever created it (``Server(task_owner=...)``; by default
:func:`default_owner`: the caller's principal key when it is authenticated, else the
session that created it). A request from anyone else gets the same ``-32602`` "not
found" as for an unknown id, and ``tasks/list`` shows only the requester's tasks. An
anonymous 2026 task is reachable only by its id, 128 random bits (see ``docs/tasks.md``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from trimcp.auth.principal import principal_key
from trimcp.errors import METHOD_NOT_FOUND, McpError
from trimcp.protocol.versions import V2025_11_25, is_stateless
from trimcp.server.context import Context
from trimcp.server.results import to_content
from trimcp.server.tasks import modern
from trimcp.server.tasks.context import TaskContext, TaskRequestContext
from trimcp.session.context import RequestContext
from trimcp.tasks.manager import TaskManager, _TaskHandle
from trimcp.tasks.store import TaskRecord
from trimcp.tasks.wire import final_answer as final_answer
from trimcp.tasks.wire import iso as iso
from trimcp.tasks.wire import task_fields as task_fields
from trimcp.types import (
    CallToolResult,
    CancelTaskResult,
    CreateTaskResult,
    GetTaskResult,
    ListTasksResult,
    ServerTaskRequests,
    ServerTasksCapability,
    Task,
    TaskStatusNotificationParams,
    ToolsTaskRequests,
)

if TYPE_CHECKING:
    from trimcp.server.app import Server
    from trimcp.server.tools import RegisteredTool

#: ``owner(ctx) -> key``: who a task belongs to (None: whoever holds its id).
OwnerFunction = Callable[[Context], "str | None"]


def default_owner(ctx: Context) -> str | None:
    """Who owns the tasks this request creates, and whose tasks it may see.

    - An authenticated caller (a verified token on ``ctx.auth``, or what an
      ``authenticate`` hook returned): its :func:`~trimcp.auth.principal_key`, the same
      for every session, replica and refreshed token of that principal.
    - An anonymous caller in a session (2025-11-25): the session that created the task.
      Another session, even of the same client, neither lists nor reads it.
    - An anonymous stateless request (2026-07-28): nobody; the task is reachable only by
      its id (128 random bits), and 2026 has no ``tasks/list`` to hand ids out.
    """
    key = principal_key(ctx.request_context.principal)
    if key is not None:
        return key
    session = ctx.request_context.session
    if session is None:
        return None
    digest = hashlib.sha256(session.owner_key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"session:{digest[:32]}"


def tasks_capability() -> ServerTasksCapability:
    """What a server with task-capable tools declares (list, cancel, tools/call)."""
    return ServerTasksCapability(
        list_={}, cancel={}, requests=ServerTaskRequests(tools=ToolsTaskRequests(call={}))
    )


def _owner(server: Server, ctx: RequestContext) -> str | None:
    owner = server.task_owner
    return owner(Context(server, ctx))


def task_support(tool: RegisteredTool[Any, Any]) -> str:
    execution = tool.definition().execution
    support = execution.task_support if execution is not None else None
    return support or "forbidden"


def runs_as_task(tool: RegisteredTool[Any, Any], ctx: RequestContext) -> bool:
    """Whether this ``tools/call`` must run as a task (raises ``-32601`` when the request
    and the tool's ``taskSupport`` disagree). In other revisions a call runs normally."""
    support = task_support(tool)
    wanted = getattr(ctx.params, "task", None) is not None
    if support == "forbidden" and not wanted:
        return False  # in every revision (the commonest call: checked first)
    version = ctx.negotiated.protocol_version if ctx.negotiated else None
    if is_stateless(version):
        return modern.runs_as_task(support, tool.name, ctx)
    if version != V2025_11_25:
        return False
    if wanted and support == "forbidden":
        raise McpError(
            METHOD_NOT_FOUND,
            f"Tool {tool.name!r} cannot run as a task (its execution.taskSupport is "
            "'forbidden'); call it without the 'task' parameter",
        )
    if not wanted and support == "required":
        raise McpError(
            METHOD_NOT_FOUND,
            f"Tool {tool.name!r} must run as a task (its execution.taskSupport is "
            "'required'); call it with a 'task' parameter",
        )
    return wanted


async def call_tool_as_task(
    server: Server,
    tool: RegisteredTool[Any, Any],
    ctx: RequestContext,
    body: Callable[[TaskContext], Awaitable[CallToolResult]] | None = None,
) -> CreateTaskResult | dict[str, Any]:
    """Create the task for a ``tools/call`` and answer with its handle. The task runs
    ``body(task_ctx)`` (default: the whole tool with the call's arguments)."""
    manager: TaskManager = server.tasks
    session = ctx.session
    arguments = ctx.params.arguments
    options = manager.options

    async def run(handle: _TaskHandle) -> Any:
        task_ctx = TaskContext(server, TaskRequestContext(ctx, handle, options))
        if body is not None:
            return await body(task_ctx)
        return await tool.run(arguments, task_ctx)

    async def notify(record: TaskRecord) -> None:
        if session is not None and not session.closed:
            params = TaskStatusNotificationParams(**task_fields(record))
            await session.send_notification("notifications/tasks/status", params)

    version = ctx.negotiated.protocol_version if ctx.negotiated else None
    stateless = is_stateless(version)
    # 2026: the server decides; a legacy `task` hint is tolerated and ignored.
    task = None if stateless else ctx.params.task
    record = await manager.create(
        run,
        owner=_owner(server, ctx),
        method="tools/call",
        protocol_version=version,
        ttl_ms=task.ttl if task is not None else None,
        listener=None if stateless else notify,
    )
    if stateless:
        # 2026: the server chose to make a task of the call; the answer is the only way
        # the client learns its id. Unanswered (the client cancelled or left first), the
        # task could never be reached: it ends with its request.
        ctx.on_unanswered(functools.partial(manager.abandon, record.task_id))
        return modern.create_result(record)
    return CreateTaskResult(task=Task(**task_fields(record)))


async def tasks_get(server: Server, ctx: RequestContext) -> GetTaskResult | dict[str, Any]:
    if ctx.stateless:
        return await modern.tasks_get(server, _owner(server, ctx), ctx)
    record = await server.tasks.find(ctx.params.task_id, _owner(server, ctx))
    return GetTaskResult(**task_fields(record))


async def tasks_result(server: Server, ctx: RequestContext) -> dict[str, Any]:
    """Block until the task ends, forwarding its questions to the client on the way, then
    answer with exactly what the request would have answered (result or error)."""

    async def forward(method: str, params: dict[str, Any]) -> Any:
        return await ctx.send_request(method, params)

    task_id = ctx.params.task_id
    record = await server.tasks.wait_terminal(task_id, _owner(server, ctx), forward)
    return final_answer(record)


async def tasks_list(server: Server, ctx: RequestContext) -> ListTasksResult:
    cursor = ctx.params.cursor if ctx.params is not None else None
    records, next_cursor = await server.tasks.list(_owner(server, ctx), cursor)
    return ListTasksResult(
        tasks=[Task(**task_fields(record)) for record in records], next_cursor=next_cursor
    )


async def tasks_cancel(server: Server, ctx: RequestContext) -> CancelTaskResult | dict[str, Any]:
    if ctx.stateless:
        return await modern.tasks_cancel(server, _owner(server, ctx), ctx)
    record = await server.tasks.cancel(ctx.params.task_id, _owner(server, ctx))
    return CancelTaskResult(**task_fields(record))


def request_handlers(server: Server) -> dict[str, Callable[[RequestContext], Any]]:
    """The ``tasks/*`` request handlers of ``server``, keyed by method."""

    def bind(fn: Callable[[Server, RequestContext], Any]) -> Callable[[RequestContext], Any]:
        def handler(ctx: RequestContext) -> Any:
            return fn(server, ctx)

        return handler

    return {
        "tasks/get": bind(tasks_get),
        "tasks/result": bind(tasks_result),
        "tasks/list": bind(tasks_list),
        "tasks/cancel": bind(tasks_cancel),
        "tasks/update": bind(tasks_update),
    }


async def tasks_update(server: Server, ctx: RequestContext) -> dict[str, Any]:
    """``tasks/update`` exists only in the 2026 extension."""
    if not ctx.stateless:
        raise McpError(METHOD_NOT_FOUND, "Method not found: tasks/update (2026-07-28 only)")
    return await modern.tasks_update(server, _owner(server, ctx), ctx)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TaskStarted(CallToolResult):
    """What :func:`start_task` returns from a tool: the answer to send (the handle)."""

    created: Any = None


def unwrap_started(result: Any) -> Any:
    """The ``tools/call`` answer for what a tool returned (a started task's handle)."""
    return result.created if isinstance(result, TaskStarted) else result


async def start_task(ctx: Context, work: Callable[[Context], Awaitable[Any]]) -> CallToolResult:
    """From a tool registered with ``task_start="explicit"``: run ``work`` as this call's
    task, and return what the tool must return.

    The tool body runs in the request first, so it can ask for input there (2026: the
    ``input_required`` rounds of the request, resolved before the task exists, as the
    extension recommends) and validate; then ``return await start_task(ctx, work)``.
    ``work(task_ctx)`` gets the task's context (:class:`TaskContext`) and returns what a
    tool returns (text, content, a ``CallToolResult``; :class:`ToolError` for a tool
    error). When the call does not run as a task (a plain call of an optional tool),
    ``work(ctx)`` runs at once with the request's context instead. Cancellation: creating
    the task is atomic; the task then runs in the server's nursery.
    """
    if isinstance(ctx, TaskContext):
        raise TypeError("start_task() is called from the tool body, not from inside a task")
    request = ctx.request_context
    tool = ctx.server.get_tool(getattr(request.params, "name", ""))
    if request.method != "tools/call" or tool is None:
        raise TypeError("start_task() is for the body of a tool answering tools/call")

    async def shaped(run_ctx: Context) -> CallToolResult:
        try:
            value = await work(run_ctx)
        except Exception as exc:
            return tool._failure(exc)
        if isinstance(value, CallToolResult):
            return value
        return CallToolResult(content=to_content(value, tool.name))

    if not runs_as_task(tool, request):
        return await shaped(ctx)
    from trimcp.server.app import Server  # the task runs in the server's task runner

    server = ctx.server
    assert isinstance(server, Server)
    created = await call_tool_as_task(server, tool, request, shaped)
    return TaskStarted(content=[], created=created)
