"""open_test_client: a server under test and a client, in memory, under the autojump clock."""

from __future__ import annotations

import pytest
import trio

from trimcp import Context, McpError, Server
from trimcp.errors import INVALID_PARAMS
from trimcp.server.lowlevel import LowLevelServer
from trimcp.testing import open_test_client
from trimcp.types import (
    CallToolResult,
    Implementation,
    ServerCapabilities,
    TextContent,
    ToolsCapability,
)


def make_app(events: list[str]) -> Server:
    app = Server("under-test", version="9.9")

    @app.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @app.tool()
    async def nap(hours: float, ctx: Context) -> str:
        """Sleep for hours (virtual time in tests)."""
        events.append("nap started")
        try:
            await trio.sleep(hours * 3600)
        except trio.Cancelled:
            events.append("nap cancelled")
            raise
        return "rested"

    return app


async def test_calls_a_tool_of_a_trimcp_server(autojump_clock: trio.abc.Clock) -> None:
    async with open_test_client(make_app([])) as client:
        assert client.server_info.name == "under-test"
        assert [tool.name async for tool in client.iter_tools()] == ["add", "nap"]
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.structured_content == {"result": 5}


async def test_long_sleeps_run_in_virtual_time(autojump_clock: trio.abc.Clock) -> None:
    start = trio.current_time()
    async with open_test_client(make_app([])) as client:
        result = await client.call_tool("nap", {"hours": 5}, timeout=None)
    assert isinstance(result.content[0], TextContent)
    assert result.content[0].text == "rested"
    assert trio.current_time() - start >= 5 * 3600  # the clock jumped; no real wait


async def test_cancelling_the_call_cancels_the_server_handler(
    autojump_clock: trio.abc.Clock,
) -> None:
    events: list[str] = []
    async with open_test_client(make_app(events)) as client:
        with trio.move_on_after(10) as scope:
            await client.call_tool("nap", {"hours": 1})
        assert scope.cancelled_caught
        await client.ping()  # the cancel notification was read before this answer
    assert events == ["nap started", "nap cancelled"]


async def test_list_changed_reaches_the_client(autojump_clock: trio.abc.Clock) -> None:
    # A trimcp.Server is served with its notification delivery running alongside.
    app = make_app([])
    changed = trio.Event()
    async with open_test_client(app, on_tools_list_changed=changed.set):
        app.add_tool(lambda: "late", name="late")
        with trio.fail_after(5):
            await changed.wait()


async def test_a_low_level_server_works_too() -> None:
    server = LowLevelServer(
        Implementation(name="low", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )

    @server.request_handler("tools/call")
    async def call(ctx: object) -> CallToolResult:
        raise McpError(INVALID_PARAMS, "no such tool")

    async with open_test_client(server) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("missing")
    assert caught.value.code == INVALID_PARAMS


async def test_an_error_in_the_block_comes_out_as_itself() -> None:
    with pytest.raises(ValueError, match="boom"):
        async with open_test_client(make_app([])):
            raise ValueError("boom")
