"""A trimcp low-level server over stdio, the counterpart of ``sdk_stdio_server.py``.

Tools: ``echo(text)``, ``add(a, b)`` (structured + text), ``slow(seconds)`` (sends one
progress notification when it starts; logs ``started/cancelled/finished <id>`` to the file
named by ``$TRIMCP_PEER_LOG``), ``progress(steps)``. Used by the interop tests, where the
official SDK's client drives it.
"""

from __future__ import annotations

import os
from typing import Any

import trio
import trio.lowlevel

from trimcp.errors import INVALID_PARAMS, McpError
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
    Implementation(name="trimcp-peer", version="1.0.0"),
    capabilities=ServerCapabilities(tools=ToolsCapability()),
)

TOOLS = [
    Tool(
        name="echo",
        description="Echo the text back.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    ),
    Tool(
        name="add",
        description="Add two numbers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        output_schema={
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"],
        },
    ),
    Tool(
        name="slow",
        description="Sleep, reporting the start through progress.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
    ),
    Tool(
        name="progress",
        description="Report progress in steps.",
        input_schema={"type": "object", "properties": {"steps": {"type": "integer"}}},
    ),
]


def _log(line: str) -> None:
    path = os.environ.get("TRIMCP_PEER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(line + "\n")


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)])


@server.request_handler("tools/list")
async def list_tools(ctx: RequestContext) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


@server.request_handler("tools/call")
async def call_tool(ctx: RequestContext) -> CallToolResult:
    name = ctx.params.name
    args: dict[str, Any] = ctx.params.arguments or {}
    if name == "echo":
        return _text(str(args.get("text", "")))
    if name == "add":
        total = args["a"] + args["b"]
        return CallToolResult(
            content=[TextContent(text=str(total))], structured_content={"sum": total}
        )
    if name == "slow":
        _log(f"started {ctx.request_id}")
        await ctx.report_progress(0, 1, "started")
        try:
            await trio.sleep(float(args.get("seconds", 1)))
        except trio.Cancelled:
            _log(f"cancelled {ctx.request_id}")
            raise
        _log(f"finished {ctx.request_id}")
        return _text("done")
    if name == "progress":
        steps = int(args.get("steps", 3))
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            await trio.lowlevel.checkpoint()
        return _text(f"{steps} steps")
    raise McpError(INVALID_PARAMS, f"Unknown tool: {name}")


if __name__ == "__main__":
    trio.run(serve_stdio, server)
