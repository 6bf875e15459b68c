"""The official SDK client (PyPI ``mcp``) in one 2025-11-25 session through a balancer.

Usage: ``python sdk_balanced_client.py URL [--calls N]``. Prints a JSON report: the
pids that answered ``whoami`` (N calls), tools/resources/prompts seen, a progress call's
notifications and answer. Imports nothing from trimcp. Exit 0 when every step ran.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def exercise(url: str, calls: int, pause: float, report: dict[str, Any]) -> None:
    with anyio.fail_after(120):
        await _steps(url, calls, pause, report)


async def _steps(url: str, calls: int, pause: float, report: dict[str, Any]) -> None:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, read_timeout_seconds=30) as session,
    ):
        init = await session.initialize()
        report["protocol_version"] = init.protocol_version
        await session.send_ping()
        report["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
        pids = []
        for _ in range(calls):
            if pause:
                await anyio.sleep(pause)
            result = await session.call_tool("whoami", {})
            pids.append(result.content[0].text)  # type: ignore[union-attr]
        report["pids"] = pids
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        result = await session.call_tool(  # type: ignore[call-overload]
            "slow", {"tag": "p", "steps": 3, "delay": 0.05}, progress_callback=on_progress
        )
        report["slow"] = result.content[0].text
        report["progress"] = progress
        resources = await session.list_resources()
        report["resources"] = [str(r.uri) for r in resources.resources]
        read_result = await session.read_resource("scale://info")
        report["read"] = read_result.contents[0].text  # type: ignore[union-attr]
        report["prompts"] = [p.name for p in (await session.list_prompts()).prompts]
        prompt = await session.get_prompt("greet", {"name": "Ann"})
        report["prompt"] = prompt.messages[0].content.text  # type: ignore[union-attr]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between calls")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    code = 0
    try:
        anyio.run(exercise, args.url, args.calls, args.pause, report)
    except BaseException:
        report["error"] = traceback.format_exc()
        code = 1
    json.dump(report, sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
