"""trimcp's low-level server with the benchmark's one tool, ``echo(text) -> text``, over stdio."""

from __future__ import annotations

import logging

import trio

from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext
from trimcp.transports.stdio import serve_stdio
from trimcp.types import (
    CallToolResult,
    Implementation,
    ListToolsResult,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolsCapability,
)

server = LowLevelServer(
    Implementation(name="trimcp-bench", version="1.0.0"),
    capabilities=ServerCapabilities(tools=ToolsCapability()),
)
ECHO = Tool(
    name="echo",
    description="Echo the text back.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


@server.request_handler("tools/list")
async def list_tools(ctx: RequestContext) -> ListToolsResult:
    return ListToolsResult(tools=[ECHO])


@server.request_handler("tools/call")
async def call_tool(ctx: RequestContext) -> CallToolResult:
    arguments = ctx.params.arguments or {}
    return CallToolResult(content=[TextContent(text=arguments.get("text", ""))])


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    trio.run(serve_stdio, server)
