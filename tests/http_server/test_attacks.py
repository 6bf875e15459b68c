"""Attacks on the request head and framing, on a real loopback socket, under both engines.

Every HTTP engine must refuse the same things (docs/transports-http.md, "Limits"): heads
over the documented limit even when they arrive in one read (431, or 414 for the request
line), ``Content-Length`` with ``Transfer-Encoding`` in any order or spelling (400), and
HTTP versions other than 1.0 and 1.1 (505); each refusal closes the connection, so a
request smuggled in the body is never served. Each test reads the whole answer until the
server closes (bounded by ``fail_after``); none asserts a time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal, cast

import h11
import pytest
import trio

from tests.http_server.helpers import init_request, make_server
from trimcp.session import SessionHandler
from trimcp.transports.http_server import serve_http

Engine = Literal["auto", "hypercorn", "lean"]
BOUND = 30.0
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(params=["hypercorn", "lean"])
def engine(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


class Server:
    """A server on loopback that counts the sessions it creates."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sessions = 0

    async def exchange(self, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send ``raw``, read until the server closes; (status, headers, rest after it)."""
        async with await trio.open_tcp_stream("127.0.0.1", self.port) as stream:
            await stream.send_all(raw)
            received = b""
            while True:
                try:
                    data = await stream.receive_some(65536)
                except trio.BrokenResourceError:  # reset after the answer
                    break
                if not data:
                    break
                received += data
        return parse_answer(received)


def parse_answer(received: bytes) -> tuple[int, dict[str, str], bytes]:
    conn = h11.Connection(h11.CLIENT)
    conn.send(
        h11.Request(method="POST", target="/", headers=[("host", "x"), ("content-length", "0")])
    )
    conn.send(h11.EndOfMessage())
    conn.receive_data(received)
    conn.receive_data(b"")
    response = conn.next_event()
    assert isinstance(response, h11.Response), (response, received[:200])
    headers = {k.decode(): v.decode() for k, v in response.headers}
    while not isinstance(conn.next_event(), h11.EndOfMessage):
        pass
    return response.status_code, headers, bytes(conn.trailing_data[0])


@asynccontextmanager
async def serving(engine: str, **kwargs: Any) -> AsyncIterator[Server]:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            server: Server | None = None

            def factory() -> SessionHandler:
                assert server is not None
                server.sessions += 1
                return make_server()

            port = await nursery.start(
                lambda task_status: serve_http(
                    factory, port=0, engine=cast(Engine, engine), task_status=task_status, **kwargs
                )
            )
            server = Server(port)
            yield server
            nursery.cancel_scope.cancel()


def head(lines: list[str]) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def post(body: bytes, extra: list[str], target: str = "/mcp", version: str = "1.1") -> bytes:
    return (
        head(
            [
                f"POST {target} HTTP/{version}",
                "Host: 127.0.0.1",
                "Content-Type: application/json",
                f"Accept: {ACCEPT}",
                *extra,
            ]
        )
        + body
    )


INIT = json.dumps(init_request()).encode()
#: A complete initialize request, hidden in the body of the attack requests below.
SMUGGLED = post(INIT, [f"Content-Length: {len(INIT)}"])


# --- head size -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extra", "target", "status"),
    [
        ("60 KiB head", [f"X-Pad-{i}: {'a' * 1000}" for i in range(60)], "/mcp", 431),
        ("17 KiB header", [f"X-Big: {'b' * 17 * 1024}"], "/mcp", 431),
        ("20 KiB request line", [], "/mcp?" + "c" * 20 * 1024, 414),
        ("60 KiB head, mostly spaces", [f"X-Pad: a{' ' * 60 * 1024}a"], "/mcp", 431),
    ],
)
async def test_a_head_over_the_limit_is_refused_even_in_one_read(
    engine: str, name: str, extra: list[str], target: str, status: int
) -> None:
    async with serving(engine) as server:
        raw = post(INIT, [f"Content-Length: {len(INIT)}", *extra], target=target)
        got, headers, _ = await server.exchange(raw)
        assert got == status, name
        assert headers.get("connection") == "close"
        assert server.sessions == 0


async def test_a_head_at_the_limit_is_served(engine: str) -> None:
    async with serving(engine) as server:
        framing = [f"Content-Length: {len(INIT)}", "Connection: close"]
        pad = 16 * 1024 - len(post(INIT, framing).split(b"\r\n\r\n")[0]) - 4 - len("X-Pad: \r\n")
        raw = post(INIT, [*framing, "X-Pad: " + "p" * pad])
        assert len(raw.split(b"\r\n\r\n")[0]) + 4 == 16 * 1024
        got, _, _ = await server.exchange(raw)
        assert got == 200
        assert server.sessions == 1


# --- framing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "framing",
    [
        ["Content-Length: 5", "Transfer-Encoding: chunked"],
        ["Transfer-Encoding: chunked", "Content-Length: 5"],
        ["Content-Length: 5", "Transfer-Encoding:\tchunked"],
        ["Transfer-Encoding: chunked", "Content-Length: 5", "Connection: keep-alive"],
    ],
    ids=["CL then TE", "TE then CL", "TE with a tab", "keep-alive asked"],
)
async def test_content_length_with_transfer_encoding_is_refused_and_closed(
    engine: str, framing: list[str]
) -> None:
    # Chunked, the body ends at once and a second request follows; by Content-Length it
    # is five bytes of body. Either reading serves at most one request: refuse, close.
    async with serving(engine) as server:
        raw = post(b"0\r\n\r\n" + SMUGGLED, framing)
        got, headers, rest = await server.exchange(raw)
        assert got == 400
        assert headers.get("connection") == "close"
        assert rest == b""  # nothing answered after the refusal
        assert server.sessions == 0


@pytest.mark.parametrize("version", ["1.2", "1.9", "2.0", "0.9"])
async def test_unknown_http_versions_get_505_and_close(engine: str, version: str) -> None:
    async with serving(engine) as server:
        raw = post(INIT, [f"Content-Length: {len(INIT)}"], version=version)
        got, headers, _ = await server.exchange(raw)
        assert got == 505
        assert headers.get("connection") == "close"
        assert server.sessions == 0


# --- repeated headers ------------------------------------------------------------------------


def _post_with(headers: list[str]) -> bytes:
    return (
        head(
            [
                "POST /mcp HTTP/1.1",
                "Content-Type: application/json",
                f"Content-Length: {len(INIT)}",
                "Connection: close",
                *headers,
            ]
        )
        + INIT
    )


async def test_two_accept_headers_are_one_list(engine: str) -> None:
    async with serving(engine) as server:
        raw = _post_with(
            ["Host: 127.0.0.1", "Accept: application/json", "Accept: text/event-stream"]
        )
        got, _, _ = await server.exchange(raw)
        assert got == 200
        assert server.sessions == 1


@pytest.mark.parametrize(
    "repeated",
    [
        ["Host: 127.0.0.1", "Host: 127.0.0.1"],
        ["Host: 127.0.0.1", "Origin: http://127.0.0.1", "Origin: http://evil.example"],
        ["Host: 127.0.0.1", "Content-Type: application/json"],
        ["Host: 127.0.0.1", "Mcp-Session-Id: a", "Mcp-Session-Id: b"],
        ["Host: 127.0.0.1", "MCP-Protocol-Version: 2025-11-25", "MCP-Protocol-Version: 2025-06-18"],
        ["Host: 127.0.0.1", f"Content-Length: {len(INIT) + 1}"],
    ],
    ids=[
        "Host",
        "Origin",
        "Content-Type",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Content-Length",
    ],
)
async def test_a_repeated_singleton_header_is_refused(engine: str, repeated: list[str]) -> None:
    async with serving(engine) as server:
        got, _, _ = await server.exchange(_post_with([f"Accept: {ACCEPT}", *repeated]))
        assert got == 400
        assert server.sessions == 0
