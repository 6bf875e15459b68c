"""call_tool checks structuredContent against the outputSchema of the tool's last listing."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio.testing

from tests.client.helpers import RecordingServer, client_and_server
from trimcp.client import ToolOutputError, connect_memory
from trimcp.errors import INTERNAL_ERROR
from trimcp.session import RequestContext
from trimcp.types import CallToolResult, ListToolsResult, TextContent, Tool

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"sum": {"type": "number"}, "terms": {"type": "array", "items": {}}},
    "required": ["sum"],
}


def tool_server(structured: dict[str, Any]) -> RecordingServer:
    """``add`` declares OUTPUT_SCHEMA; ``plain`` has none; both return ``structured[name]``."""
    server = RecordingServer()

    @server.request_handler("tools/list")
    async def listing(ctx: RequestContext) -> ListToolsResult:
        return ListToolsResult(
            tools=[
                Tool(name="add", input_schema={"type": "object"}, output_schema=OUTPUT_SCHEMA),
                Tool(name="plain", input_schema={"type": "object"}),
            ]
        )

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        value = structured.get(ctx.params.name)
        return CallToolResult(
            content=[TextContent(text="x")],
            structured_content=value,
            is_error=ctx.params.name == "failing",
        )

    return server


async def test_matching_output_passes() -> None:
    async with connect_memory(tool_server({"add": {"sum": 3, "terms": [1, 2]}})) as client:
        await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result.structured_content == {"sum": 3, "terms": [1, 2]}


async def test_mismatching_output_raises_a_clear_error() -> None:
    async with connect_memory(tool_server({"add": {"sum": "three"}})) as client:
        await client.list_tools()
        with pytest.raises(ToolOutputError) as info:
            await client.call_tool("add")
    error = info.value
    assert error.code == INTERNAL_ERROR
    assert error.tool == "add"
    assert (error.path, error.reason) == ("sum", "expected number, got string")
    assert error.result.structured_content == {"sum": "three"}  # kept for the caller
    assert "Tool 'add'" in str(error)
    assert "at sum: expected number" in str(error)


async def test_missing_structured_content_raises() -> None:
    async with connect_memory(tool_server({})) as client:
        await client.list_tools()
        with pytest.raises(ToolOutputError, match="structuredContent is missing"):
            await client.call_tool("add")


async def test_what_is_not_checked() -> None:
    server = tool_server({"add": {"sum": "three"}, "plain": [1], "failing": None})
    async with connect_memory(server) as client:
        # Not listed yet: nothing to check against.
        assert (await client.call_tool("add")).structured_content == {"sum": "three"}
        await client.list_tools()
        assert client.known_tool("add") is not None
        # No output schema.
        assert (await client.call_tool("plain")).structured_content == [1]
    # Validation switched off.
    async with connect_memory(server, validate_output=False) as client:
        await client.list_tools()
        assert (await client.call_tool("add")).structured_content == {"sum": "three"}


async def test_a_tool_error_result_is_not_checked() -> None:
    server = RecordingServer()

    @server.request_handler("tools/list")
    async def listing(ctx: RequestContext) -> ListToolsResult:
        return ListToolsResult(
            tools=[Tool(name="failing", input_schema={}, output_schema=OUTPUT_SCHEMA)]
        )

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        return CallToolResult(content=[TextContent(text="it broke")], is_error=True)

    async with connect_memory(server) as client:
        await client.list_tools()
        assert (await client.call_tool("failing")).is_error is True


async def test_iterating_the_listing_also_teaches_the_schemas() -> None:
    async with connect_memory(tool_server({"add": {}})) as client:
        assert [t.name async for t in client.iter_tools()] == ["add", "plain"]
        with pytest.raises(ToolOutputError, match="at sum: required property missing"):
            await client.call_tool("add")


async def test_list_changed_forgets_the_schemas() -> None:
    async with client_and_server(tool_server({"add": {"sum": "three"}})) as (client, server):
        await client.list_tools()
        with pytest.raises(ToolOutputError):
            await client.call_tool("add")
        await server.send_notification("notifications/tools/list_changed")
        await trio.testing.wait_all_tasks_blocked()
        assert client.known_tool("add") is None
        assert (await client.call_tool("add")).structured_content == {"sum": "three"}


async def test_a_schema_we_cannot_evaluate_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = RecordingServer()

    @server.request_handler("tools/list")
    async def listing(ctx: RequestContext) -> ListToolsResult:
        schema = {"$ref": "https://example.com/out.json"}
        return ListToolsResult(tools=[Tool(name="t", input_schema={}, output_schema=schema)])

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        return CallToolResult(content=[], structured_content={"a": 1})

    with caplog.at_level(logging.WARNING, logger="trimcp.client"):
        async with connect_memory(server) as client:
            await client.list_tools()
            assert (await client.call_tool("t")).structured_content == {"a": 1}
    assert any("not validating the output of tool 't'" in r.getMessage() for r in caplog.records)
