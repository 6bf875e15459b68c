"""The official SDK (mcp 2.x) client runs a tool as a task (2025-11-25) with a progress
token, and reports every ``notifications/progress`` it received, with when it came
(before or after the ``CreateTaskResult``, before or after the task's terminal status).

Usage::

    python tests/peers/sdk_task_progress_client.py -- <server argv...>

Steps: initialize; ``tools/call`` of ``count(steps=3)`` with ``task: {ttl}`` and a
progress callback (so the SDK's dispatcher sends ``_meta.progressToken``); poll
``tasks/get`` until a terminal status; ``tasks/result``. The SDK's ``message_handler``
sees every progress notification (its dispatcher tees them there), so the report is what
came on the wire. ``callback_progress`` is what the SDK's own progress callback got (it
forgets the token once the request is answered, so nothing for a task).
Prints a JSON report; exit status 0 when every step ran, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client

TERMINAL = ("completed", "failed", "cancelled")


async def _exercise(session: ClientSession, report: dict[str, Any]) -> None:
    phase = {"now": "creating"}
    wire: list[dict[str, Any]] = []
    callback: list[float] = []
    report["wire_progress"] = wire
    report["callback_progress"] = callback

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ProgressNotification):
            params = message.params
            wire.append(
                {
                    "token": params.progress_token,
                    "progress": params.progress,
                    "total": params.total,
                    "message": params.message,
                    "phase": phase["now"],
                }
            )

    session._message_handler = on_message  # set before any notification can come

    init = await session.initialize()
    report["protocol_version"] = init.protocol_version
    tasks = init.capabilities.tasks
    report["tasks_capability"] = tasks.model_dump(mode="json", by_alias=True) if tasks else None

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        callback.append(progress)

    # The SDK's typed send_request checks a tools/call result as CallToolResult, so the
    # task-augmented call goes through its dispatcher (the same wire path, progress token
    # and callback included).
    params = {"name": "count", "arguments": {"steps": 3}, "task": {"ttl": 60_000}}
    raw = await session._dispatcher.send_raw_request(
        "tools/call", params, {"on_progress": on_progress, "timeout": 20}
    )
    created = types.CreateTaskResult.model_validate(raw)
    phase["now"] = "running"
    task_id = created.task.task_id
    report["task_id"] = task_id
    statuses = [created.task.status]
    with anyio.fail_after(20):
        while statuses[-1] not in TERMINAL:
            await anyio.sleep(0.05)
            got = await session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)),
                types.GetTaskResult,
            )
            statuses.append(got.status)
    phase["now"] = "ended"
    report["statuses"] = statuses
    payload = await session.send_request(
        types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
        types.CallToolResult,
    )
    report["result"] = [c.text for c in payload.content if isinstance(c, types.TextContent)]
    await anyio.sleep(0.3)  # anything late would be recorded as "ended"


async def _run(server_argv: list[str], report: dict[str, Any]) -> None:
    params = StdioServerParameters(
        command=server_argv[0], args=server_argv[1:], env=dict(os.environ)
    )
    with anyio.fail_after(60):
        async with (
            stdio_client(params) as (read_stream, write_stream),
            ClientSession(read_stream, write_stream, read_timeout_seconds=20) as session,
        ):
            await _exercise(session, report)


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: sdk_task_progress_client.py -- <server argv...>", file=sys.stderr)
        return 2
    server_argv = argv[argv.index("--") + 1 :]
    report: dict[str, Any] = {"server_argv": server_argv}
    status = 0
    try:
        anyio.run(_run, server_argv, report)
    except BaseException as exc:  # report every failure as JSON
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
        status = 1
    json.dump(report, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
