"""Tasks over Streamable HTTP (serve_http on a loopback socket, trimcp's client): the task
runner is entered with the server's lifespan, so a task outlives the HTTP session that
created it, its questions reach the next client through ``tasks/result``, and the server's
shutdown records the tasks it had to cancel.

The real clock runs here; every wait is bounded by ``fail_after`` and no test asserts a time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import trimcp
from tests.tasks import helpers
from tests.tasks.helpers import make_app
from trimcp.client import connect_http
from trimcp.server.tasks import TaskOptions
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 30.0


@asynccontextmanager
async def http_server(app: trimcp.Server, **config: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve_http(
                app, port=0, config=HttpServerConfig(**config), task_status=task_status
            )
        )
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_task_over_http_with_input(json_response: bool) -> None:
    app = make_app()
    with trio.fail_after(BOUND):
        async with (
            http_server(app, json_response=json_response) as url,
            connect_http(
                url, mode="legacy", elicitation_handler=helpers.answer_elicitation
            ) as client,
        ):
            handle = await client.call_tool_as_task("ask_name")
            result = await handle.result()
            assert result.content[0].text == "hello Ada"  # type: ignore[union-attr]
            quick = await client.call_tool_as_task("sleep", {"seconds": 0})
            assert (await quick.wait()).status == "completed"


async def test_task_outlives_the_http_session_that_created_it() -> None:
    # The same user in both sessions (without it, the task is the first session's only).
    app = make_app(task_owner=lambda ctx: "the one user")
    with trio.fail_after(BOUND):
        async with http_server(app) as url:
            async with connect_http(
                url, mode="legacy", elicitation_handler=helpers.answer_elicitation
            ) as first:
                task_id = (await first.call_tool_as_task("ask_name")).task_id
            # The first session is DELETEd; the task waits for its answer meanwhile.
            assert app.tasks.live_count() == 1
            async with connect_http(
                url, mode="legacy", elicitation_handler=helpers.answer_elicitation
            ) as second:
                handle = await second.get_task(task_id)
                result = await handle.result()
                assert result.content[0].text == "hello Ada"  # type: ignore[union-attr]


async def test_http_server_shutdown_cancels_and_records_running_tasks() -> None:
    app = make_app(TaskOptions(shutdown_grace=0.1))
    with trio.fail_after(BOUND):
        async with http_server(app) as url, connect_http(url, mode="legacy") as client:
            task_id = (await client.call_tool_as_task("sleep", {"seconds": 3600})).task_id
    record = await app.tasks.store.get(task_id)
    assert record is not None
    assert record.status == "cancelled"
    assert record.status_message == "The server shut down before the task finished"
    assert app.tasks.live_count() == 0


# --- 2026-07-28: the io.modelcontextprotocol/tasks extension ---------------------------------


async def test_2026_task_with_input_through_tasks_get_and_update() -> None:
    app = make_app()
    with trio.fail_after(BOUND):
        async with (
            http_server(app) as url,
            connect_http(url, elicitation_handler=helpers.answer_elicitation) as client,
        ):
            assert client.protocol_version == "2026-07-28"
            extensions = client.server_capabilities.extensions or {}
            assert "io.modelcontextprotocol/tasks" in extensions
            assert client.server_capabilities.tasks is None
            handle = await client.call_tool_as_task("ask_name")
            assert handle.modern
            statuses = [task.status async for task in handle]
            assert "input_required" in statuses
            assert statuses[-1] == "completed"
            result = await handle.result()
            assert result.content[0].text == "hello Ada"  # type: ignore[union-attr]
            with pytest.raises(trimcp.LocalProtocolError, match="tasks/list"):
                await client.list_tasks()


async def test_2026_call_tool_waits_for_a_task_the_server_chose() -> None:
    app = make_app()
    with trio.fail_after(BOUND):
        async with http_server(app) as url, connect_http(url) as client:
            # The client declares the extension, so the server runs it as a task;
            # call_tool follows the task and returns the tool's result.
            result = await client.call_tool("sleep", {"seconds": 0})
            assert result.content[0].text == "slept 0"  # type: ignore[union-attr]
            failed = await client.call_tool("fail")
            assert failed.is_error is True  # 2026: a tool error completes the task


async def test_2026_cancel_and_resume_by_id() -> None:
    app = make_app()
    with trio.fail_after(BOUND):
        async with http_server(app) as url:
            async with connect_http(url) as first:
                handle = await first.call_tool_as_task("sleep", {"seconds": 3600})
                task_id = handle.task_id
            async with connect_http(url) as second:
                again = await second.get_task(task_id)
                assert again.status.status == "working"
                after = await again.cancel()
                assert after.status == "cancelled"
                with pytest.raises(trimcp.McpError, match="cancelled"):
                    await again.result()
                await again.cancel()  # 2026: acknowledged again, no error


async def test_2026_unknown_task_and_missing_extension() -> None:
    app = make_app()
    with trio.fail_after(BOUND):
        async with http_server(app) as url, connect_http(url) as client:
            with pytest.raises(trimcp.McpError) as unknown:
                await client.get_task("nope")
            assert unknown.value.code == -32602
            # Without the extension in the request's capabilities: -32021.
            with pytest.raises(trimcp.McpError) as missing:
                await client.session.send_request(
                    "tasks/get",
                    {
                        "taskId": "nope",
                        "_meta": {
                            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": {},
                            "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"},
                        },
                    },
                )
            assert missing.value.code == -32021


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_task_progress_over_http(json_response: bool) -> None:
    # The request that created the task is answered at once; the task's progress comes
    # later under its token, on the session's GET stream.
    app = trimcp.Server("progress-http")

    @app.tool(task_support="optional")
    async def count(steps: int, ctx: trimcp.Context) -> str:
        for step in range(1, steps + 1):
            await trio.sleep(0.01)
            await ctx.report_progress(step, steps)
        return f"counted to {steps}"

    updates: list[float] = []
    last = trio.Event()

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)
        if progress == total:
            last.set()

    with trio.fail_after(BOUND):
        async with (
            http_server(app, json_response=json_response) as url,
            connect_http(url, mode="legacy") as client,
        ):
            handle = await client.call_tool_as_task("count", {"steps": 3}, on_progress=on_progress)
            result = await handle.result()
            assert result.content[0].text == "counted to 3"  # type: ignore[union-attr]
            await last.wait()
            assert updates == [1, 2, 3]
