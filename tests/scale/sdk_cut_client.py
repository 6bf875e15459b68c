"""The official SDK client runs one long progress-reporting call through a balancer while
the test stops the replica running it; prints one JSON report of how the call ended.

Usage: ``python sdk_cut_client.py URL TAG``: one 2025-11-25 session, one call of
``slow`` (20 steps, 0.5 s apart). Prints ``progress`` on stderr at the first progress
event (the test stops the replica then), and on stdout ``{"progress": [...], "ends": n,
"result" or "error": text, "code": JSON-RPC code}``, then a ``ping`` answered after the
call (the session goes on). Imports nothing from trimcp.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def run(url: str, tag: str, report: dict[str, Any]) -> None:
    progress: list[float] = []
    report["progress"] = progress
    report["ends"] = 0

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)
        if len(progress) == 1:
            print("progress", file=sys.stderr, flush=True)

    with anyio.fail_after(120):
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, read_timeout_seconds=60) as session,
        ):
            await session.initialize()
            try:
                result = await session.call_tool(  # type: ignore[call-overload]
                    "slow", {"tag": tag, "steps": 20, "delay": 0.5}, progress_callback=on_progress
                )
                report["result"] = result.content[0].text if result.content else repr(result)
            except MCPError as error:
                report["error"] = error.error.message
                report["code"] = error.error.code
                report["data"] = error.error.data
            except Exception as error:
                report["error"] = f"{type(error).__name__}: {error}"
            report["ends"] += 1
            await session.send_ping()
            report["pinged"] = True


def main() -> int:
    report: dict[str, Any] = {}
    code = 0
    try:
        anyio.run(run, sys.argv[1], sys.argv[2], report)
    except BaseException:
        report["failure"] = traceback.format_exc()
        code = 1
    json.dump(report, sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
