"""One message stream (stdio), either era: the first request decides (in memory, autojump)."""

from __future__ import annotations

import gc
import json
import math
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from trimcp import Context, Server
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import InvalidMessage, parse_json
from trimcp.proxy import ProxyServer
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext
from trimcp.session.context import ContextOutlet
from trimcp.session.options import SessionOptions
from trimcp.session.transport import MessageTooLarge, Outgoing
from trimcp.transports.memory import MemoryTransport, memory_transport_pair
from trimcp.transports.ndjson import NdjsonTransport
from trimcp.types import CallToolResult, Implementation, ServerCapabilities, ToolsCapability

V = "2026-07-28"
META = {modern.META_PROTOCOL_VERSION: V, modern.META_CLIENT_CAPABILITIES: {"elicitation": {}}}


class Probe:
    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()


def make_server(probe: Probe) -> Server:
    app = Server("stream", "1.0")

    @app.tool()
    async def slow(ctx: Context) -> str:
        probe.started.set()
        try:
            await trio.sleep_forever()
        finally:
            probe.cancelled.set()
        return "never"

    @app.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"n": {"type": "string"}}}, key="n"
        )
        return f"hi {outcome.data['n']}" if outcome.data else "no"

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app


class Peer:
    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport

    async def send(self, message: dict[str, Any]) -> None:
        await self.transport.send([Outgoing(json.dumps(message).encode())])

    async def request(
        self,
        request_id: int,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        modern_meta: bool = True,
    ) -> None:
        params = dict(params or {})
        if modern_meta:
            params["_meta"] = META
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    async def next(self) -> Any:
        with trio.fail_after(30):
            return json.loads(await self.transport.receive())


@asynccontextmanager
async def connection(probe: Probe | None = None) -> AsyncIterator[tuple[Server, Peer]]:
    server = make_server(probe or Probe())
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_stream, server_end)
        yield server, Peer(client_end)
        await client_end.aclose()


async def test_a_2026_first_request_makes_the_stream_stateless(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connection() as (_, peer):
        await peer.request(1, "server/discover")
        found = await peer.next()
        assert found["result"]["supportedVersions"][0] == V
        assert found["result"]["_meta"][modern.META_SERVER_INFO]["name"] == "stream"
        await peer.request(2, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert (await peer.next())["result"]["content"][0]["text"] == "x"
        # The era is the connection's: a session-era handshake is refused on it.
        await peer.request(
            3,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
            modern_meta=False,
        )
        refused = await peer.next()
        assert refused["error"]["code"] == -32600
        assert "2026-07-28" in refused["error"]["message"]
        await peer.request(4, "ping")
        assert (await peer.next())["error"]["code"] == -32601


async def test_an_initialize_first_makes_it_a_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connection() as (_, peer):
        await peer.request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
            modern_meta=False,
        )
        assert (await peer.next())["result"]["protocolVersion"] == "2025-11-25"
        await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await peer.request(1, "ping", modern_meta=False)
        assert (await peer.next())["result"] == {}
        # A 2026 request on that session is refused, and nothing runs.
        await peer.request(2, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert (await peer.next())["error"]["code"] == -32600


async def test_notifications_cancelled_cancels_that_request_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    probe = Probe()
    async with connection(probe) as (_, peer):
        await peer.request(1, "tools/call", {"name": "slow"})
        await probe.started.wait()
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        )
        await probe.cancelled.wait()
        await peer.request(2, "tools/call", {"name": "echo", "arguments": {"text": "after"}})
        answer = await peer.next()
        assert answer["id"] == 2  # nothing was sent for request 1
        assert answer["result"]["content"][0]["text"] == "after"


async def test_input_required_over_the_stream(autojump_clock: trio.testing.MockClock) -> None:
    async with connection() as (_, peer):
        await peer.request(1, "tools/call", {"name": "ask"})
        first = (await peer.next())["result"]
        assert first["resultType"] == "input_required"
        await peer.request(
            2,
            "tools/call",
            {
                "name": "ask",
                "requestState": first["requestState"],
                "inputResponses": {"n": {"action": "accept", "content": {"n": "Bo"}}},
            },
        )
        assert (await peer.next())["result"]["content"][0]["text"] == "hi Bo"


async def test_listen_on_the_stream_and_its_end(autojump_clock: trio.testing.MockClock) -> None:
    async with connection() as (server, peer):
        await peer.request(5, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        ack = await peer.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"] == {modern.META_SUBSCRIPTION_ID: 5}
        server.add_tool(lambda: "x", name="added")
        changed = await peer.next()
        assert changed["method"] == "notifications/tools/list_changed"
        assert changed["params"]["_meta"] == {modern.META_SUBSCRIPTION_ID: 5}
        # Cancelling the listen request ends it without an answer.
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        )
        await peer.request(6, "tools/list")
        listed = await peer.next()
        assert listed["id"] == 6


async def test_end_of_input_ends_listen_streams_with_their_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server(Probe())
    client_end, server_end = memory_transport_pair()
    peer = Peer(client_end)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_stream, server_end)
        await peer.request(7, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        await peer.next()
        client_end._send_channel.close()  # the client ends its input (stdin EOF)
        final = await peer.next()
        assert final == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "resultType": "complete",
                "_meta": {
                    modern.META_SUBSCRIPTION_ID: 7,
                    modern.META_SERVER_INFO: {"name": "stream", "version": "1.0"},
                },
            },
        }


class _Oversized:
    """A stream whose peer sends ``oversized`` messages past the size limit, then ``then``
    (whole messages), then ends its input."""

    def __init__(self, oversized: int, then: list[dict[str, Any]] | None = None) -> None:
        self.incoming: list[bytes | MessageTooLarge] = [MessageTooLarge(64)] * oversized
        self.incoming += [json.dumps(message).encode() for message in then or []]
        self.sent: list[Any] = []
        self.closed = False

    async def receive(self) -> bytes:
        await trio.lowlevel.checkpoint()
        if not self.incoming:
            raise trio.EndOfChannel
        item = self.incoming.pop(0)
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    async def send(self, messages: list[Outgoing]) -> None:
        await trio.lowlevel.checkpoint()
        self.sent.extend(json.loads(message.data) for message in messages)

    async def aclose(self) -> None:
        self.closed = True


def _proxy() -> ProxyServer:
    @asynccontextmanager
    async def never_connected() -> AsyncIterator[Any]:
        raise AssertionError("the backend is not needed before a request")
        yield

    return ProxyServer(never_connected)


@pytest.mark.parametrize("make", [lambda: make_server(Probe()), _proxy], ids=["server", "proxy"])
@pytest.mark.parametrize("oversized", [1, 2])
async def test_oversized_first_messages_are_refused_each_and_the_end_ends_the_stream(
    autojump_clock: trio.testing.MockClock, make: Any, oversized: int
) -> None:
    # Every server shell chooses the era the same way: each message past the limit is
    # answered -32600 and the next one decides; the peer leaving before any other message
    # ends serving quietly.
    stream = _Oversized(oversized)
    await make().serve_stream(stream)
    assert [m["error"]["code"] for m in stream.sent] == [-32600] * oversized
    assert all(m["id"] is None for m in stream.sent)


async def test_a_request_after_an_oversized_first_message_decides_the_era(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    stream = _Oversized(1, [ping])
    await make_server(Probe()).serve_stream(stream)
    refused, listed = stream.sent
    assert refused["error"]["code"] == -32600
    assert listed["id"] == 1
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["slow", "ask", "echo"]


async def test_a_stream_runs_at_most_max_in_flight_and_cancels_the_rest_after_the_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    running: list[int] = []
    peak = 0
    release = trio.Event()
    probe = Probe()
    app = make_server(probe)

    @app.tool()
    async def hold(n: int) -> str:
        nonlocal peak
        running.append(n)
        peak = max(peak, len(running))
        try:
            await release.wait()
        finally:
            running.remove(n)
        return str(n)

    client_end, server_end = memory_transport_pair()
    options = SessionOptions(max_in_flight=2, shutdown_grace=5.0)
    peer = Peer(client_end)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(app.serve_stream, server_end, options=options))
        for n in range(1, 6):
            await peer.request(n, "tools/call", {"name": "hold", "arguments": {"n": n}})
        await trio.testing.wait_all_tasks_blocked()
        assert len(running) == 2  # the reader waits for room: the rest are not read yet
        release.set()
        answered = {(await peer.next())["id"] for _ in range(5)}
        assert answered == {1, 2, 3, 4, 5}
        assert peak == 2
        # At the end of input a request still running gets the grace, then is cancelled.
        await peer.request(6, "tools/call", {"name": "slow"})
        await probe.started.wait()
        ended = trio.current_time()
        await client_end.aclose()  # (the server's reads end; the request gets no answer)
        with trio.fail_after(60):
            await probe.cancelled.wait()
        assert trio.current_time() - ended == pytest.approx(5.0)


async def test_an_ended_request_is_freed_without_the_cyclic_gc(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A request's context (and what it holds: its scope, its params) is freed by reference
    counting when the request ends: its outlet and its context no longer hold each other
    (a cycle per request left the cyclic GC about 5 objects per request to find)."""
    server = LowLevelServer(
        Implementation(name="s", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )
    scopes: list[weakref.ref[trio.CancelScope]] = []

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        scopes.append(weakref.ref(ctx.cancel_scope))
        return CallToolResult(content=[])

    client_end, server_end = memory_transport_pair()
    peer = Peer(client_end)
    gc.disable()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_stream, server_end)
            for request_id in (1, 2):
                await peer.request(request_id, "tools/call", {"name": "x"})
                assert "result" in await peer.next()
            await trio.testing.wait_all_tasks_blocked()
            assert [scope() for scope in scopes] == [None, None]
            await client_end.aclose()
    finally:
        gc.enable()


class _QuietOutlet(ContextOutlet):
    __slots__ = ()

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: Any = None
    ) -> None:
        pass


async def test_a_stateless_context_is_the_one_the_class_makes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """ContextOutlet.context (stdio's context, made without the class call) sets every slot
    as RequestContext's __init__ does (a slot it forgets fails here: unset, or another
    value), in a scope of its own with the outlet's timeout as its deadline (none for a
    listen stream), and keeps it."""
    from trimcp.protocol.negotiated import Negotiated

    negotiated = object.__new__(Negotiated)
    trace = modern.TraceContext(traceparent="00-" + "1" * 32 + "-" + "2" * 16 + "-01")
    for method, timeout, deadline in [
        ("tools/call", None, math.inf),
        ("tools/call", 5.0, 5.0),
        ("subscriptions/listen", 5.0, math.inf),
    ]:
        outlet = _QuietOutlet()
        outlet.timeout = timeout
        made = outlet.context("id-1", method, {"n": 1}, 7, negotiated, trace)
        assert outlet.ctx is made
        scope = made.cancel_scope
        assert scope.deadline - trio.current_time() == pytest.approx(deadline)
        expected = RequestContext(
            None, "id-1", method, {"n": 1}, 7, scope, negotiated, outlet, None, trace
        )
        slots = RequestContext.__slots__
        made_slots = [getattr(made, name) for name in slots]
        assert made_slots == [getattr(expected, name) for name in slots]


async def test_pipelined_requests_read_at_once_keep_order_limits_and_refusals() -> None:
    # Over pipes the stream takes every message one read brought (receive_many): still at
    # most max_in_flight at once, an over-long line refused in its place, a blank one
    # skipped, every request answered.
    running: list[int] = []
    peak = 0
    app = make_server(Probe())

    @app.tool()
    async def hold(n: int) -> str:
        nonlocal peak
        running.append(n)
        peak = max(peak, len(running))
        await trio.lowlevel.checkpoint()
        running.remove(n)
        return str(n)

    to_server, from_server = os.pipe(), os.pipe()
    server_end = NdjsonTransport(
        trio.lowlevel.FdStream(to_server[0]),
        trio.lowlevel.FdStream(from_server[1]),
        max_message_bytes=1000,
    )
    lines = []
    for n in range(1, 9):
        call = {"name": "hold", "arguments": {"n": n}, "_meta": META}
        request = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call}
        lines.append(json.dumps(request))
        if n == 4:
            lines += ["x" * 2000, "  "]
    os.write(to_server[1], ("\n".join(lines) + "\n").encode())
    os.close(to_server[1])
    options = SessionOptions(max_in_flight=2)
    with trio.fail_after(30):
        await app.serve_stream(server_end, options=options)
    with os.fdopen(from_server[0], "rb") as out:
        answers = [json.loads(line) for line in out.read().splitlines()]
    refused = [a for a in answers if "error" in a]
    assert [(a["id"], a["error"]["code"]) for a in refused] == [(None, -32600)]
    results = {a["id"]: a["result"]["content"][0]["text"] for a in answers if "result" in a}
    assert results == {n: str(n) for n in range(1, 9)}
    assert peak == 2


async def test_pipelined_requests_read_at_once_keep_big_integers_exact() -> None:
    # The stream checks every line of a read for long digit runs at once (parse_json's
    # big-integer check, screened): a line with one still goes to the exact parser, in
    # whatever place of the read it is, and the others do not change how it is read.
    app = make_server(Probe())

    @app.tool()
    async def echo_int(n: int) -> str:
        return str(n)

    to_server, from_server = os.pipe(), os.pipe()
    server_end = NdjsonTransport(
        trio.lowlevel.FdStream(to_server[0]), trio.lowlevel.FdStream(from_server[1])
    )
    big = [2**64, -(2**63) - 1, 10**30 + 7]
    ids: list[int] = [1, 2**64 + 1, 3, 10**18, -(2**63) - 5, 6]
    lines = []
    for index, request_id in enumerate(ids):
        n = big[index % 3] if index % 2 else index
        call = {"name": "echo_int", "arguments": {"n": n}, "_meta": META}
        request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call}
        lines.append(json.dumps(request))
    os.write(to_server[1], ("\n".join(lines) + "\n").encode())
    os.close(to_server[1])
    with trio.fail_after(30):
        await app.serve_stream(server_end)
    with os.fdopen(from_server[0], "rb") as out:
        answers = [json.loads(line) for line in out.read().splitlines()]
    results = {a["id"]: a["result"]["content"][0]["text"] for a in answers}
    expected = {
        request_id: str(big[index % 3] if index % 2 else index)
        for index, request_id in enumerate(ids)
    }
    assert results == expected


async def test_pipelined_messages_read_at_once_are_refused_as_parse_json_refuses() -> None:
    # Screened lines go to orjson directly; what it refuses goes to parse_json, which
    # reads it exactly (a lone surrogate, a broken text, a BOM) wherever it is in the read.
    app = make_server(Probe())
    to_server, from_server = os.pipe(), os.pipe()
    server_end = NdjsonTransport(
        trio.lowlevel.FdStream(to_server[0]), trio.lowlevel.FdStream(from_server[1])
    )

    def call(request_id: int, text: str) -> bytes:
        params = {"name": "echo", "arguments": {"text": text}, "_meta": META}
        request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        return json.dumps(request).encode()

    bad = [
        call(2, "\ud800"),  # json.dumps writes the lone surrogate as an escape
        b'{"jsonrpc":"2.0","id":3,',
        b"\xef\xbb\xbf" + call(4, "bom"),
        call(5, "caf\u00e9").replace(b"\\u00e9", b"\xc3"),  # invalid UTF-8
    ]
    os.write(to_server[1], b"\n".join([call(1, "a"), *bad, call(6, "b")]) + b"\n")
    os.close(to_server[1])
    with trio.fail_after(30):
        await app.serve_stream(server_end)
    with os.fdopen(from_server[0], "rb") as out:
        answers = [json.loads(line) for line in out.read().splitlines()]
    expected_errors = []
    for line in bad:
        with pytest.raises(InvalidMessage) as refused:
            parse_json(line)
        expected_errors.append((refused.value.request_id, refused.value.code, str(refused.value)))
    errors = [(a["id"], a["error"]["code"], a["error"]["message"]) for a in answers if "error" in a]
    assert errors == expected_errors
    assert errors[0][:2] == (2, -32600)
    assert sorted(a["id"] for a in answers if "result" in a) == [1, 6]


async def test_the_stream_runs_the_table_as_it_is_and_discover_by_the_shell(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The stream runs a request from the method table's lookup (stateless_table): a
    # handler added while serving answers; server/discover is the shell's own answer
    # even when the table holds a handler of that name.
    server = LowLevelServer(
        Implementation(name="s", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )

    @server.request_handler("server/discover")
    async def not_this(ctx: RequestContext) -> Any:
        raise AssertionError("server/discover is the shell's")

    client_end, server_end = memory_transport_pair()
    peer = Peer(client_end)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_stream, server_end)
        await peer.request(1, "tools/call", {"name": "x"})
        assert (await peer.next())["error"]["code"] == -32601  # no handler yet

        @server.request_handler("tools/call")
        async def call(ctx: RequestContext) -> CallToolResult:
            return CallToolResult(content=[])

        await peer.request(2, "tools/call", {"name": "x"})
        assert (await peer.next())["result"]["content"] == []
        await peer.request(3, "server/discover")
        assert V in (await peer.next())["result"]["supportedVersions"]
        await client_end.aclose()
