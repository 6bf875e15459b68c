"""2026-07-28 clients through the proxy (in process): the proxy serves the era each
client asks for, over Streamable HTTP and over a message stream (stdio's path). A backend
that speaks 2026 (a trimcp server here) gets their requests as they came, through one
shared connection; one that speaks only the session era makes the proxy refuse
``server/discover`` as such a server does, so auto clients fall back to a session.
Session-era clients keep their own backend sessions either way."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import trimcp
from trimcp.client import Era, connect_http, connect_transport
from trimcp.errors import McpError
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import Request
from trimcp.protocol.stateless import prepare
from trimcp.proxy import ProxyServer
from trimcp.session import serve_session
from trimcp.session.stateless import run_request
from trimcp.session.transport import Transport
from trimcp.transports.http_server import serve_http
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import TextContent

backend = trimcp.Server("upstream", version="2.0.0", instructions="the real server")
#: tag -> set when the ``hang`` call with that tag is cancelled at the backend.
cancelled: dict[str, trio.Event] = {}
eras: list[str] = []


@backend.tool()
async def count(steps: int, ctx: trimcp.Context) -> str:
    assert ctx.negotiated is not None
    eras.append(ctx.negotiated.protocol_version)
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps)
    return f"counted {steps}"


@backend.tool()
async def refuse() -> str:
    raise McpError(-32050, "refused by the upstream", {"why": "test"})


@backend.tool()
async def hang(tag: str) -> str:
    try:
        await trio.sleep_forever()
    finally:
        cancelled[tag].set()
    return "never"


def make_proxy(*, sessions_only: bool = False) -> tuple[ProxyServer, list[int]]:
    """A proxy whose backend is ``backend`` over memory, speaking both eras (or the
    session era only); counts the backend connections."""
    opened: list[int] = []

    @asynccontextmanager
    async def connect() -> AsyncIterator[Transport]:
        opened.append(1)
        proxy_end, server_end = memory_transport_pair()
        serve = (
            functools.partial(serve_session, server_end, backend)
            if sessions_only
            else functools.partial(backend.serve_stream, server_end)
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            yield proxy_end
            nursery.cancel_scope.cancel()

    return ProxyServer(connect, label="the test backend"), opened


@asynccontextmanager
async def proxy_over_http(proxy: ProxyServer) -> AsyncIterator[str]:
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_http(
                proxy, port=0, shutdown_trigger=stop.wait, task_status=task_status
            )
        )
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop.set()


async def exercise(client: trimcp.Client) -> None:
    assert client.era is Era.MODERN
    assert client.negotiated.protocol_version == "2026-07-28"
    tools = [tool.name async for tool in client.iter_tools()]
    assert set(tools) == {"count", "refuse", "hang"}
    updates: list[Any] = []
    result = await client.call_tool(
        "count", {"steps": 3}, on_progress=lambda *update: updates.append(update)
    )
    assert result.content == [TextContent(text="counted 3")]
    assert [update[0] for update in updates] == [1, 2, 3]
    with pytest.raises(McpError) as info:
        await client.call_tool("refuse")
    assert (info.value.code, info.value.message, info.value.data) == (
        -32050,
        "refused by the upstream",
        {"why": "test"},
    )


async def test_a_2026_client_over_http_and_a_session_client_side_by_side() -> None:
    proxy, opened = make_proxy()
    eras.clear()
    with trio.fail_after(30):
        async with proxy_over_http(proxy) as url:
            async with connect_http(url, mode="2026-07-28") as modern:
                await exercise(modern)
                assert modern.server_info.name == "upstream"
                async with connect_http(url, mode="legacy") as legacy:
                    assert legacy.era is Era.LEGACY
                    assert legacy.server_info.name == "upstream"
                    assert legacy.instructions == "the real server"
                    await legacy.call_tool("count", {"steps": 1})
                await exercise(modern)  # the shared backend session goes on
            async with connect_http(url) as auto:  # discover, then 2026
                await exercise(auto)
    # One shared connection for every 2026 request (the backend speaks 2026 on it), one
    # session for the session client.
    assert len(opened) == 2
    assert set(eras) == {"2026-07-28", "2025-11-25"}
    assert eras.count("2025-11-25") == 1


async def test_a_2026_client_on_a_message_stream_with_cancellation(
    autojump_clock: trio.abc.Clock,
) -> None:
    proxy, opened = make_proxy()
    cancelled["stream"] = trio.Event()
    client_end, proxy_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(functools.partial(proxy.serve_stream, proxy_end))
        async with connect_transport(client_end, mode="2026-07-28") as client:
            await exercise(client)
            with trio.move_on_after(5):
                await client.call_tool("hang", {"tag": "stream"})
            # The cancel crossed the proxy: the backend's handler was cancelled.
            with trio.fail_after(5):
                await cancelled["stream"].wait()
        nursery.cancel_scope.cancel()
    assert len(opened) == 1


async def test_a_2026_request_fails_clearly_when_the_backend_cannot_be_reached(
    autojump_clock: trio.abc.Clock,
) -> None:
    @asynccontextmanager
    async def connect() -> AsyncIterator[Transport]:
        raise OSError("connection refused")
        yield  # pragma: no cover

    proxy = ProxyServer(connect, label="the unreachable backend")
    client_end, proxy_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(functools.partial(proxy.serve_stream, proxy_end))
        with pytest.raises(McpError) as info:
            async with connect_transport(client_end, mode="2026-07-28"):
                pass  # pragma: no cover
        assert "Cannot reach the unreachable backend: connection refused" in info.value.message
        nursery.cancel_scope.cancel()


async def test_a_session_era_backend_makes_auto_clients_fall_back_to_a_session(
    autojump_clock: trio.abc.Clock,
) -> None:
    proxy, opened = make_proxy(sessions_only=True)
    async with proxy_over_http(proxy) as url:
        async with connect_http(url) as auto:
            assert auto.era is Era.LEGACY
            assert auto.server_info.name == "upstream"
            assert (await auto.call_tool("count", {"steps": 1})).content == [
                TextContent(text="counted 1")
            ]
        with pytest.raises(McpError) as info:
            async with connect_http(url, mode="2026-07-28"):
                pass  # pragma: no cover
        assert "speaks the session era" in info.value.message
        # On a message stream too: the probe is refused in a session, on the same
        # connection the client then initializes.
        client_end, proxy_end = memory_transport_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(functools.partial(proxy.serve_stream, proxy_end))
            async with connect_transport(client_end) as client:
                assert client.era is Era.LEGACY
                await client.call_tool("count", {"steps": 1})
            nursery.cancel_scope.cancel()
    # One connection learnt the era (and was closed), then one per session client.
    assert len(opened) == 3


async def test_an_http_backend_serves_2026_and_session_clients_through_the_proxy() -> None:
    # ProxyServer.for_url: the shared connection speaks 2026 to the backend over HTTP.
    eras.clear()
    stop = trio.Event()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: serve_http(
                    backend, port=0, shutdown_trigger=stop.wait, task_status=task_status
                )
            )
            proxy = ProxyServer.for_url(f"http://127.0.0.1:{port}/mcp")
            async with proxy_over_http(proxy) as url:
                async with connect_http(url) as modern:
                    await exercise(modern)
                async with connect_http(url, mode="legacy") as legacy:
                    assert legacy.server_info.name == "upstream"
                    await legacy.call_tool("count", {"steps": 1})
            stop.set()
    assert set(eras) == {"2026-07-28", "2025-11-25"}


class Collected:
    """An outlet (where a stateless request's notifications go) that keeps them."""

    def __init__(self) -> None:
        self.notes: list[tuple[str, Any]] = []

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: Any = None
    ) -> None:
        self.notes.append((method, params))


async def test_a_2026_request_that_comes_anyway_is_translated_for_a_session_era_backend(
    autojump_clock: trio.abc.Clock,
) -> None:
    # A client that skips server/discover: its requests reach the session-era backend
    # through the shared session, without the 2026 envelope, and lists come back marked
    # "do not cache" (2026 requires the hint).
    proxy, opened = make_proxy(sessions_only=True)
    eras.clear()
    meta = modern.request_meta("2026-07-28", {}, {"name": "raw", "version": "1"})
    async with proxy.open_lifespan():
        outlet = Collected()
        params = {"name": "count", "arguments": {"steps": 2}, "_meta": {**meta, "progressToken": 7}}
        prepared = prepare(proxy, Request(id=1, method="tools/call", params=params))
        answer = await run_request(proxy, prepared, outlet)
        assert answer.error is None
        assert answer.result.content == [TextContent(text="counted 2")]
        assert [params["progress"] for _, params in outlet.notes] == [1, 2]
        assert {params["progressToken"] for _, params in outlet.notes} == {7}
        listed = await run_request(
            proxy,
            prepare(proxy, Request(id=2, method="tools/list", params={"_meta": meta})),
            outlet,
        )
        assert (listed.result.ttl_ms, listed.result.cache_scope) == (0, "private")
    assert eras == ["2025-11-25"]
    assert len(opened) == 1
