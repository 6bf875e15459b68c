"""ProxyProvider: another server's components served next to a server's own, behind its
transforms, in either era of the backend (in memory, autojump)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

import trimcp
from trimcp import Context, McpError, Server
from trimcp.proxy import ProxyProvider
from trimcp.server.lifespan import LifespanFailed
from trimcp.server.transforms import Namespace
from trimcp.session.transport import Transport
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import TextContent

MODES = ["legacy", "2026-07-28"]


class Backend:
    def __init__(self) -> None:
        self.app = Server("backend", "2.0")
        self.started = trio.Event()
        self.cancelled = trio.Event()
        app = self.app

        @app.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        @app.tool()
        def refuse() -> str:
            raise trimcp.ToolError("not today")

        @app.tool()
        async def slow(ctx: Context) -> str:
            self.started.set()
            try:
                await trio.sleep_forever()
            finally:
                self.cancelled.set()
            return "never"

        @app.prompt()
        def greet(name: str) -> str:
            return f"hello {name}"

        @app.resource("memo://today")
        def today() -> str:
            return "milk"

        @app.resource("weather://{city}/now")
        def now(city: str) -> str:
            return f"now in {city}"

        #: How many connections were opened to it.
        self.opened = 0

    @asynccontextmanager
    async def open_transport(self) -> AsyncIterator[Transport]:
        self.opened += 1
        near, far = memory_transport_pair()
        async with trio.open_nursery() as nursery:
            await nursery.start(self.app.serve_stream, far)
            yield near
            nursery.cancel_scope.cancel()

    def transport(self, mode: str) -> ProxyProvider:
        return ProxyProvider.for_transport(self.open_transport, label="backend", mode=mode)


def front(provider: ProxyProvider) -> Server:
    app = Server("front")

    @app.tool()
    def hello() -> str:
        return "hi"

    app.add_provider(provider, transforms=[Namespace("be")])
    return app


@pytest.mark.parametrize("mode", MODES)
async def test_the_backends_components_are_served_and_answered_by_it(
    autojump_clock: trio.testing.MockClock, mode: str
) -> None:
    backend = Backend()
    app = front(backend.transport(mode))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        assert tools == ["hello", "be_add", "be_refuse", "be_slow"]
        added = await client.call_tool("be_add", {"a": 2, "b": 3})
        assert added.structured_content == {"result": 5}
        refused = await client.call_tool("be_refuse", {})
        assert refused.is_error
        assert refused.content == [TextContent(text="not today")]
        invalid = await client.call_tool("be_add", {"a": "x"})  # the backend's own answer
        assert invalid.is_error
        with pytest.raises(McpError) as info:  # the backend's JSON-RPC error
            await client.get_prompt("be_greet", {})
        assert info.value.code == -32602
        prompt = await client.get_prompt("be_greet", {"name": "Ada"})
        assert prompt.messages[0].content == TextContent(text="hello Ada")
        read = await client.read_resource("memo://today")
        assert [getattr(c, "text", None) for c in read.contents] == ["milk"]
        read = await client.read_resource("weather://oslo/now")
        assert [getattr(c, "text", None) for c in read.contents] == ["now in oslo"]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["weather://{city}/now"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_change_on_the_backend_reaches_the_fronts_clients(
    autojump_clock: trio.testing.MockClock, mode: str
) -> None:
    backend = Backend()
    app = front(backend.transport(mode))
    changed = trio.Event()
    async with trimcp.connect_memory(
        app, mode="legacy", on_tools_list_changed=changed.set
    ) as client:
        backend.app.add_tool(lambda: "new", name="fresh")
        with trio.fail_after(30):
            await changed.wait()
        tools = [tool.name for tool in (await client.list_tools()).tools]
        assert "be_fresh" in tools
        assert (await client.call_tool("be_fresh", {})).content == [TextContent(text="new")]


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_the_caller_cancels_the_backends_call(
    autojump_clock: trio.testing.MockClock, mode: str
) -> None:
    backend = Backend()
    app = front(backend.transport(mode))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        with trio.move_on_after(5):
            await client.call_tool("be_slow", {})
        with trio.fail_after(30):
            await backend.cancelled.wait()
        assert backend.started.is_set()


async def test_an_unreachable_backend_stops_the_server_from_serving() -> None:
    @asynccontextmanager
    async def nowhere() -> AsyncIterator[Transport]:
        raise OSError("connection refused")
        yield

    app = front(ProxyProvider.for_transport(nowhere, label="nowhere"))
    with pytest.raises(LifespanFailed, match="nowhere"):
        async with app.open_lifespan():
            pass  # pragma: no cover


def test_a_proxy_provider_is_a_provider_like_any() -> None:
    from trimcp.server.providers import Provider

    assert issubclass(ProxyProvider, Provider)
    provider = ProxyProvider.for_url("http://127.0.0.1:1/mcp")
    assert provider.components("tools") == []  # nothing until the lifespan lists it
    with pytest.raises(McpError, match="not connected"):
        provider.client()


async def test_servers_serving_one_proxy_provider_share_its_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    backend = Backend()
    provider = backend.transport("legacy")
    one, two = front(provider), Server("two")
    two.add_provider(provider)
    async with one.open_lifespan(), two.open_lifespan():
        assert backend.opened == 1
        async with trimcp.connect_memory(two, mode="legacy") as client:
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {
                "result": 2
            }
