"""Tools registered with ``task_start="explicit"``: the body runs in the request (asks for
input there), then ``start_task`` turns the rest into the task; both eras."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trimcp
from tests.tasks import helpers
from tests.tasks.test_http import BOUND, http_server
from trimcp.client import connect_http
from trimcp.server.tasks import TaskContext, start_task
from trimcp.testing import open_test_client

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def make_app() -> trimcp.Server:
    app = trimcp.Server("explicit")

    @app.tool(task_support="optional", task_start="explicit")
    async def greet_later(ctx: trimcp.Context) -> trimcp.types.CallToolResult:
        """Ask a name now, greet from a task."""
        outcome = await ctx.elicit("Your name?", NAME_FORM, key="name")
        name = outcome.data["name"] if outcome.data else "nobody"

        async def work(run_ctx: trimcp.Context) -> str:
            await trio.sleep(0.01)
            kind = "task" if isinstance(run_ctx, TaskContext) else "request"
            return f"hello {name} from the {kind}"

        return await start_task(ctx, work)

    @app.tool(task_support="optional", task_start="explicit")
    async def fails_later(ctx: trimcp.Context) -> trimcp.types.CallToolResult:
        """The task reports a tool error."""

        async def work(run_ctx: trimcp.Context) -> str:
            raise trimcp.ToolError("no luck")

        return await start_task(ctx, work)

    return app


async def test_2025_input_in_the_request_then_the_task() -> None:
    app = make_app()
    async with (
        app.tasks.open(),
        open_test_client(
            app, mode="legacy", elicitation_handler=helpers.answer_elicitation
        ) as client,
    ):
        handle = await client.call_tool_as_task("greet_later")
        result = await handle.result()
        assert result.content[0].text == "hello Ada from the task"  # type: ignore[union-attr]
        # Called plainly, the work runs at once in the request.
        plain = await client.call_tool("greet_later")
        assert plain.content[0].text == "hello Ada from the request"  # type: ignore[union-attr]
        failed = await client.call_tool_as_task("fails_later")
        assert (await failed.result()).is_error is True
        assert failed.status.status == "failed"


async def test_2026_input_required_rounds_then_the_task() -> None:
    app = make_app()
    with trio.fail_after(BOUND):
        async with (
            http_server(app) as url,
            connect_http(url, elicitation_handler=helpers.answer_elicitation) as client,
        ):
            handle = await client.call_tool_as_task("greet_later")
            assert handle.modern
            assert handle.task_id
            result = await handle.result()
            assert result.content[0].text == "hello Ada from the task"  # type: ignore[union-attr]


async def test_start_task_misuse() -> None:
    app = trimcp.Server("misuse")

    @app.tool(task_support="optional")
    async def inside(ctx: trimcp.Context) -> str:
        """start_task from inside a task is a mistake."""

        async def work(run_ctx: Any) -> str:
            return "x"

        await start_task(ctx, work)
        return "unreachable"

    async with app.tasks.open(), open_test_client(app, mode="legacy") as client:
        handle = await client.call_tool_as_task("inside")
        result = await handle.result()
        assert result.is_error is True


def test_task_start_is_checked_at_registration() -> None:
    app = trimcp.Server("bad")
    options: Any = {"task_start": "sometimes"}

    async def nope() -> str:
        return ""

    with pytest.raises(ValueError, match="task_start"):
        app.add_tool(nope, **options)
