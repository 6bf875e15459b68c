"""Benchmark server: the official SDK's LOW-LEVEL ``Server`` serving ``echo`` over stdio.

Run: ``python benchmarks/servers/sdk_lowlevel.py``. Logging at WARNING, like every
benchmark server.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

ECHO_TOOL = types.Tool(
    name="echo",
    description="Return the given text unchanged.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO_TOOL])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = (params.arguments or {}).get("text")
    if params.name != "echo" or not isinstance(text, str):
        raise MCPError(code=types.INVALID_PARAMS, message="expected echo(text: str)")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def main() -> None:
    server: Server[Any] = Server(
        "bench-sdk-lowlevel", on_list_tools=list_tools, on_call_tool=call_tool
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    anyio.run(main)
