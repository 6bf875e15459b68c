"""Benchmark server: the official SDK's LOW-LEVEL ``Server`` with the suite's full tool set,
over stdio or Streamable HTTP (uvicorn).

Same tools as ``trimcp_server.py``: ``echo(text)``, ``sleep(ms)``, ``stats()`` (JSON
``{"live", "started", "finished", "cancelled"}`` over echo/sleep/filler handlers) and,
with ``--tools N``, fillers ``tool_0 .. tool_{N-1}``. ``--page-size P`` paginates
``tools/list`` with offset cursors (the SDK has no pagination helper, so this is what a
user of it writes). ``--http PORT`` serves ``server.streamable_http_app()`` on 127.0.0.1
with uvicorn (``--json-response`` for JSON answers instead of SSE); ``--check`` only
reports availability (exit status 3 when uvicorn is missing for ``--http``).

Logging at WARNING, like every benchmark server.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

EXIT_UNAVAILABLE = 3

STATS = {"started": 0, "finished": 0, "cancelled": 0}


def _snapshot() -> str:
    return json.dumps({"live": STATS["started"] - STATS["finished"], **STATS})


def build(tools: int, page_size: int | None) -> Any:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"type": "object", "properties": properties, "required": required}

    echo_schema = schema({"text": {"type": "string"}}, ["text"])
    table = [
        types.Tool(name="echo", description="Echo the text back.", input_schema=echo_schema),
        types.Tool(
            name="sleep",
            description="Sleep for ms milliseconds.",
            input_schema=schema({"ms": {"type": "number", "minimum": 0}}, ["ms"]),
        ),
        types.Tool(name="stats", description="Handler counts.", input_schema=schema({}, [])),
    ]
    fillers = {f"tool_{i}" for i in range(tools)}
    table += [
        types.Tool(
            name=f"tool_{i}",
            description=f"Filler tool tool_{i}: echoes text.",
            input_schema=echo_schema,
        )
        for i in range(tools)
    ]

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if page_size is None:
            return types.ListToolsResult(tools=table)
        cursor = params.cursor if params is not None else None
        try:
            start = int(cursor) if cursor is not None else 0
        except ValueError:
            raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor") from None
        end = start + page_size
        return types.ListToolsResult(
            tools=table[start:end], next_cursor=str(end) if end < len(table) else None
        )

    def text(value: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "stats":
            return text(_snapshot())
        STATS["started"] += 1
        try:
            if params.name == "sleep":
                await anyio.sleep(float(arguments.get("ms", 0)) / 1000.0)
                return text("slept")
            if params.name == "echo" or params.name in fillers:
                return text(str(arguments.get("text", "")))
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        except anyio.get_cancelled_exc_class():
            STATS["cancelled"] += 1
            raise
        finally:
            STATS["finished"] += 1

    return Server("bench-sdk-lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--check", action="store_true")
    opts = parser.parse_args(argv)
    if opts.http is not None:
        try:
            import uvicorn
        except ImportError as exc:
            print(f"sdk_lowlevel_many: uvicorn is not importable: {exc}", file=sys.stderr)
            return EXIT_UNAVAILABLE
    if opts.check:
        return 0
    logging.basicConfig(level=logging.WARNING)
    server = build(opts.tools, opts.page_size)
    if opts.http is not None:
        app = server.streamable_http_app(json_response=opts.json_response, max_sessions=None)
        uvicorn.run(app, host="127.0.0.1", port=opts.http, log_level="warning", access_log=False)
        return 0

    import anyio
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
    return 0


if __name__ == "__main__":
    sys.exit(main())
