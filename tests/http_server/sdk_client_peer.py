"""Drive an MCP HTTP server with the official SDK (mcp 2.x) client; print a JSON report.

Usage: ``python tests/http_server/sdk_client_peer.py URL [streamable|sse]``.

Steps: initialize, tools/list, call ``echo``, call ``progress`` with a progress callback,
call ``sample`` (the server asks this client for a sampling answer on the call's stream),
then close (the Streamable HTTP client sends DELETE). Exit status 0 when every step passed.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


async def _sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="from the SDK"),
        model="sdk-model",
    )


def _texts(result: types.CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, types.TextContent)]


async def _exercise(read: Any, write: Any, report: dict[str, Any]) -> None:
    async with ClientSession(read, write, read_timeout_seconds=30, sampling_callback=_sample) as s:
        init = await s.initialize()
        report["protocol_version"] = init.protocol_version
        report["server_name"] = init.server_info.name
        tools = await s.list_tools()
        report["tools"] = [t.name for t in tools.tools]
        report["echo"] = _texts(await s.call_tool("echo", {"text": "hello over http"}))
        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        result = await s.call_tool("progress", {"n": 3}, progress_callback=on_progress)
        report["progress_result"] = _texts(result)
        report["progress"] = seen
        report["sample"] = _texts(await s.call_tool("sample", {}))


async def main(url: str, mode: str) -> dict[str, Any]:
    report: dict[str, Any] = {}
    with anyio.fail_after(60):
        if mode == "sse":
            async with sse_client(url) as (read, write):
                await _exercise(read, write, report)
        else:
            async with streamable_http_client(url) as (read, write):
                await _exercise(read, write, report)
    return report


if __name__ == "__main__":
    try:
        out = anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "streamable")
    except BaseException:
        print(json.dumps({"error": traceback.format_exc()}))
        sys.exit(1)
    print(json.dumps(out))
