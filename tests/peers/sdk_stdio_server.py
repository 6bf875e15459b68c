"""An official-SDK (mcp 2.x) LOW-LEVEL server over stdio, used as an interop peer.

Run: ``python tests/peers/sdk_stdio_server.py`` (speaks newline-delimited JSON-RPC on
stdin/stdout; logs at WARNING to stderr).

Tools:
- ``echo(text)``: returns ``text`` as one text block.
- ``add(a, b)``: returns the sum as structured content ``{"result": a + b}`` and as text.
- ``slow(seconds)``: sleeps. It appends ``started <request id>`` to the file named by
  ``TRIMCP_PEER_LOG`` (if set) and then, if the request carried a progressToken, sends
  one progress notification (progress=0, message="started"), so a client can wait for
  the start without polling. If the handler is cancelled it appends
  ``cancelled <request id>`` before re-raising; on completion ``finished <request id>``.
- ``progress(steps)``: sends ``steps`` progress notifications when the request carried a
  progressToken (the SDK makes ``report_progress`` a no-op otherwise).

Plus one resource (``peer://greeting``) and one prompt (``greet(name)``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

SERVER_NAME = "sdk-stdio-peer"
SERVER_VERSION = "0.1.0"
GREETING_URI = "peer://greeting"
GREETING_TEXT = "hello from the SDK peer"

_TOOLS = [
    types.Tool(
        name="echo",
        description="Return the given text unchanged.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    ),
    types.Tool(
        name="add",
        description="Add two numbers; structured and text result.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        output_schema={
            "type": "object",
            "properties": {"result": {"type": "number"}},
            "required": ["result"],
        },
    ),
    types.Tool(
        name="slow",
        description="Sleep for `seconds`; logs start and cancellation to $TRIMCP_PEER_LOG.",
        input_schema={
            "type": "object",
            "properties": {"seconds": {"type": "number", "minimum": 0}},
            "required": ["seconds"],
        },
    ),
    types.Tool(
        name="progress",
        description="Send `steps` progress notifications, then return.",
        input_schema={
            "type": "object",
            "properties": {"steps": {"type": "integer", "minimum": 0}},
            "required": ["steps"],
        },
    ),
]


def _peer_log(line: str) -> None:
    """Append one line to $TRIMCP_PEER_LOG; synchronous so it survives a cancelled task."""
    path = os.environ.get("TRIMCP_PEER_LOG")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()


def _text(value: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=value)]


def _arg(args: dict[str, Any], name: str, kinds: tuple[type, ...]) -> Any:
    value = args.get(name)
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise MCPError(code=INVALID_PARAMS, message=f"argument {name!r} missing or of wrong type")
    return value


async def _list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_TOOLS)


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    match params.name:
        case "echo":
            return types.CallToolResult(content=_text(_arg(args, "text", (str,))))
        case "add":
            total = _arg(args, "a", (int, float)) + _arg(args, "b", (int, float))
            return types.CallToolResult(
                content=_text(str(total)), structured_content={"result": total}
            )
        case "slow":
            return await _slow(ctx, float(_arg(args, "seconds", (int, float))))
        case "progress":
            steps = int(_arg(args, "steps", (int,)))
            for i in range(1, steps + 1):
                await ctx.session.report_progress(float(i), float(steps), f"step {i}/{steps}")
            meta = ctx.meta or {}
            # The SDK's meta TypedDict may surface the key by field name or by wire alias.
            has_token = "progress_token" in meta or "progressToken" in meta
            return types.CallToolResult(
                content=_text(f"done {steps}"),
                structured_content={"steps": steps, "progress_token_seen": has_token},
            )
    raise MCPError(code=INVALID_PARAMS, message=f"unknown tool: {params.name}")


async def _slow(ctx: Any, seconds: float) -> types.CallToolResult:
    marker = str(ctx.request_id)
    _peer_log(f"started {marker}")
    try:
        await ctx.session.report_progress(0.0, None, "started")
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _peer_log(f"cancelled {marker}")
        raise
    _peer_log(f"finished {marker}")
    return types.CallToolResult(content=_text(f"slept {seconds}"))


async def _list_resources(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[
            types.Resource(name="greeting", uri=GREETING_URI, mime_type="text/plain"),
        ]
    )


async def _read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    if str(params.uri) != GREETING_URI:
        raise MCPError(code=INVALID_PARAMS, message=f"unknown resource: {params.uri}")
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(uri=GREETING_URI, mime_type="text/plain", text=GREETING_TEXT)
        ]
    )


async def _list_prompts(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(
                name="greet",
                description="Ask the model to greet someone.",
                arguments=[types.PromptArgument(name="name", required=True)],
            )
        ]
    )


async def _get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name != "greet":
        raise MCPError(code=INVALID_PARAMS, message=f"unknown prompt: {params.name}")
    who = (params.arguments or {}).get("name")
    if not who:
        raise MCPError(code=INVALID_PARAMS, message="argument 'name' is required")
    return types.GetPromptResult(
        description="A greeting",
        messages=[
            types.PromptMessage(
                role="user", content=types.TextContent(type="text", text=f"Please greet {who}.")
            )
        ],
    )


def build_server() -> Server[Any]:
    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
        on_list_resources=_list_resources,
        on_read_resource=_read_resource,
        on_list_prompts=_list_prompts,
        on_get_prompt=_get_prompt,
    )


async def _main() -> None:
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    anyio.run(_main)
