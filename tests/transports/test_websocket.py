"""WebSocket transport: a real socket on 127.0.0.1, handshake checks, sessions over it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio_websocket

from tests.support import NullClient, init_params, make_server
from trimcp.protocol.lifecycle import Role
from trimcp.session import RequestContext, open_session
from trimcp.transports.websocket import (
    handshake_allowed,
    open_websocket_client_transport,
    serve_websocket,
)

# trio-websocket 0.12's client leaves its socket to the garbage collector when the server
# rejects the handshake; that ResourceWarning is theirs, not a leak in trimcp.
LEAKY_REJECT = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def echo_server() -> Any:
    server = make_server()

    @server.request_handler("echo")
    async def echo(ctx: RequestContext) -> dict[str, Any]:
        return {"params": ctx.params}

    return server


@asynccontextmanager
async def websocket_server() -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_websocket(echo_server(), port=0, task_status=task_status)
        )
        yield port
        nursery.cancel_scope.cancel()


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


@LEAKY_REJECT
@pytest.mark.parametrize(
    ("url", "headers"),
    [
        ("ws://127.0.0.1:{port}/mcp", [("Origin", "http://evil.example.com")]),
        ("ws://127.0.0.1:{port}/mcp", [("Origin", "http://localhost.evil.com")]),
        ("ws://127.0.0.1:{port}/other", []),
    ],
)
async def test_hostile_handshakes_are_refused(url: str, headers: list[tuple[str, str]]) -> None:
    with trio.fail_after(20):
        async with websocket_server() as port:
            with pytest.raises(trio_websocket.HandshakeError):
                async with open_websocket_client_transport(url.format(port=port), headers=headers):
                    pass


@LEAKY_REJECT
async def test_missing_subprotocol_is_refused() -> None:
    with trio.fail_after(20):
        async with websocket_server() as port:
            with pytest.raises(trio_websocket.HandshakeError):
                async with trio_websocket.open_websocket_url(f"ws://127.0.0.1:{port}/mcp"):
                    pass


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
