"""The ``io.modelcontextprotocol/tasks`` extension (SEP-2663) on a 2026-07-28 server.

What differs from 2025-11-25 (:mod:`~trimcp.server.tasks.methods`), on the same
:class:`~trimcp.tasks.manager.TaskManager` and the same tool bodies:

- the server decides: a ``tools/call`` of a tool with ``task_support`` optional or
  required from a client whose request declares the extension (in its ``_meta``
  capabilities) becomes a task, answered with a flat ``CreateTaskResult``
  (``resultType: "task"``, ``ttlMs``, ``pollIntervalMs``); without the extension an
  optional tool runs synchronously and a required one is refused with ``-32021``;
- ``tasks/get`` returns the task with its ``result`` or ``error`` inlined, and while it is
  ``input_required`` the questions it waits on as ``inputRequests``; ``tasks/update``
  delivers ``inputResponses``; ``tasks/cancel`` answers an empty acknowledgement (also
  for a task that already ended); every one of them needs the extension (``-32021``);
- a tool error (``isError``) completes the task; ``failed`` is for JSON-RPC errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    McpError,
)
from trimcp.protocol import tasks_ext
from trimcp.server.extensions import Extension
from trimcp.session.context import RequestContext
from trimcp.stores.base import StoreUnavailable
from trimcp.tasks.store import TaskRecord

if TYPE_CHECKING:
    from trimcp.server.app import Server
    from trimcp.tasks.manager import TaskManager


def declared(ctx: RequestContext) -> bool:
    """Whether this request's client declared the tasks extension."""
    negotiated = ctx.negotiated
    return negotiated is not None and tasks_ext.declares_extension(negotiated.client_capabilities)


def missing_extension(what: str) -> McpError:
    return McpError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"{what} needs the {tasks_ext.EXTENSION_ID} extension: declare it in the "
        "request's client capabilities (extensions)",
        tasks_ext.required_capability_data(),
    )


def runs_as_task(support: str, tool_name: str, ctx: RequestContext) -> bool:
    """The server's decision for a 2026 ``tools/call`` (see the module docs)."""
    if support == "forbidden":
        return False
    if declared(ctx):
        return True
    if support == "required":
        raise missing_extension(f"Tool {tool_name!r} runs only as a task; it")
    return False


#: The extension as a server declares it (no settings), through the same
#: ``capabilities.extensions`` builder as every :class:`Extension` a server adds; its
#: methods (``tasks/get``, ``tasks/update``, ``tasks/cancel``) are core methods of the
#: method table, served in :func:`tasks_get` and the functions below.
EXTENSION: Final = Extension(tasks_ext.EXTENSION_ID)


def task_object(record: TaskRecord) -> dict[str, Any]:
    """The extension's ``Task`` (wire form) of ``record``."""
    from trimcp.server.tasks.methods import iso

    task: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": iso(record.created_at),
        "lastUpdatedAt": iso(record.updated_at),
        "ttlMs": record.ttl_ms,
    }
    if record.status_message is not None:
        task["statusMessage"] = record.status_message
    if record.poll_interval_ms is not None:
        task["pollIntervalMs"] = record.poll_interval_ms
    return task


def create_result(record: TaskRecord) -> dict[str, Any]:
    """The flat ``CreateTaskResult`` (``resultType: "task"``)."""
    return {"resultType": tasks_ext.RESULT_TYPE_TASK, **task_object(record)}


def detailed_task(manager: TaskManager, record: TaskRecord) -> dict[str, Any]:
    """``tasks/get``'s answer: the task with its result, error or input requests."""
    task = task_object(record)
    if record.status == "completed" and record.result is not None:
        task["result"] = record.result
    elif record.status == "failed":
        task["error"] = record.error or {"code": -32603, "message": "Internal error"}
    elif record.status == "input_required":
        here = manager.pending_inputs(record.task_id)
        if here:
            task["inputRequests"] = {
                item.key: {"method": item.method, "params": item.params}
                for item in here
                if not item.done
            }
        else:  # running on another replica: the questions it stored
            task["inputRequests"] = dict(record.input_requests or {})
    return task


def _task_id(ctx: RequestContext) -> str:
    params = ctx.params
    task_id = params.get("taskId") if isinstance(params, dict) else None
    if not isinstance(task_id, str):
        raise McpError(
            INVALID_PARAMS,
            f"Invalid params for {ctx.method}: taskId must be a string",
            {"path": "taskId", "reason": "expected a string"},
        )
    return task_id


def _gate(ctx: RequestContext) -> str:
    if not declared(ctx):
        raise missing_extension(ctx.method)
    return _task_id(ctx)


async def tasks_get(server: Server, owner: str | None, ctx: RequestContext) -> dict[str, Any]:
    task_id = _gate(ctx)
    record = await server.tasks.find(task_id, owner)
    return detailed_task(server.tasks, record)


async def tasks_update(server: Server, owner: str | None, ctx: RequestContext) -> dict[str, Any]:
    task_id = _gate(ctx)
    responses = ctx.params.get("inputResponses")
    if not isinstance(responses, dict):
        raise McpError(
            INVALID_PARAMS,
            "Invalid params for tasks/update: inputResponses must be an object",
            {"path": "inputResponses", "reason": "expected an object"},
        )
    await server.tasks.find(task_id, owner)
    try:
        await server.tasks.answer_anywhere(task_id, responses)
    except StoreUnavailable as error:
        raise McpError(INTERNAL_ERROR, f"Could not pass the answers on: {error}") from None
    return {}


async def tasks_cancel(server: Server, owner: str | None, ctx: RequestContext) -> dict[str, Any]:
    task_id = _gate(ctx)
    record = await server.tasks.find(task_id, owner)
    if not record.terminal:
        await server.tasks.cancel(task_id, owner)
    return {}  # an acknowledgement, also for a task that already ended
