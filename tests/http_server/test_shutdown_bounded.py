"""Shutdown is bounded under both engines, even when a client never reads its stream.

Was: under hypercorn, a client that did not read its SSE response kept the server running
long after the shutdown trigger (120 s and more): hypercorn writes inside a shielded scope,
so its graceful timeout could not end that write. Real loopback sockets; the bound is a
``fail_after`` far above the configured times, and no test asserts a time.
"""

from __future__ import annotations

import json
import socket

import pytest
import trio
import trio.testing

from tests.http_server.helpers import init_request, make_server, tool_call
from trimcp.transports.http_server import HttpServerConfig, hypercorn_config, serve_http
from trimcp.transports.http_server.serve import Engine

BOUND = 60.0  # graceful_timeout is 1 s and the sessions' close bound 11 s
HEADERS = (
    "Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
    "Accept: application/json, text/event-stream\r\n"
)


def post(body: dict[str, object], session_id: str | None = None) -> bytes:
    data = json.dumps(body).encode()
    extra = (
        f"Mcp-Session-Id: {session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        if session_id
        else ""
    )
    return (
        f"POST /mcp HTTP/1.1\r\n{HEADERS}{extra}Content-Length: {len(data)}\r\n\r\n".encode() + data
    )


async def read_head(stream: trio.SocketStream) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        assert chunk
        data += chunk
    return data


@pytest.mark.parametrize("engine", ["hypercorn", "lean"])
async def test_shutdown_is_bounded_with_a_client_that_never_reads(engine: Engine) -> None:
    config = HttpServerConfig(stream_max_bytes=64 * 1024 * 1024, stream_max_messages=1_000_000)
    stop = trio.Event()
    stopped = trio.Event()
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:

            async def run(task_status: trio.TaskStatus[int]) -> None:
                await serve_http(
                    make_server(),
                    port=0,
                    engine=engine,
                    config=config,
                    hypercorn=hypercorn_config(graceful_timeout=1.0),
                    shutdown_trigger=stop.wait,
                    task_status=task_status,
                )
                stopped.set()

            port = await nursery.start(run)
            sock = trio.socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
            await sock.connect(("127.0.0.1", port))
            reader = trio.SocketStream(sock)
            await reader.send_all(post(init_request()))
            head = await read_head(reader)
            session_id = next(
                line.split(b":", 1)[1].strip().decode()
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"mcp-session-id")
            )
            # A call whose answer stream carries megabytes of progress: never read.
            await reader.send_all(
                post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
            )
            call = tool_call(1, "progress", {"n": 100_000}, meta={"progressToken": "p"})
            await reader.send_all(post(call, session_id))
            # The server writes until the socket buffers are full, then every task here
            # waits (for a socket that never drains): that is when to stop it, which is
            # what made the old failure certain. Quiescence, not a fixed sleep.
            await trio.testing.wait_all_tasks_blocked(cushion=0.2)
            stop.set()
            await stopped.wait()  # returns within the bound, unread client or not
            await reader.aclose()
