"""The official SDK client runs many progress-reporting calls through a balancer while the
test kills replicas; prints one JSON report of how every call ended.

Usage: ``python sdk_kill_client.py URL --calls N --lanes L``: L concurrent lanes in one
2025-11-25 session, N calls of ``slow`` in all. For each call: its tag, its outcome
(``result`` text or ``error`` text) and the progress values it saw, in order.
Imports nothing from trimcp.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def lane(session: ClientSession, tags: list[str], calls: list[dict[str, Any]]) -> None:
    for tag in tags:
        record: dict[str, Any] = {"tag": tag, "progress": [], "ends": 0}
        calls.append(record)
        progress: list[float] = record["progress"]

        async def on_progress(
            value: float, total: float | None, message: str | None, progress: list[float] = progress
        ) -> None:
            progress.append(value)

        started = time.monotonic()
        record["started_at"] = time.time()  # (the test compares it with its kills' times)
        try:
            result = await session.call_tool(  # type: ignore[call-overload]
                "slow", {"tag": tag, "steps": 6, "delay": 0.05}, progress_callback=on_progress
            )
            record["result"] = result.content[0].text if result.content else repr(result)
        except Exception as error:
            record["error"] = f"{type(error).__name__}: {error}"
        record["ends"] += 1
        record["seconds"] = round(time.monotonic() - started, 3)


async def run(url: str, calls: int, lanes: int, report: dict[str, Any]) -> None:
    records: list[dict[str, Any]] = []
    report["calls"] = records
    with anyio.fail_after(600):
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, read_timeout_seconds=60) as session,
        ):
            await session.initialize()
            print("ready", file=sys.stderr, flush=True)  # the test starts its kills now
            async with anyio.create_task_group() as group:
                for n in range(lanes):
                    tags = [f"{n}-{i}" for i in range(n, calls, lanes)]
                    group.start_soon(lane, session, tags, records)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--lanes", type=int, default=3)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    code = 0
    try:
        anyio.run(run, args.url, args.calls, args.lanes, report)
    except BaseException:
        report["error"] = traceback.format_exc()
        code = 1
    json.dump(report, sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
