"""One server shell: LowLevelServer, Server and ProxyServer answer what the shell decides
(versions, ``initialize``, ``server/discover``, the dispatch miss) the same way, in both
eras, over one stream each (in memory, autojump)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from trimcp import Server
from trimcp.protocol import modern
from trimcp.proxy import ProxyServer
from trimcp.server.lowlevel import LowLevelServer
from trimcp.server.shell import ServerShell
from trimcp.session.context import RequestContext
from trimcp.session.transport import Outgoing, Transport
from trimcp.transports.memory import MemoryTransport, memory_transport_pair
from trimcp.types import Implementation, ServerCapabilities, ToolsCapability

V = "2026-07-28"
VERSIONS = ("2025-11-25", "2025-06-18")
META = {modern.META_PROTOCOL_VERSION: V, modern.META_CLIENT_CAPABILITIES: {}}
INITIALIZE = {
    "protocolVersion": "2024-11-05",  # not spoken: the latest is offered instead
    "capabilities": {},
    "clientInfo": {"name": "c", "version": "1"},
}


def lowlevel() -> LowLevelServer:
    return LowLevelServer(
        Implementation(name="shell", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability(list_changed=True)),
        instructions="be kind",
        supported_versions=VERSIONS,
    )


def server() -> Server:
    app = Server("shell", "1", instructions="be kind", supported_versions=VERSIONS)
    app.add_tool(lambda: "x", name="x")
    return app


def proxy() -> ProxyServer:
    backend = server()

    @asynccontextmanager
    async def connect() -> AsyncIterator[Transport]:
        near, far = memory_transport_pair()
        async with trio.open_nursery() as nursery:
            await nursery.start(backend.serve_stream, far)
            yield near
            nursery.cancel_scope.cancel()

    return ProxyServer(connect, supported_versions=VERSIONS)


SHELLS: list[Callable[[], ServerShell]] = [lowlevel, server, proxy]


class Peer:
    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport

    async def ask(self, request_id: int, method: str, params: dict[str, Any]) -> Any:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self.transport.send([Outgoing(json.dumps(message).encode())])
        with trio.fail_after(30):
            return json.loads(await self.transport.receive())


@asynccontextmanager
async def stream(shell: ServerShell) -> AsyncIterator[Peer]:
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(shell.serve_stream, server_end)
        yield Peer(client_end)
        await client_end.aclose()


@pytest.mark.parametrize("make", SHELLS, ids=["lowlevel", "server", "proxy"])
async def test_every_shell_answers_discover_and_the_miss_alike(
    autojump_clock: trio.testing.MockClock, make: Callable[[], ServerShell]
) -> None:
    shell = make()
    assert shell.advertised_versions == (V, *VERSIONS)
    async with stream(shell) as peer:
        found = (await peer.ask(1, "server/discover", {"_meta": META}))["result"]
        assert found["supportedVersions"] == [V, *VERSIONS]
        assert found["instructions"] == "be kind"
        assert found["capabilities"]["tools"] == {"listChanged": True}
        assert (found["ttlMs"], found["cacheScope"]) == (0, "public")
        missed = await peer.ask(2, "no/such", {"_meta": META})
        assert missed["error"] == {"code": -32601, "message": "Method not found: no/such"}


@pytest.mark.parametrize("make", SHELLS, ids=["lowlevel", "server", "proxy"])
async def test_every_shell_answers_initialize_and_the_miss_alike(
    autojump_clock: trio.testing.MockClock, make: Callable[[], ServerShell]
) -> None:
    async with stream(make()) as peer:
        agreed = (await peer.ask(0, "initialize", INITIALIZE))["result"]
        assert agreed["protocolVersion"] == VERSIONS[0]
        assert agreed["instructions"] == "be kind"
        assert agreed["capabilities"]["tools"] == {"listChanged": True}
        missed = await peer.ask(1, "no/such", {})
        assert missed["error"] == {"code": -32601, "message": "Method not found: no/such"}


class Wrapped(LowLevelServer):
    """A server of its own that answers 2026 requests its own way."""

    async def answer_stateless(self, ctx: RequestContext) -> Any:
        if ctx.method == "tools/call":
            return {"content": [{"type": "text", "text": "wrapped"}]}
        return await super().answer_stateless(ctx)


async def test_a_shell_that_answers_2026_its_own_way_is_asked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The shell answers a 2026 request from its method table inline unless its class
    # overrides answer_stateless: the override must still be asked, and the plain
    # low-level server still answers from its table.
    plain = lowlevel()

    @plain.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "table"}]}

    params = {"name": "x", "_meta": META}
    async with stream(plain) as peer:
        answered = (await peer.ask(1, "tools/call", params))["result"]
        assert answered["content"][0]["text"] == "table"
    wrapped = Wrapped(
        Implementation(name="shell", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )
    async with stream(wrapped) as peer:
        answered = (await peer.ask(1, "tools/call", params))["result"]
        assert answered["content"][0]["text"] == "wrapped"
        missed = await peer.ask(2, "no/such", {"_meta": META})
        assert missed["error"] == {"code": -32601, "message": "Method not found: no/such"}


class Watched(LowLevelServer):
    """A server of its own that sees every request first (its own handle_request)."""

    def __init__(self) -> None:
        super().__init__(
            Implementation(name="shell", version="1"),
            capabilities=ServerCapabilities(tools=ToolsCapability()),
        )
        self.seen: list[str] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        self.seen.append(ctx.method)
        return await super().handle_request(ctx)


def test_a_2026_request_skips_only_a_shell_that_would_forward_it() -> None:
    # stateless_table hands a transport the table's lookup only when the class keeps the
    # shell's handle_request and answer_stateless (which would just forward); the lookup
    # sees a handler added after it was handed over.
    plain = lowlevel()
    table = plain.stateless_table()
    assert table is not None

    @plain.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        return {}

    assert table("tools/call") is call
    assert table("no/such") is None
    for own in (Watched(), Wrapped(Implementation(name="shell", version="1"))):
        own.request_handler("tools/call")(call)
        assert own.stateless_table() is None


async def test_a_shell_that_handles_requests_its_own_way_sees_2026_ones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    watched = Watched()

    @watched.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "table"}]}

    async with stream(watched) as peer:
        answered = (await peer.ask(1, "tools/call", {"name": "x", "_meta": META}))["result"]
        assert answered["content"][0]["text"] == "table"
        missed = await peer.ask(2, "no/such", {"_meta": META})
        assert missed["error"]["code"] == -32601
    assert watched.seen == ["tools/call", "no/such"]


async def test_a_2026_request_is_admitted_by_the_offer_in_force(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Agreements, offers and admitted methods are kept while nothing changes: a server
    # that withdraws a capability between two requests refuses the second, and offering
    # it again admits the third; new instructions or a new identity are agreed at once.
    shell = lowlevel()

    @shell.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        agreed = ctx.negotiated
        assert agreed is not None
        assert agreed.instructions == shell.instructions
        assert agreed.server_info is shell.info
        return {"content": [{"type": "text", "text": "called"}]}

    params = {"name": "x", "_meta": META}
    offered = shell.capabilities
    async with stream(shell) as peer:
        assert (await peer.ask(1, "tools/call", params))["result"]["content"][0]["text"] == "called"
        shell.capabilities = ServerCapabilities()
        refused = (await peer.ask(2, "tools/call", params))["error"]
        assert refused["code"] == -32601
        assert "capability tools was not declared" in refused["message"]
        shell.capabilities = offered
        assert (await peer.ask(3, "tools/call", params))["result"]["content"][0]["text"] == "called"
        shell.instructions = "be brief"
        assert (await peer.ask(4, "tools/call", params))["result"]["content"][0]["text"] == "called"
        shell.info = Implementation(name="renamed", version="2")
        assert (await peer.ask(5, "tools/call", params))["result"]["content"][0]["text"] == "called"


async def test_a_2026_request_sees_what_the_app_serves_now(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The app keeps its capabilities (and its Offer) until something registered changes:
    # a tool removed between two 2026 requests is refused as undeclared, a tool added
    # back is admitted, a tool disabled stays declared, and a completer added at runtime
    # is declared by the next server/discover.
    app = server()
    params = {"name": "x", "_meta": META}
    async with stream(app) as peer:
        assert (await peer.ask(1, "tools/call", params))["result"]["content"][0]["text"] == "x"
        found = (await peer.ask(2, "server/discover", {"_meta": META}))["result"]
        assert "completions" not in found["capabilities"]
        app.remove_tool("x")
        refused = (await peer.ask(3, "tools/call", params))["error"]
        assert refused["code"] == -32601
        assert "capability tools was not declared" in refused["message"]
        app.add_tool(lambda: "y", name="x")
        assert (await peer.ask(4, "tools/call", params))["result"]["content"][0]["text"] == "y"
        tool = app.get_tool("x")
        assert tool is not None
        tool.disable()
        unknown = (await peer.ask(5, "tools/call", params))["error"]
        assert unknown["code"] == -32602  # declared, but no such tool
        app.complete_argument(prompt="p", argument="a")(lambda value: [value])
        found = (await peer.ask(6, "server/discover", {"_meta": META}))["result"]
        assert found["capabilities"]["completions"] == {}


@pytest.mark.parametrize("make", SHELLS, ids=["lowlevel", "server", "proxy"])
def test_every_shell_runs_with_any_serve_setting(make: Callable[[], ServerShell]) -> None:
    # run() is the shell's: the proxy's took any ServeSettings field (store=, reuse_port=),
    # and so do the others now.
    from trimcp.server.serving import capturing_run_calls

    shell = make()
    with capturing_run_calls() as calls:
        shell.run("http", port=0, reuse_port=True, store=None)
    assert [(call.server, call.arguments) for call in calls] == [
        (shell, {"transport": "http", "port": 0, "reuse_port": True})
    ]


class OwnSessionAnswers(LowLevelServer):
    """A server of its own that answers session-era requests its own way."""

    async def answer_in_session(self, ctx: RequestContext) -> Any:
        if ctx.method == "tools/call":
            return {"content": [{"type": "text", "text": "own"}]}
        return await super().answer_in_session(ctx)


class OwnLookup(LowLevelServer):
    """A server of its own that finds its handlers its own way."""

    def handler_for(self, method: str) -> Any:
        if method == "tools/call":

            async def looked_up(ctx: RequestContext) -> Any:
                return {"content": [{"type": "text", "text": "looked up"}]}

            return looked_up
        return super().handler_for(method)


@pytest.mark.parametrize(
    ("make", "text"),
    [(lowlevel, "table"), (OwnSessionAnswers, "own"), (OwnLookup, "looked up")],
    ids=["plain", "answer_in_session", "handler_for"],
)
async def test_a_session_request_is_answered_from_the_table_unless_the_class_says_otherwise(
    autojump_clock: trio.testing.MockClock, make: Callable[..., LowLevelServer], text: str
) -> None:
    # The shell answers a session-era request from its method table inline unless its
    # class overrides answer_in_session or handler_for: either override is still asked.
    if make is lowlevel:
        shell = lowlevel()
    else:
        shell = make(
            Implementation(name="shell", version="1"),
            capabilities=ServerCapabilities(tools=ToolsCapability()),
        )

    @shell.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": "table"}]}

    async with stream(shell) as peer:
        await peer.ask(0, "initialize", INITIALIZE)
        answered = (await peer.ask(1, "tools/call", {"name": "x"}))["result"]
        assert answered["content"][0]["text"] == text
        missed = await peer.ask(2, "no/such", {})
        assert missed["error"] == {"code": -32601, "message": "Method not found: no/such"}
