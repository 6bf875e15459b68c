"""Talk to two MCP servers at once, call tools on both, and cancel everything on a deadline.

Server 1 is a separate process spoken to over stdio: by default the official SDK's example
peer (``tests/peers/sdk_stdio_server.py``, needs the ``mcp`` package); pass another command
after ``--`` to use your own. Server 2 is a tiny trimcp low-level server running in this
process, reached through a memory transport.

    python examples/multi_server_client.py [--deadline 3] [-- server command ...]

Each server gets its own task; both slow calls start, and when the deadline passes Trio
cancels both tasks: trimcp tells each server (``notifications/cancelled``) so its handler
stops too, then closes both sessions (and stops the child process), every step bounded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import trio

from trimcp.client import Client, Progress, connect_memory, connect_stdio
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext
from trimcp.types import (
    CallToolResult,
    Implementation,
    ListToolsResult,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolsCapability,
)

SDK_PEER = Path(__file__).resolve().parent.parent / "tests" / "peers" / "sdk_stdio_server.py"


def build_local_server() -> LowLevelServer:
    """Two tools: ``weather`` answers at once; ``crunch`` works (and reports) until cancelled."""
    server = LowLevelServer(
        Implementation(name="local-weather", version="1.0.0"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )

    @server.request_handler("tools/list")
    async def list_tools(ctx: RequestContext) -> ListToolsResult:
        city = {"type": "object", "properties": {"city": {"type": "string"}}}
        return ListToolsResult(
            tools=[
                Tool(name="weather", input_schema=city),
                Tool(name="crunch", input_schema={"type": "object"}),
            ]
        )

    @server.request_handler("tools/call")
    async def call_tool(ctx: RequestContext) -> CallToolResult:
        if ctx.params.name == "weather":
            city = (ctx.params.arguments or {}).get("city", "nowhere")
            return CallToolResult(content=[TextContent(text=f"sunny in {city}")])
        try:
            for step in range(1, 1000):
                await trio.sleep(0.5)
                await ctx.report_progress(step, message=f"crunched {step} blocks")
        finally:
            # Runs when the client's cancel arrives: the handler's scope is cancelled.
            print("  [local server] crunch handler stopped", flush=True)
        return CallToolResult(content=[TextContent(text="crunched everything")])

    return server


def first_text(result: CallToolResult) -> str:
    block = result.content[0] if result.content else None
    return block.text if isinstance(block, TextContent) else repr(block)


async def exercise(
    label: str, client: Client, quick: tuple[str, dict[str, Any]], slow: tuple[str, dict[str, Any]]
) -> None:
    """List the tools, make one quick call, then one slow call that only a cancel ends."""
    names = [tool.name async for tool in client.iter_tools()]
    print(f"[{label}] {client.server_info.name}: tools {names}", flush=True)
    result = await client.call_tool(*quick)
    print(f"[{label}] {quick[0]} -> {first_text(result)}", flush=True)
    print(f"[{label}] calling {slow[0]} (it will not finish before the deadline)", flush=True)
    try:
        await client.call_tool(*slow, timeout=None)
    finally:
        print(f"[{label}] {slow[0]} cancelled", flush=True)


async def main(deadline: float, server_argv: list[str]) -> None:
    def show_progress(update: Progress) -> None:
        print(f"  progress of {update.target}: {update.progress:g} {update.message or ''}")

    async def remote() -> None:
        async with connect_stdio(server_argv, on_progress=show_progress) as client:
            await exercise("stdio", client, ("add", {"a": 2, "b": 3}), ("slow", {"seconds": 60}))

    async def local() -> None:
        server = build_local_server()
        async with connect_memory(server, on_progress=show_progress) as client:
            await exercise("memory", client, ("weather", {"city": "Paris"}), ("crunch", {}))

    with trio.move_on_after(deadline) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(remote)
            nursery.start_soon(local)
    if scope.cancelled_caught:
        print(f"deadline of {deadline:g}s reached: both calls cancelled, both sessions closed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deadline", type=float, default=3.0, help="seconds (default 3)")
    parser.add_argument("server", nargs="*", help="stdio server command (after --)")
    args = parser.parse_args()
    trio.run(main, args.deadline, args.server or [sys.executable, str(SDK_PEER)])
