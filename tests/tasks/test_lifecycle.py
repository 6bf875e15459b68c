"""Tasks (2025-11-25) end to end in memory: creation, polling, results, input, listing."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trimcp
from tests.tasks.helpers import make_app, serve
from trimcp import serde
from trimcp.errors import METHOD_NOT_FOUND, McpError
from trimcp.server.tasks import TaskOptions
from trimcp.testing import open_test_client
from trimcp.types import (
    RELATED_TASK_META_KEY,
    CallToolRequestParams,
    GetTaskRequestParams,
    Implementation,
    TaskMetadata,
    TaskStatusNotificationParams,
)


async def test_capability_and_tool_execution_are_declared() -> None:
    app = make_app()
    async with serve(app) as client:
        tasks = client.server_capabilities.tasks
        assert tasks is not None
        assert tasks.requests is not None
        assert tasks.requests.tools is not None
        assert tasks.requests.tools.call == {}
        assert tasks.list_ == {}
        assert tasks.cancel == {}
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["sleep"].execution is not None
        assert listed["sleep"].execution.task_support == "optional"
        assert listed["plain"].execution is None


async def test_no_task_tools_no_capability() -> None:
    app = trimcp.Server("plain")

    @app.tool()
    async def hello() -> str:
        return "hi"

    async with open_test_client(app) as client:
        assert client.server_capabilities.tasks is None
        with pytest.raises(trimcp.LocalProtocolError, match=r"tasks\.requests\.tools\.call"):
            await client.call_tool_as_task("hello")


async def test_create_poll_and_fetch_the_result(autojump_clock: trio.abc.Clock) -> None:
    app = make_app()
    async with serve(app) as client:
        start = trio.current_time()
        handle = await client.call_tool_as_task("sleep", {"seconds": 30}, ttl=600)
        # Durably created: tasks/get finds it before any work was done.
        assert handle.status.status == "working"
        assert handle.status.ttl == 600_000
        assert handle.status.poll_interval == 1000
        assert (await handle.refresh()).status == "working"
        assert trio.current_time() == start  # the handle came back at once
        seen = [task.status async for task in handle]
        assert seen == ["working", "completed"]
        result = await handle.result()
        assert result.content[0].text == "slept 30"  # type: ignore[union-attr]
        assert result.meta == {RELATED_TASK_META_KEY: {"taskId": handle.task_id}}
        # tasks/result of a finished task answers at once, again.
        assert (await handle.result()).content == result.content


async def test_plain_call_of_optional_tool_still_works() -> None:
    app = make_app()
    async with serve(app) as client:
        result = await client.call_tool("sleep", {"seconds": 0})
        assert result.content[0].text == "slept 0"  # type: ignore[union-attr]


async def test_task_support_is_enforced() -> None:
    app = make_app()
    async with serve(app) as client:
        with pytest.raises(McpError) as forbidden:
            await client.call_tool_as_task("plain")
        assert forbidden.value.code == METHOD_NOT_FOUND
        assert "forbidden" in forbidden.value.message
        with pytest.raises(McpError) as required:
            await client.call_tool("ask_name")
        assert required.value.code == METHOD_NOT_FOUND
        assert "must run as a task" in required.value.message


async def test_older_revisions_ignore_the_task_parameter() -> None:
    app = make_app()
    async with serve(app, protocol_version="2025-06-18") as client:
        params = CallToolRequestParams(
            name="sleep", arguments={"seconds": 0}, task=TaskMetadata(ttl=1000)
        )
        raw = serde.unstructure(params)
        result = await client.session.send_request(
            "tools/call", {"name": "sleep", "arguments": raw["arguments"]}
        )
        assert result.content[0].text == "slept 0"
        # A "required" tool runs normally for a client that cannot do tasks.
        assert (await client.call_tool("ask_name")).content[0].text == "hello Ada"  # type: ignore[union-attr]


async def test_tool_error_fails_the_task_with_its_result() -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task("fail")
        final = await handle.wait()
        assert final.status == "failed"
        assert final.status_message == "it broke"
        result = await handle.result()  # exactly what tools/call would have returned
        assert result.is_error is True


async def test_elicitation_inside_a_task(autojump_clock: trio.abc.Clock) -> None:
    app = make_app()
    asked: list[Any] = []

    async def elicit(ctx: Any, params: Any) -> Any:
        asked.append(params)
        from trimcp.types import ElicitResult

        return ElicitResult(action="accept", content={"name": "Grace"})

    async with serve(app, elicitation_handler=elicit) as client:
        handle = await client.call_tool_as_task("ask_name")
        statuses = [task.status async for task in handle]
        assert "input_required" in statuses
        assert statuses[-1] == "completed"
        assert (await handle.result()).content[0].text == "hello Grace"  # type: ignore[union-attr]
        # The elicitation carried the related-task metadata.
        assert asked[0].meta == {RELATED_TASK_META_KEY: {"taskId": handle.task_id}}


async def test_sampling_inside_a_task() -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task("haiku", {"topic": "frogs"})
        assert (await handle.result()).content[0].text == "old pond, frog"  # type: ignore[union-attr]


async def test_elicitation_without_handler_becomes_tool_error() -> None:
    app = make_app()
    async with serve(app, elicitation_handler=None) as client:
        handle = await client.call_tool_as_task("ask_name")
        result = await handle.result()
        assert result.is_error is True
        assert "elicitation" in result.content[0].text  # type: ignore[union-attr]


async def test_status_notifications_reach_the_creating_client(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app()
    notes: list[TaskStatusNotificationParams] = []

    async def on_note(method: str, params: Any) -> None:
        if method == "notifications/tasks/status":
            notes.append(params)

    async with serve(app, on_notification=on_note) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 5})
        await handle.wait()
        await client.ping()
    assert [note.status for note in notes] == ["completed"]
    assert notes[0].task_id == handle.task_id


async def test_list_tasks_pages_and_shows_only_the_owners_tasks() -> None:
    app = make_app(TaskOptions(page_size=2), task_owner=lambda ctx: ctx.client_info.name)
    async with serve(app, client_info=Implementation(name="alice", version="1")) as alice:
        ids = [(await alice.call_tool_as_task("sleep", {"seconds": 0})).task_id for _ in range(5)]
        async with open_test_client(
            app, client_info=Implementation(name="bob", version="1")
        ) as bob:
            await bob.call_tool_as_task("sleep", {"seconds": 0})
            assert len((await bob.list_tasks()).tasks) == 1
        listed: list[str] = []
        cursor = None
        while True:
            page = await alice.list_tasks(cursor)
            assert len(page.tasks) <= 2
            listed += [task.task_id for task in page.tasks]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert listed == ids


async def test_get_result_is_not_task_related_metadata() -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 0})
        got = await client.session.send_request(
            "tasks/get", GetTaskRequestParams(task_id=handle.task_id)
        )
        assert got.meta is None
        assert got.task_id == handle.task_id
