"""connect_http and connect_websocket: a trimcp client and a trimcp.Server over loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import trimcp
from trimcp.transports.http_server import serve_http
from trimcp.transports.websocket import serve_websocket


def app() -> trimcp.Server:
    server = trimcp.Server("net", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


@asynccontextmanager
async def serving(serve: Callable[..., Any]) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve(app(), port=0, task_status=task_status)
        )
        yield port
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("serve", "connect", "url"),
    [
        (serve_http, trimcp.connect_http, "http://127.0.0.1:{port}/mcp"),
        (serve_websocket, trimcp.connect_websocket, "ws://127.0.0.1:{port}/mcp"),
    ],
    ids=["http", "websocket"],
)
async def test_call_a_tool_over_the_network(serve: Any, connect: Any, url: str) -> None:
    with trio.fail_after(30):
        async with serving(serve) as port, connect(url.format(port=port)) as client:
            assert client.server_info.name == "net"
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"result": 5}
