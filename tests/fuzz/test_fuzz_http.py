"""Fuzzing the lean engine's request path: bytes in, answers or a clean close out.

Each example runs one lean connection serving the real MCP app on trio's memory streams
under an autojump clock (every timeout passes instantly, so a wait that never ends shows
as the fail_after below): the client sends the bytes, then closes its side. Properties:
nothing escapes the connection task and nothing is logged as a failure; the connection
ends; what the server wrote is a sequence of well-formed HTTP/1.1 responses.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import h11
import trio
import trio.testing
from hypothesis import event, given
from hypothesis import strategies as st

from tests.fuzz.settings import FUZZ
from tests.http_server.helpers import make_server
from trimcp.transports.http_server import HttpServerConfig, create_asgi_app
from trimcp.transports.http_server.lean import _Connection, _Limits, _ServerState

LIMITS = _Limits(
    header_timeout=5.0,
    max_header_bytes=2048,
    send_timeout=10.0,
    read_timeout=None,
    keep_alive_max_requests=1000,
    root_path="",
)
_INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
    b'"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}'
)

_METHODS = st.sampled_from([b"GET", b"POST", b"DELETE", b"PUT", b"OPTIONS", b"G\x00T", b""])
_TARGETS = st.sampled_from(
    [
        b"/mcp",
        b"/mcp?x=1",
        b"/",
        b"/sse",
        b"/messages?sessionId=x",
        b"*",
        b"/%00",
        b"/" + b"a" * 3000,
        b"http://127.0.0.1/mcp",
    ]
)
_VERSIONS = st.sampled_from(
    [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/1.2", b"HTTP/2.0", b"HTTP/1", b"http/1.1", b""]
)
_HEADERS = st.sampled_from(
    [
        b"Host: 127.0.0.1",
        b"Host: evil.example",
        b"Host:",
        b"Content-Type: application/json",
        b"Content-Type: text/plain",
        b"Accept: application/json, text/event-stream",
        b"Accept: text/event-stream",
        b"Accept: */*;q=0",
        b"Content-Length: 0",
        b"Content-Length: 5",
        b"Content-Length: -1",
        b"Content-Length: 99999999999999999999",
        b"Transfer-Encoding: chunked",
        b"Transfer-Encoding: gzip, chunked",
        b"Transfer-Encoding:\tchunked",
        b"Expect: 100-continue",
        b"Connection: close",
        b"Mcp-Session-Id: nope",
        b"MCP-Protocol-Version: 2025-11-25",
        b"MCP-Protocol-Version: 1999-01-01",
        b"Last-Event-ID: 0_1",
        b"Origin: http://127.0.0.1",
        b"Origin: null",
        b" folded",
        b"X: \x00",
        b"X: " + b"y" * 2100,
        b"NoColon",
    ]
)
_BODIES = st.sampled_from(
    [
        b"",
        _INIT,
        b"{",
        b"[]",
        b"[{}]",
        b"0\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r\n",
        b"zz\r\n",
        b"\xff\xfe",
        b'{"jsonrpc":"2.0","method":"ping","id":2}',
    ]
)


_GOOD = [
    b"Host: 127.0.0.1",
    b"Content-Type: application/json",
    b"Accept: application/json, text/event-stream",
]


@st.composite
def _request(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) < 7:  # mostly well-formed, to reach the app's own paths
        line = draw(
            st.sampled_from(
                [
                    b"POST /mcp HTTP/1.1",
                    b"GET /mcp HTTP/1.1",
                    b"DELETE /mcp HTTP/1.1",
                    b"POST /mcp HTTP/1.0",
                    b"GET /sse HTTP/1.1",
                    b"POST /messages HTTP/1.1",
                ]
            )
        )
        headers = [*_GOOD, *draw(st.lists(_HEADERS, max_size=3))]
    else:
        line = b" ".join([draw(_METHODS), draw(_TARGETS), draw(_VERSIONS)])
        headers = draw(st.lists(_HEADERS, max_size=8))
    body = draw(_BODIES)
    if draw(st.integers(0, 9)) < 8:
        headers.append(b"Content-Length: %d" % len(body))
    headers = draw(st.permutations(headers))
    raw = line + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body
    if draw(st.integers(0, 9)) < 3:  # a mutation: flip, cut, or insert a byte
        where = draw(st.integers(0, max(len(raw) - 1, 0)))
        kind = draw(st.sampled_from(["flip", "cut", "insert"]))
        byte = bytes([draw(st.sampled_from([0, 10, 13, 32, 58, 255]))])
        if kind == "flip":
            raw = raw[:where] + byte + raw[where + 1 :]
        elif kind == "cut":
            raw = raw[:where]
        else:
            raw = raw[:where] + byte + raw[where:]
    return raw


_INPUT = st.one_of(
    st.binary(max_size=400),
    _request(),
    st.lists(_request(), min_size=1, max_size=3).map(b"".join),
)


class _Failures(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def _serve(raw: bytes, cuts: list[int]) -> bytes:
    app = create_asgi_app(make_server(), config=HttpServerConfig(body_timeout=5.0))
    client, server = trio.testing.memory_stream_pair()
    received = bytearray()
    with trio.fail_after(3600):  # virtual time: only a wait that never ends reaches it
        async with trio.open_nursery() as nursery:
            await nursery.start(app.run)
            async with trio.open_nursery() as connection:
                connection.start_soon(_Connection(server, app, _ServerState(), LIMITS).run)
                last = 0
                for cut in [*sorted({c % (len(raw) + 1) for c in cuts}), len(raw)]:
                    if cut > last:
                        try:
                            await client.send_all(raw[last:cut])
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            break  # the server closed: fine
                        last = cut
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await client.send_eof()
                while True:
                    try:
                        data = await client.receive_some(65536)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        break
                    if not data:
                        break
                    received += data
            await app.shutdown()
            nursery.cancel_scope.cancel()
    return bytes(received)


def _check_responses(out: bytes) -> None:
    """``out`` is whole HTTP/1.1 responses, one after the other (the last may be cut by
    the close only if it streams: a GET stream or an SSE answer)."""
    while out:
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
        conn.send(h11.EndOfMessage())
        conn.receive_data(out)
        conn.receive_data(b"")
        event: Any = conn.next_event()
        while isinstance(event, h11.InformationalResponse):
            event = conn.next_event()
        assert isinstance(event, h11.Response), (event, out[:200])
        streams = (b"content-type", b"text/event-stream") in list(event.headers)
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError:
                # Only a stream may be cut: its client left (it sent EOF), so it ends.
                assert streams, out[:300]
                return
            if isinstance(event, h11.EndOfMessage):
                break
            if isinstance(event, h11.ConnectionClosed):
                return
            assert isinstance(event, h11.Data), event
        out = bytes(conn.trailing_data[0])


@FUZZ
@given(raw=_INPUT, cuts=st.lists(st.integers(0, 10_000), max_size=4))
def test_the_lean_engine_answers_or_closes_on_any_input(raw: bytes, cuts: list[int]) -> None:
    failures = _Failures()
    root = logging.getLogger("trimcp")
    root.addHandler(failures)
    try:
        out = trio.run(_serve, raw, cuts, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        root.removeHandler(failures)
    assert not failures.records, [r.getMessage() for r in failures.records]
    event(f"first answer: {out[9:12].decode('latin-1') or 'none'}")
    _check_responses(out)
