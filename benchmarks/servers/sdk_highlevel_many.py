"""Benchmark server: the official SDK's HIGH-LEVEL ``MCPServer`` with the suite's tool set,
over stdio or Streamable HTTP (uvicorn).

Same tools as ``trimcp_server.py``: ``echo(text)``, ``sleep(ms)``, ``stats()`` and, with
``--tools N``, fillers ``tool_0 .. tool_{N-1}``. Every tool is ``async def``: the SDK runs
a plain ``def`` tool in a worker thread (``anyio.to_thread``), a cost the other servers do
not pay (``sdk_highlevel.py`` keeps the plain ``def`` echo for that comparison).
``MCPServer`` cannot paginate ``tools/list``: ``--page-size`` exits with status 3.
``--http PORT`` serves ``streamable_http_app()`` with uvicorn on 127.0.0.1
(``--json-response`` for JSON answers); ``--check`` only reports availability.

Logging at WARNING, like every benchmark server.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_UNAVAILABLE = 3

STATS = {"started": 0, "finished": 0, "cancelled": 0}


def build(tools: int) -> Any:
    import anyio
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-sdk-highlevel", log_level="WARNING")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        STATS["started"] += 1
        STATS["finished"] += 1
        return text

    @server.tool()
    async def sleep(ms: float) -> str:
        """Sleep for ms milliseconds."""
        STATS["started"] += 1
        try:
            await anyio.sleep(ms / 1000.0)
            return "slept"
        except anyio.get_cancelled_exc_class():
            STATS["cancelled"] += 1
            raise
        finally:
            STATS["finished"] += 1

    @server.tool()
    async def stats() -> str:
        """Handler counts."""
        return json.dumps({"live": STATS["started"] - STATS["finished"], **STATS})

    async def filler(text: str) -> str:
        STATS["started"] += 1
        STATS["finished"] += 1
        return text

    for i in range(tools):
        server.add_tool(filler, name=f"tool_{i}", description=f"Filler tool tool_{i}: echoes text.")
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--check", action="store_true")
    opts = parser.parse_args(argv)
    if opts.page_size is not None:
        print("sdk_highlevel_many: MCPServer cannot paginate tools/list", file=sys.stderr)
        return EXIT_UNAVAILABLE
    if opts.http is not None:
        try:
            import uvicorn
        except ImportError as exc:
            print(f"sdk_highlevel_many: uvicorn is not importable: {exc}", file=sys.stderr)
            return EXIT_UNAVAILABLE
    if opts.check:
        return 0
    server = build(opts.tools)
    if opts.http is not None:
        app = server.streamable_http_app(json_response=opts.json_response, max_sessions=None)
        uvicorn.run(app, host="127.0.0.1", port=opts.http, log_level="warning", access_log=False)
    else:
        server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
