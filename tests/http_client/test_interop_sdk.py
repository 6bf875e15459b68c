"""Interop: trimcp's client session over the HTTP client transport against the official
SDK's servers (uvicorn in a subprocess on 127.0.0.1, real time, every wait bounded)."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from tests.http_client.helpers import http_session

PEER = Path(__file__).with_name("sdk_http_server.py")
#: Bound on each whole test (the server starts in about a second).
LIMIT = 60


@asynccontextmanager
async def sdk_server(mode: str) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        command = [sys.executable, str(PEER), mode]
        run = functools.partial(trio.run_process, command, stdout=subprocess.PIPE, check=False)
        process = await nursery.start(run)
        assert process.stdout is not None
        line = b""
        with trio.fail_after(LIMIT):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(64)
                assert chunk, "the SDK server exited before printing its port"
                line += chunk
        try:
            yield int(line)
        finally:
            process.terminate()


async def check_session(url: str, **options: object) -> None:
    async with http_session(url, **options) as (session, transport):
        assert session.negotiated is not None
        tools = await session.send_request("tools/list")
        assert {tool.name for tool in tools.tools} == {"echo", "add", "progress"}
        echoed = await session.send_request(
            "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
        )
        assert echoed.content[0].text == "hi"
        steps: list[float] = []
        done = await session.send_request(
            "tools/call",
            {"name": "progress", "arguments": {"steps": 3}},
            on_progress=lambda progress, total, message: steps.append(progress),
        )
        assert done.content[0].text == "done"
        return transport


@pytest.mark.parametrize("mode", ["stateful", "json"])
async def test_stateful_session(mode: str) -> None:
    with trio.fail_after(LIMIT):
        async with sdk_server(mode) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with http_session(url) as (session, transport):
                assert transport.session_id is not None
                assert transport.protocol_version == "2025-11-25"
                tools = await session.send_request("tools/list")
                assert {tool.name for tool in tools.tools} == {"echo", "add", "progress"}
                echoed = await session.send_request(
                    "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
                )
                assert echoed.content[0].text == "hi"


async def test_stateless_session() -> None:
    with trio.fail_after(LIMIT):
        async with sdk_server("stateless") as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with http_session(url) as (session, transport):
                assert transport.session_id is None
                added = await session.send_request(
                    "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}
                )
                assert added.content[0].text == "5.0"


async def test_legacy_sse_server() -> None:
    with trio.fail_after(LIMIT):
        async with sdk_server("sse") as port:
            url = f"http://127.0.0.1:{port}/sse"
            async with http_session(url) as (session, transport):
                assert transport.kind == "http+sse"
                echoed = await session.send_request(
                    "tools/call", {"name": "echo", "arguments": {"text": "old"}}
                )
                assert echoed.content[0].text == "old"
