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
from tests.support import NullClient, init_params
from trimcp.protocol.lifecycle import Role
from trimcp.session import Session, open_session
from trimcp.transports.http_client import open_legacy_sse_client_transport

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


async def exercise(session: Session, *, progress: bool = True) -> None:
    """initialize happened; list tools, call two, and one that reports progress.

    In JSON-response mode the SDK drops notifications tied to a request (it says so), so
    no progress arrives there."""
    assert session.negotiated is not None
    tools = await session.send_request("tools/list")
    assert {tool.name for tool in tools.tools} == {"echo", "add", "progress"}
    echoed = await session.send_request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert echoed.content[0].text == "hi"
    added = await session.send_request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert added.content[0].text == "5.0"
    steps: list[float] = []
    done = await session.send_request(
        "tools/call",
        {"name": "progress", "arguments": {"steps": 3}},
        on_progress=lambda progress, total, message: steps.append(progress),
    )
    assert done.content[0].text == "done"
    assert steps == ([1, 2, 3] if progress else [])


@pytest.mark.parametrize("mode", ["stateful", "json"])
async def test_stateful_server(mode: str) -> None:
    with trio.fail_after(LIMIT):
        async with sdk_server(mode) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with http_session(url) as (session, transport):
                assert transport.session_id is not None
                assert transport.protocol_version == "2025-11-25"
                await exercise(session, progress=mode != "json")
                # Many calls at once share the pool (at most max_connections POSTs).
                async with trio.open_nursery() as nursery:
                    for n in range(20):
                        nursery.start_soon(
                            session.send_request,
                            "tools/call",
                            {"name": "echo", "arguments": {"text": str(n)}},
                        )
                assert transport.pool.opened <= 8 + 2


async def test_stateless_server() -> None:
    with trio.fail_after(LIMIT):
        async with sdk_server("stateless") as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with http_session(url) as (session, transport):
                assert transport.session_id is None
                await exercise(session)


async def test_legacy_server_by_fallback() -> None:
    with trio.fail_after(LIMIT):
        async with sdk_server("sse") as port:
            url = f"http://127.0.0.1:{port}/sse"
            async with http_session(url) as (session, transport):
                assert transport.kind == "http+sse"
                await exercise(session)


async def test_legacy_server_directly() -> None:
    with trio.fail_after(LIMIT):
        async with sdk_server("sse") as port:
            url = f"http://127.0.0.1:{port}/sse"
            async with (
                open_legacy_sse_client_transport(url) as transport,
                open_session(transport, role=Role.CLIENT, handler=NullClient()) as session,
            ):
                await session.initialize(init_params())
                await exercise(session)
