"""Drive any stdio MCP server with the official SDK (mcp 2.x) client and print a JSON report.

Usage::

    python tests/peers/sdk_stdio_client.py [--timeout S] [--start-timeout S] -- <server argv...>

Steps: initialize, ping, tools/list, call ``echo``, call ``add`` and ``progress`` when the
server lists them, resources and prompts when advertised, then start ``slow(seconds=60)``
with a progress callback, wait (bounded) until the server reports the start through a
progress notification, and cancel the caller's anyio scope. That is the SDK's own
cancellation path: ``JSONRPCDispatcher.send_raw_request`` catches the cancellation and
writes ``notifications/cancelled`` (reason "caller cancelled") before re-raising. The
client records every outbound message, so ``cancel_sent`` is proof from the wire, not an
assumption. A final ``echo`` checks the session survived the cancel.

The server inherits this process's environment (so ``TRIMCP_PEER_LOG`` reaches it). When
``TRIMCP_PEER_LOG`` is set, its lines are read after the server has exited and included
as ``peer_log``.

Exit status: 0 when every required step passed, 1 otherwise (the report then carries
``"error"``), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage

ECHO_TEXT = "hello from the SDK client"


class RecordingWriteStream:
    """Wraps the transport's write stream and keeps a copy of every outbound JSON-RPC message."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.sent: list[dict[str, Any]] = []

    async def send(self, item: SessionMessage, /) -> None:
        self.sent.append(item.message.model_dump(by_alias=True, mode="json", exclude_unset=True))
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self._inner.__aexit__(exc_type, exc_val, exc_tb)
        return result

    def find(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m.get("method") == method]


def _texts(result: types.CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, types.TextContent)]


async def _exercise(
    session: ClientSession, rec: RecordingWriteStream, report: dict[str, Any], start_timeout: float
) -> None:
    init = await session.initialize()
    report["protocol_version"] = init.protocol_version
    report["server_info"] = init.server_info.model_dump(mode="json", exclude_none=True)
    caps = init.capabilities
    report["capabilities"] = caps.model_dump(mode="json", by_alias=True, exclude_none=True)

    await session.send_ping()
    report["ping"] = True

    tools = await session.list_tools()
    names = [t.name for t in tools.tools]
    report["tools"] = names

    echo = await session.call_tool("echo", {"text": ECHO_TEXT})
    report["echo"] = _texts(echo)[0] if _texts(echo) else None
    if report["echo"] != ECHO_TEXT or echo.is_error:
        raise AssertionError(f"echo returned {echo!r}")

    if "add" in names:
        add = await session.call_tool("add", {"a": 2, "b": 3})
        report["add"] = {
            "structured": add.structured_content,
            "text": _texts(add),
            "is_error": add.is_error,
        }

    if "progress" in names:
        seen: list[dict[str, Any]] = []

        async def on_step(progress: float, total: float | None, message: str | None) -> None:
            seen.append({"progress": progress, "total": total, "message": message})

        result = await session.call_tool("progress", {"steps": 3}, progress_callback=on_step)
        # Progress callbacks are spawned by the dispatcher; they may land after the result.
        report["progress"] = {
            "result": _texts(result),
            "structured": result.structured_content,
            "notifications": seen,
        }

    if caps.resources is not None:
        listed = await session.list_resources()
        report["resources"] = [str(r.uri) for r in listed.resources]
        if listed.resources:
            read = await session.read_resource(str(listed.resources[0].uri))
            report["resource_text"] = [getattr(c, "text", None) for c in read.contents]

    if caps.prompts is not None:
        prompts = await session.list_prompts()
        report["prompts"] = [p.name for p in prompts.prompts]
        if "greet" in report["prompts"]:
            got = await session.get_prompt("greet", {"name": "trimcp"})
            report["prompt_messages"] = [
                m.model_dump(mode="json", exclude_none=True) for m in got.messages
            ]

    await _cancel_slow(session, rec, report, start_timeout)

    after = await session.call_tool("echo", {"text": "still alive"})
    report["echo_after_cancel"] = _texts(after)[0] if _texts(after) else None


async def _cancel_slow(
    session: ClientSession, rec: RecordingWriteStream, report: dict[str, Any], start_timeout: float
) -> None:
    started = anyio.Event()
    cancel: dict[str, Any] = {"started_seen": False, "call_outcome": None}
    report["cancel"] = cancel

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async def call_slow(scope: anyio.CancelScope) -> None:
        with scope:
            await session.call_tool("slow", {"seconds": 60}, progress_callback=on_progress)
            cancel["call_outcome"] = "completed"  # not expected: 60 s is far beyond our bounds
        if scope.cancelled_caught:
            cancel["call_outcome"] = "cancelled"

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(call_slow, scope)
        with anyio.move_on_after(start_timeout):
            await started.wait()
        cancel["started_seen"] = started.is_set()
        scope.cancel()

    calls = [m for m in rec.find("tools/call") if m.get("params", {}).get("name") == "slow"]
    slow_id = calls[-1]["id"] if calls else None
    cancel["request_id"] = slow_id
    notes = [
        m
        for m in rec.find("notifications/cancelled")
        if m.get("params", {}).get("requestId") == slow_id
    ]
    cancel["notification"] = notes[0] if notes else None
    report["cancel_sent"] = bool(notes)
    if not cancel["started_seen"]:
        raise AssertionError(f"server did not report that `slow` started within {start_timeout}s")
    if not notes:
        raise AssertionError("the SDK client did not send notifications/cancelled for `slow`")


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        print("usage: sdk_stdio_client.py [options] -- <server argv...>", file=sys.stderr)
        raise SystemExit(2)
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=30.0, help="per-request read timeout (s)")
    parser.add_argument(
        "--start-timeout", type=float, default=10.0, help="bound on waiting for `slow` to start"
    )
    parser.add_argument(
        "--overall-timeout", type=float, default=120.0, help="bound on the whole run (s)"
    )
    opts = parser.parse_args(argv[:split])
    server_argv = argv[split + 1 :]
    if not server_argv:
        parser.error("missing server argv after --")
    return opts, server_argv


async def _run(opts: argparse.Namespace, server_argv: list[str], report: dict[str, Any]) -> None:
    params = StdioServerParameters(
        command=server_argv[0], args=server_argv[1:], env=dict(os.environ)
    )
    with anyio.fail_after(opts.overall_timeout):
        async with stdio_client(params) as (read_stream, write_stream):
            rec = RecordingWriteStream(write_stream)
            async with ClientSession(
                read_stream, rec, read_timeout_seconds=opts.timeout
            ) as session:
                await _exercise(session, rec, report, opts.start_timeout)
        report["messages_sent"] = [m.get("method", "<response>") for m in rec.sent]


def main(argv: list[str] | None = None) -> int:
    opts, server_argv = _parse(sys.argv[1:] if argv is None else argv)
    report: dict[str, Any] = {"server_argv": server_argv}
    status = 0
    try:
        anyio.run(_run, opts, server_argv, report)
    except BaseException as exc:  # report every failure, including exception groups, as JSON
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
        status = 1
    log_path = os.environ.get("TRIMCP_PEER_LOG")
    if log_path:
        try:
            with open(log_path, encoding="utf-8") as f:
                report["peer_log"] = f.read().splitlines()
        except FileNotFoundError:
            report["peer_log"] = []
    json.dump(report, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
