"""Interop with trimcp's own HTTP server (serve_http on hypercorn, a real loopback socket).

The real clock runs here (hypercorn has timers of its own); every wait is bounded by
``fail_after`` and no test asserts a time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.http_client.helpers import http_session
from tests.support import NullClient
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext
from trimcp.transports.http_server import HttpServerConfig, close_request_stream, serve_http
from trimcp.types import Implementation, ServerCapabilities, ToolsCapability

BOUND = 30.0


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def make_server() -> LowLevelServer:
    server = LowLevelServer(
        Implementation(name="trimcp-http", version="1.0.0"),
        capabilities=ServerCapabilities(tools=ToolsCapability(), logging={}),
    )

    @server.request_handler("tools/list")
    async def list_tools(ctx: RequestContext) -> Any:
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        args = ctx.params.arguments or {}
        if ctx.params.name == "progress":
            for i in range(3):
                await ctx.report_progress(i + 1, 3)
            return text("progressed")
        if ctx.params.name == "poll":
            # SSE polling: end this request's stream now; the answer comes after a resume.
            closed = close_request_stream(ctx)
            await ctx.send_notification(
                "notifications/message", {"level": "info", "data": f"closed={closed}"}
            )
            await trio.sleep(0.2)
            return text("polled")
        return text(str(args.get("text", "")))

    return server


@asynccontextmanager
async def trimcp_server(**config: Any) -> AsyncIterator[int]:
    settings = HttpServerConfig(**config)
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve_http(
                make_server(), port=0, config=settings, task_status=task_status
            )
        )
        yield port
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    "config",
    [{}, {"json_response": True}, {"stateless": True}],
    ids=["sse", "json", "stateless"],
)
async def test_session_against_trimcp_server(config: dict[str, Any]) -> None:
    client = NullClient()
    with trio.fail_after(BOUND):
        async with (
            trimcp_server(**config) as port,
            http_session(f"http://127.0.0.1:{port}/mcp", handler=client) as (session, t),
        ):
            assert (t.session_id is None) == bool(config.get("stateless"))
            tools = await session.send_request("tools/list")
            assert [tool.name for tool in tools.tools] == ["echo"]
            echoed = await session.send_request(
                "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
            )
            assert echoed.content[0].text == "hi"
            steps: list[float] = []
            await session.send_request(
                "tools/call",
                {"name": "progress", "arguments": {}},
                on_progress=lambda progress, total, message: steps.append(progress),
            )
            if not config:  # only an SSE answer can carry progress
                assert steps == [1, 2, 3]


async def test_sse_polling_resumes_against_trimcp_server() -> None:
    client = NullClient()
    with trio.fail_after(BOUND):
        async with (
            trimcp_server(retry_ms=50) as port,
            http_session(f"http://127.0.0.1:{port}/mcp", handler=client) as (session, _),
        ):
            polled = await session.send_request("tools/call", {"name": "poll", "arguments": {}})
            assert polled.content[0].text == "polled"
            await trio.testing.wait_all_tasks_blocked()
            assert ("notifications/message", {"level": "info", "data": "closed=True"}) in [
                (method, {"level": params.level, "data": params.data})
                for method, params in client.notifications
            ]


async def test_legacy_endpoint_of_trimcp_server() -> None:
    with trio.fail_after(BOUND):
        async with (
            trimcp_server() as port,
            http_session(f"http://127.0.0.1:{port}/sse") as (session, transport),
        ):
            assert transport.kind == "http+sse"
            echoed = await session.send_request(
                "tools/call", {"name": "echo", "arguments": {"text": "old"}}
            )
            assert echoed.content[0].text == "old"
