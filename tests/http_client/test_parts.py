"""The pure parts of the HTTP client: URLs, message classification, options; and the pool."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from tests.http_client.fakeserver import Reply, Request, fake_server
from trimcp.http.client import BodyTooLarge, ConnectionPool
from trimcp.http.errors import HttpClientError
from trimcp.http.url import parse_url
from trimcp.transports.http_client import HttpClientOptions
from trimcp.transports.http_client.messages import (
    describe_outgoing,
    protocol_version_of,
    split_inbound,
    with_id,
)


def test_parse_url() -> None:
    endpoint = parse_url("https://Example.COM/mcp?x=1")
    assert (endpoint.scheme, endpoint.host, endpoint.port) == ("https", "example.com", 443)
    assert endpoint.target == "/mcp?x=1"
    assert endpoint.host_header == "example.com"
    assert parse_url("http://127.0.0.1:8080").target == "/"
    assert parse_url("http://127.0.0.1:8080").host_header == "127.0.0.1:8080"
    assert parse_url("http://[::1]:9/").host_header == "[::1]:9"
    assert parse_url("http://h/a/sse").resolve("/messages?s=1").url == "http://h/messages?s=1"
    assert parse_url("http://h/a/sse").resolve("m").target == "/a/m"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://h/", "only http and https"),
        ("h/mcp", "only http and https"),
        ("http:///mcp", "no host"),
        ("http://u:p@h/", "credentials in the URL"),
        ("http://h:99999/", "Port out of range"),
        ("http://h/a b", "whitespace or control characters"),
    ],
)
def test_parse_url_refuses(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_url(url)


def test_describe_outgoing() -> None:
    request = describe_outgoing(b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}')
    assert request.request_ids == (7,)
    assert request.is_initialize
    note = describe_outgoing(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert note.request_ids == ()
    assert note.method == "notifications/initialized"
    cancel = describe_outgoing(
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}'
    )
    assert cancel.cancelled_id == "a"
    reply = describe_outgoing(b'{"jsonrpc":"2.0","id":3,"result":{}}')
    assert reply.request_ids == ()
    assert reply.method is None
    batch = describe_outgoing(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},'
        b'{"jsonrpc":"2.0","id":"x","method":"c"}]'
    )
    assert batch.request_ids == (1, "x")
    assert not batch.is_initialize
    assert describe_outgoing(b"{oops").request_ids == ()
    assert describe_outgoing(b'{"id":true,"method":"x"}').request_ids == ()


def test_split_inbound() -> None:
    [single] = split_inbound(b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v"}}')
    assert single.answers == 1
    assert single.result == {"protocolVersion": "v"}
    parts = split_inbound(
        b'[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"2","error":{"code":1}}]'
    )
    assert [p.answers for p in parts] == [None, "2"]
    assert json.loads(parts[0].data) == {"jsonrpc": "2.0", "method": "n"}
    [orphan] = split_inbound(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}')
    assert orphan.null_id_error
    assert json.loads(with_id(orphan.data, 5))["id"] == 5
    [junk] = split_inbound(b"{oops")
    assert junk.data == b"{oops"
    assert junk.answers is None
    [request] = split_inbound(b'{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage"}')
    assert request.answers is None


def test_protocol_version_of() -> None:
    assert protocol_version_of({"protocolVersion": "2025-06-18"}) == "2025-06-18"
    for bad in (
        None,
        {},
        {"protocolVersion": 5},
        {"protocolVersion": "a\nb"},
        {"protocolVersion": "é"},
        {"protocolVersion": "x" * 65},
    ):
        assert protocol_version_of(bad) is None


def test_options() -> None:
    options = HttpClientOptions(headers={"Authorization": "Bearer x"})
    assert options.headers == (("authorization", "Bearer x"),)
    assert options.reconnect_wait(500, 0) == 0.5
    assert options.reconnect_wait(None, 2) == 4.0
    assert options.reconnect_wait(10**15, 0) == options.max_reconnect_delay
    for bad in ({"Mcp-Session-Id": "x"}, {"Accept": "x"}, {"X": "a\r\nb"}):
        with pytest.raises(ValueError, match=r"set by the transport|invalid header"):
            HttpClientOptions(headers=bad)
    for field in ("timeout", "sse_read_timeout", "max_message_bytes", "max_connections"):
        with pytest.raises(ValueError, match=f"{field} must be > 0"):
            HttpClientOptions(**{field: 0})  # type: ignore[arg-type]


async def test_pool_replaces_a_stale_keep_alive_connection(autojump_clock: Any) -> None:
    served: list[int] = []

    async def app(request: Request, reply: Reply) -> None:
        served.append(request.connection)
        await reply.status(200, b"ok")
        if len(served) == 1:
            reply.drop()  # answered, then the server closes the idle connection

    async with fake_server(app) as server:
        pool = ConnectionPool(ssl_context=None, connect_timeout=5, max_idle=2)
        endpoint = parse_url(server.url)
        for _ in range(2):
            async with pool.request("GET", endpoint, {}, head_timeout=5) as response:
                assert await response.read_all(100, 5) == b"ok"
        await pool.aclose()
    assert served == [1, 2]


async def test_pool_retries_a_stale_connection_on_a_new_one(autojump_clock: Any) -> None:
    served: list[int] = []
    both_in = trio.Event()

    async def app(request: Request, reply: Reply) -> None:
        served.append(request.connection)
        if len(served) <= 2:
            if len(served) == 2:
                both_in.set()
            await both_in.wait()
            await reply.status(200, b"ok")
            reply.drop()  # both idle connections are now dead
        await reply.status(200, b"ok")

    async with fake_server(app) as server:
        pool = ConnectionPool(ssl_context=None, connect_timeout=5, max_idle=2)
        endpoint = parse_url(server.url)

        async def get() -> None:
            async with pool.request("GET", endpoint, {}, head_timeout=5) as response:
                assert await response.read_all(100, 5) == b"ok"

        async with trio.open_nursery() as nursery:
            nursery.start_soon(get)
            nursery.start_soon(get)
        await get()  # one stale attempt, then a new connection (not the other stale one)
        await pool.aclose()
    assert sorted(served) == [1, 2, 3]
    assert served[2] == 3
    assert pool.opened == 3


async def test_pool_closes_connections_idle_too_long(autojump_clock: Any) -> None:
    async def app(request: Request, reply: Reply) -> None:
        await reply.status(200, b"ok")

    async with fake_server(app) as server:
        pool = ConnectionPool(ssl_context=None, connect_timeout=5, max_idle=2)
        endpoint = parse_url(server.url)
        for pause in (0, 1, 10):
            await trio.sleep(pause)
            async with pool.request("GET", endpoint, {}, head_timeout=5) as response:
                await response.read_all(100, 5)
        await pool.aclose()
    assert pool.opened == 2
    assert server.connections == 2


async def test_pool_reuses_and_bounds_idle_connections(autojump_clock: Any) -> None:
    async def app(request: Request, reply: Reply) -> None:
        await reply.status(200, b"ok")

    async with fake_server(app) as server:
        pool = ConnectionPool(ssl_context=None, connect_timeout=5, max_idle=1)
        endpoint = parse_url(server.url)

        async def get() -> None:
            async with pool.request("GET", endpoint, {}, head_timeout=5) as response:
                await response.read_all(100, 5)

        for _ in range(5):
            await get()
        assert pool.opened == 1
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(get)
        assert pool.opened == 3
        await pool.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await get()


async def test_body_limits(autojump_clock: Any) -> None:
    async def app(request: Request, reply: Reply) -> None:
        if request.target == "/declared":
            await reply.status(200, b"x" * 1000)
        else:  # chunked: no length declared
            await reply.start(200)
            for _ in range(10):
                await reply.body(b"x" * 100)

    async with fake_server(app) as server:
        pool = ConnectionPool(ssl_context=None, connect_timeout=5, max_idle=1)
        for path in ("/declared", "/chunked"):
            endpoint = parse_url(f"http://127.0.0.1:{server.port}{path}")
            with pytest.raises(BodyTooLarge):
                async with pool.request("GET", endpoint, {}, head_timeout=5) as response:
                    await response.read_all(999, 5)
        await pool.aclose()


async def test_oversized_response_head_is_refused(autojump_clock: Any) -> None:
    async def app(request: Request, reply: Reply) -> None:
        await reply.status(200, b"", {"x-big": "y" * 300_000})

    async with fake_server(app) as server:
        pool = ConnectionPool(ssl_context=None, connect_timeout=5, max_idle=1)
        with pytest.raises(HttpClientError):
            async with pool.request("GET", parse_url(server.url), {}, head_timeout=5):
                pass
        await pool.aclose()


@pytest.mark.parametrize("framing", ["chunked", "length"])
async def test_a_body_cut_short_is_said_in_plain_words(autojump_clock: Any, framing: str) -> None:
    """A server that closes the connection in the middle of its answer: h11's "peer closed
    connection without sending complete message body (incomplete chunked read)" becomes a
    sentence about the server (issue 35)."""

    async def app(request: Request, reply: Reply) -> None:
        await reply.start(200, length=1000 if framing == "length" else None)
        await reply.body(b"x" * 100)
        reply.drop()

    async with fake_server(app) as server:
        pool = ConnectionPool(ssl_context=None, connect_timeout=5, max_idle=1)
        with pytest.raises(HttpClientError) as caught:
            async with pool.request("GET", parse_url(server.url), {}, head_timeout=5) as response:
                await response.read_all(10_000, 5)
        await pool.aclose()
    assert "the server closed the connection before its answer was complete" in str(caught.value)
    assert "peer" not in str(caught.value)
    assert "incomplete chunked read" not in str(caught.value)
