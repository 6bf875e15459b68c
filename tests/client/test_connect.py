"""Openers: the handshake, errors surfacing as one exception, cancellation, attach by hand."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from tests.client.helpers import RecordingServer, client_and_server
from trimcp.client import Client, connect_memory, connect_transport
from trimcp.errors import (
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
    LocalProtocolError,
    McpError,
    RequestTimeout,
    SessionClosed,
)
from trimcp.protocol.lifecycle import Role
from trimcp.session import RequestContext, SessionOptions, open_session, serve_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import CallToolResult


class RefusingServer(RecordingServer):
    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method == "initialize":
            raise McpError(INVALID_PARAMS, "go away")
        return await super().handle_request(ctx)


class SilentServer(RecordingServer):
    """Never answers initialize."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        await trio.sleep_forever()


async def test_a_refused_handshake_raises_the_servers_error() -> None:
    with pytest.raises(McpError) as info:
        async with connect_memory(RefusingServer()):
            raise AssertionError("not reached")
    assert (info.value.code, info.value.message) == (INVALID_PARAMS, "go away")


async def test_a_version_we_do_not_speak_is_refused() -> None:
    server = RecordingServer(supported_versions=("1999-01-01",))
    with pytest.raises(McpError) as info:
        async with connect_memory(server):
            raise AssertionError("not reached")
    assert info.value.code == UNSUPPORTED_PROTOCOL_VERSION
    assert "1999-01-01" in info.value.message


async def test_a_silent_server_times_out_the_handshake(autojump_clock: Any) -> None:
    start = trio.current_time()
    with pytest.raises(RequestTimeout) as info:
        async with connect_memory(SilentServer(), options=SessionOptions(request_timeout=4)):
            raise AssertionError("not reached")
    assert info.value.code == REQUEST_TIMEOUT
    assert trio.current_time() - start == pytest.approx(4)


async def test_a_server_that_hangs_up_fails_the_handshake(autojump_clock: Any) -> None:
    client_end, server_end = memory_transport_pair()
    await server_end.aclose()
    with pytest.raises(SessionClosed):
        async with connect_transport(client_end):
            raise AssertionError("not reached")


async def test_an_error_in_the_body_surfaces_as_itself() -> None:
    async def body() -> None:
        async with connect_memory(RecordingServer()) as client:
            await client.ping()
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await body()


async def test_cancelling_the_handshake_leaves_nothing_behind(autojump_clock: Any) -> None:
    with trio.move_on_after(2) as scope:
        async with connect_memory(SilentServer()):
            raise AssertionError("not reached")
    assert scope.cancelled_caught  # and no_leaked_tasks checks the rest


async def test_leaving_the_block_closes_the_session_and_the_server(autojump_clock: Any) -> None:
    async with client_and_server(RecordingServer()) as (client, server):
        session = client.session
    assert session.closed
    assert server.closed


async def test_server_options_apply_to_the_in_process_server(autojump_clock: Any) -> None:
    server = RecordingServer()

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        await trio.sleep(100)
        return CallToolResult(content=[])

    async with connect_memory(server, server_options=SessionOptions(handler_timeout=3)) as c:
        with pytest.raises(McpError, match="exceeded the handler timeout") as info:
            await c.call_tool("slow", timeout=None)  # only the server's timeout can end it
    assert info.value.code == REQUEST_TIMEOUT


async def test_attach_by_hand_and_its_misuse() -> None:
    client = Client()
    with pytest.raises(LocalProtocolError, match="not connected"):
        client.session  # noqa: B018
    with pytest.raises(LocalProtocolError, match="initialize"):
        client.server_info  # noqa: B018

    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_session, server_end, RecordingServer())
        async with open_session(client_end, role=Role.CLIENT, handler=client) as session:
            result = await client.attach(session)
            assert result.server_info.name == "test-server"
            assert client.server_info.name == "test-server"
            await client.ping()
            with pytest.raises(LocalProtocolError, match="already attached"):
                await client.attach(session)

    other_end, _peer = memory_transport_pair()
    async with open_session(other_end, role=Role.SERVER, handler=RecordingServer()) as wrong:
        with pytest.raises(LocalProtocolError, match="role"):
            await Client().attach(wrong)


async def test_a_deadline_around_the_whole_block_still_tells_the_server(
    autojump_clock: Any,
) -> None:
    # The deadline covers the client's session too, not just the call: the cancel must
    # still reach the server as notifications/cancelled, and the close must not wait out
    # its whole bound (regression: the session's writer and closer died with the block).
    server = RecordingServer()
    seen: list[bool] = []

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        try:
            await trio.sleep_forever()
        finally:
            seen.append(ctx.cancelled_by_peer)

    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_session, server_end, server)
        with trio.move_on_after(5) as scope:
            async with connect_transport(client_end) as client:
                await client.call_tool("slow", timeout=None)
        assert scope.cancelled_caught
        assert trio.current_time() == pytest.approx(5)
        await trio.testing.wait_all_tasks_blocked()
        assert seen == [True]
