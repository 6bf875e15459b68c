"""Call tools with the official SDK client (``mcp`` 2.x), a new connection for every call,
and print what each call answered as JSON.

Usage::

    python tests/peers/sdk_state_client.py PLAN.json

The plan is a list of calls, each ``{"url": ..., "key": ..., "mode": ..., "tool": ...,
"args": {...}}``: ``key`` is sent as ``Authorization: Bearer <key>``; ``mode`` is the
SDK's (``"auto"``: 2026-07-28 when the server offers it; ``"legacy"``: the initialize
handshake, 2025-11-25). An argument written ``{"$from": N}`` is the text answered by
call N (0-based), so a handle one call returns is passed to the next. The report is a
list, one entry per call: the protocol version the connection used, ``is_error``, the
text of the content and the structured content. Imports nothing from trimcp. Exit
status 0 when every call ran (a tool error is an answer, not a failure), 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def call(step: dict[str, Any], answers: list[dict[str, Any]]) -> dict[str, Any]:
    args = {
        name: answers[value["$from"]]["text"] if isinstance(value, dict) else value
        for name, value in step.get("args", {}).items()
    }
    headers = {"Authorization": f"Bearer {step['key']}"}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(step["url"], http_client=http)
        async with Client(transport, mode=step["mode"], read_timeout_seconds=30) as client:
            result = await client.call_tool(step["tool"], args)
            return {
                "version": client.protocol_version,
                "is_error": bool(result.is_error),
                "text": text_of(result),
                "structured": result.structured_content,
            }


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as file:
        plan: list[dict[str, Any]] = json.load(file)
    answers: list[dict[str, Any]] = []

    async def run() -> None:
        with anyio.fail_after(120):
            for step in plan:
                answers.append(await call(step, answers))

    failed = None
    try:
        anyio.run(run)
    except BaseException as exc:  # report what went wrong, then fail
        failed = "".join(traceback.format_exception(exc))[-4000:]
    print(json.dumps({"answers": answers, "error": failed}))
    return 0 if failed is None else 1


if __name__ == "__main__":
    sys.exit(main())
