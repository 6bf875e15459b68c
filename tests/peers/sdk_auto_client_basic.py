"""Drive a stdio server with the official SDK client (``mcp`` 2.x) in ``mode="auto"`` and
print a JSON report: the negotiated version, the server's identity, the tools, a text
tool, a tool with progress, sampling (2026: through ``input_required``), a resource read
and a prompt. Imports nothing from trimcp.

Usage: ``python tests/peers/sdk_auto_client_basic.py -- <server argv...>`` (stdio) or
``... --url http://127.0.0.1:PORT/mcp``. Exit status 0 when every step ran, 1 otherwise
(``"error"`` in the report).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client, ClientRequestContext
from mcp.client.stdio import StdioServerParameters


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def drive(target: Any, report: dict[str, Any]) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_sampling(context: ClientRequestContext, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled"), model="m"
        )

    async with Client(
        target, mode="auto", sampling_callback=on_sampling, read_timeout_seconds=20
    ) as client:
        report["protocol_version"] = client.protocol_version
        info = client.server_info
        report["server_info"] = info.model_dump(mode="json", exclude_none=True) if info else None
        report["tools"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        report["simple_text"] = text_of(await client.call_tool("test_simple_text"))
        report["with_progress"] = text_of(
            await client.call_tool(
                "test_tool_with_progress",
                progress_callback=on_progress,  # type: ignore[arg-type]  # the SDK's Protocol
            )
        )
        report["progress"] = progress
        # 2026: the server asks for sampling with an input_required result, which the
        # proxy passes through; the SDK answers and retries by itself.
        report["sampling"] = text_of(
            await client.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
        )
        read = await client.read_resource("test://static-text")
        report["resource"] = [getattr(c, "text", None) for c in read.contents]
        prompt = await client.get_prompt("test_simple_prompt")
        report["prompt"] = [getattr(m.content, "text", None) for m in prompt.messages]
        report["done"] = True


def main() -> int:
    target: Any
    if sys.argv[1:2] == ["--url"]:
        target = sys.argv[2]
    else:
        argv = sys.argv[sys.argv.index("--") + 1 :]
        # The SDK passes the child a minimal environment: keep PYTHONPATH (a checkout).
        env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
        target = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    report: dict[str, Any] = {}

    async def bounded() -> None:
        with anyio.fail_after(120):
            await drive(target, report)

    try:
        anyio.run(bounded)
    except BaseException as exc:  # report whatever went wrong, then fail
        report["error"] = "".join(traceback.format_exception(exc))[-4000:]
    print(json.dumps(report))
    return 0 if "error" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
