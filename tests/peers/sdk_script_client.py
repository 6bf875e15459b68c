"""Drive an MCP server with the official SDK client (``mcp`` 2.x) in ``mode="auto"``
through a script of steps, and print a JSON report. Imports nothing from trimcp.

Usage: ``python tests/peers/sdk_script_client.py --url URL STEPS`` where STEPS is a JSON
list of ``["list"]`` (every tool, page after page) and ``["call", name, arguments]``.
The report: ``protocol_version``, ``server_info`` and one entry per step (``tools``: the
listed tools' names, input and output schemas; a call: ``is_error``, ``text``,
``structured``). Exit status 0 when every step ran, 1 otherwise (``"error"`` in the
report).
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import anyio
from mcp.client import Client


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def drive(url: str, steps: list[list[Any]], report: dict[str, Any]) -> None:
    async with Client(url, mode="auto", read_timeout_seconds=30) as client:
        report["protocol_version"] = client.protocol_version
        info = client.server_info
        report["server_info"] = info.model_dump(mode="json", exclude_none=True) if info else None
        results: list[Any] = report.setdefault("steps", [])
        for step in steps:
            if step[0] == "list":
                tools: list[dict[str, Any]] = []
                cursor = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools += [
                        {
                            "name": tool.name,
                            "description": tool.description,
                            "input_schema": tool.input_schema,
                            "output_schema": tool.output_schema,
                        }
                        for tool in page.tools
                    ]
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                results.append({"tools": tools})
            else:
                _, name, arguments = step
                result = await client.call_tool(name, arguments)
                results.append(
                    {
                        "is_error": bool(result.is_error),
                        "text": text_of(result),
                        "structured": result.structured_content,
                    }
                )
        report["done"] = True


def main() -> int:
    url, steps = sys.argv[sys.argv.index("--url") + 1], json.loads(sys.argv[-1])
    report: dict[str, Any] = {}

    async def bounded() -> None:
        with anyio.fail_after(120):
            await drive(url, steps, report)

    try:
        anyio.run(bounded)
    except BaseException as exc:  # report whatever went wrong, then fail
        report["error"] = "".join(traceback.format_exception(exc))[-4000:]
    print(json.dumps(report))
    return 0 if "error" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
