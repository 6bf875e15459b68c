"""WebSocket transport: a real socket on 127.0.0.1, handshake checks, sessions over it."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio_websocket

from tests.support import NullClient, init_params, make_server
from trimcp.protocol.lifecycle import Role
from trimcp.session import RequestContext, open_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.transports.websocket import (
    handshake_allowed,
    open_websocket_client_transport,
    serve_until_idle,
    serve_websocket,
)


def echo_server() -> Any:
    server = make_server()

    @server.request_handler("echo")
    async def echo(ctx: RequestContext) -> dict[str, Any]:
        return {"params": ctx.params}

    return server


@asynccontextmanager
async def websocket_server(**kwargs: Any) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_websocket(
                echo_server(), port=0, task_status=task_status, **kwargs
            )
        )
        yield port
        nursery.cancel_scope.cancel()


def no_leaked_socket() -> None:
    """A socket left to the garbage collector warns there (and fails the test, under
    ``filterwarnings = error``), not in whichever test runs next."""
    gc.collect()


async def test_session_over_websocket() -> None:
    with trio.fail_after(20):
        async with (
            websocket_server() as port,
            open_websocket_client_transport(f"ws://127.0.0.1:{port}/mcp") as transport,
            open_session(transport, role=Role.CLIENT, handler=NullClient()) as client,
        ):
            result = await client.initialize(init_params())
            assert result.server_info.name == "test-server"
            assert await client.send_request("echo", {"x": "é"}) == {"params": {"x": "é"}}


@pytest.mark.parametrize(
    ("url", "headers", "status"),
    [
        ("ws://127.0.0.1:{port}/mcp", [("Origin", "http://evil.example.com")], 403),
        ("ws://127.0.0.1:{port}/mcp", [("Origin", "http://localhost.evil.com")], 403),
        ("ws://127.0.0.1:{port}/other", [], 404),
        # Two Origins: one checked, the other used? Refused whatever their order.
        (
            "ws://127.0.0.1:{port}/mcp",
            [("Origin", "http://localhost"), ("Origin", "http://evil.example.com")],
            400,
        ),
        (
            "ws://127.0.0.1:{port}/mcp",
            [("Origin", "http://evil.example.com"), ("Origin", "http://localhost")],
            400,
        ),
    ],
)
async def test_hostile_handshakes_are_refused(
    url: str, headers: list[tuple[str, str]], status: int
) -> None:
    with trio.fail_after(20):
        async with websocket_server() as port:
            with pytest.raises(trio_websocket.ConnectionRejected) as refused:
                async with open_websocket_client_transport(url.format(port=port), headers=headers):
                    pass
            assert refused.value.status_code == status
    no_leaked_socket()


async def raw_handshake(port: int, headers: Sequence[str]) -> int:
    """The status a WebSocket handshake on a raw socket gets (no client library)."""
    lines = [
        "GET /mcp HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *headers,
    ]
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        received = b""
        while b"\r\n" not in received:
            data = await stream.receive_some(4096)
            assert data, "closed without an answer"
            received += data
    return int(received.split(b" ", 2)[1])


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        (["Host: 127.0.0.1"], 400),  # no mcp subprotocol
        (["Host: 127.0.0.1", "Sec-WebSocket-Protocol: mcp"], 101),
        (
            [
                "Host: 127.0.0.1",
                "Sec-WebSocket-Protocol: mcp",
                "Origin: http://localhost",
                "Origin: http://evil.example.com",
            ],
            400,
        ),
    ],
)
async def test_handshake_on_the_wire(headers: list[str], status: int) -> None:
    with trio.fail_after(20):
        async with websocket_server() as port:
            assert await raw_handshake(port, headers) == status


async def test_sessions_past_the_limit_are_refused_until_one_ends() -> None:
    url = "ws://127.0.0.1:{port}/mcp"
    with trio.fail_after(20):
        async with websocket_server(max_sessions=2) as port, trio.open_nursery() as nursery:
            first_done = trio.Event()

            async def hold(done: trio.Event, started: trio.Event) -> None:
                async with open_websocket_client_transport(url.format(port=port)):
                    started.set()
                    await done.wait()

            second_done = trio.Event()
            for done in (first_done, second_done):
                started = trio.Event()
                nursery.start_soon(hold, done, started)
                await started.wait()
            with pytest.raises(trio_websocket.ConnectionRejected) as refused:
                async with open_websocket_client_transport(url.format(port=port)):
                    pass
            assert refused.value.status_code == 503
            first_done.set()
            while True:  # the slot comes back once the server has closed that session
                try:
                    async with open_websocket_client_transport(url.format(port=port)):
                        break
                except trio_websocket.ConnectionRejected as exc:
                    if exc.status_code != 503:
                        raise
                    await trio.sleep(0.05)
            second_done.set()
    no_leaked_socket()


class Watched:
    """A memory transport that records its last activity (as WebSocketTransport does)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.last_activity = trio.current_time()

    async def receive(self) -> bytes:
        data: bytes = await self.inner.receive()
        self.last_activity = trio.current_time()
        return data

    async def send(self, messages: Any) -> None:
        await self.inner.send(messages)
        self.last_activity = trio.current_time()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_an_idle_session_is_closed_but_not_a_busy_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    server = make_server()

    @server.request_handler("slow")
    async def slow(ctx: RequestContext) -> dict[str, Any]:
        await trio.sleep(500)  # far longer than the idle timeout, with nothing to say
        return {"done": True}

    client_side, server_side = memory_transport_pair()
    watched = Watched(server_side)
    with trio.fail_after(10_000):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: serve_until_idle(
                    watched,
                    server,
                    idle_timeout=60.0,
                    last_activity=lambda: watched.last_activity,
                )
            )
            async with open_session(client_side, role=Role.CLIENT, handler=NullClient()) as client:
                await client.initialize(init_params())
                # Answered after 500 s: a session running a call is never idle.
                assert await client.send_request("slow", {}, timeout=1000) == {"done": True}
                await client.wait_closed()  # then, with nothing more, the server closes it


@pytest.mark.parametrize(
    ("host", "origin", "ok"),
    [
        ("localhost:8000", None, True),
        ("127.0.0.1", None, True),
        ("[::1]:9000", "http://localhost:3000", True),
        ("127.0.0.1:80", "http://[::1]", True),
        ("localhost.evil.com", None, False),
        ("127.0.0.1", "http://evil.com", False),
        ("127.0.0.1", "http://localhost.evil.com", False),
        ("user@localhost", None, False),
        ("127.0.0.1", "null", False),
        ("", None, False),
        (None, None, False),
    ],
)
def test_handshake_allowlist(host: str | None, origin: str | None, ok: bool) -> None:
    assert handshake_allowed(host, origin, ("localhost", "127.0.0.1", "[::1]")) is ok


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("https://app.example.com", None),  # listed: accepted
        ("http://localhost:3000", 403),  # an allowed host, but the list is explicit
        ("https://evil.example.com", 403),
    ],
)
async def test_allowed_origins_hold_on_websocket_as_over_http(
    origin: str, status: int | None
) -> None:
    with trio.fail_after(20):
        async with websocket_server(allowed_origins=("https://app.example.com",)) as port:
            url = f"ws://127.0.0.1:{port}/mcp"
            if status is None:
                async with (
                    open_websocket_client_transport(url, headers=[("Origin", origin)]) as t,
                    open_session(t, role=Role.CLIENT, handler=NullClient()) as client,
                ):
                    await client.initialize(init_params())
            else:
                with pytest.raises(trio_websocket.ConnectionRejected) as refused:
                    async with open_websocket_client_transport(url, headers=[("Origin", origin)]):
                        pass
                assert refused.value.status_code == status
    no_leaked_socket()


def test_handshake_allowlist_with_explicit_origins() -> None:
    hosts = ("localhost", "127.0.0.1")
    origins = ("https://app.example.com", "http://localhost:*")
    assert handshake_allowed("127.0.0.1", "https://app.example.com", hosts, origins)
    assert handshake_allowed("127.0.0.1", "http://localhost:5173", hosts, origins)
    assert not handshake_allowed("127.0.0.1", "http://127.0.0.1:5173", hosts, origins)
    assert handshake_allowed("127.0.0.1", None, hosts, origins)  # no Origin: not a browser
    assert handshake_allowed("127.0.0.1", "https://x.example", hosts, ("*",))
