"""The lean server's fast request path: whatever it reads, h11 reads the same way.

The fast path (``trimcp.transports.http_server.fasthead``) must accept only requests h11
also accepts, and read them identically; everything else it declines, and h11 decides. The
property test below checks that against h11 itself on generated heads full of the bytes
that make HTTP parsers disagree (bare LF, folding, control characters, duplicate framing).
"""

from __future__ import annotations

import json

import h11
import pytest
import trio
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tests.http_server.test_identity import _by_header, _call_2026, whoami_server
from tests.http_server.test_real_socket import HEADERS, RawHttp
from trimcp.transports.http_server import HttpServerConfig, fasthead, heads, serve_http
from trimcp.transports.http_server.fasthead import DECLINE, NEED_MORE, Head, parse
from trimcp.transports.http_server.serve import Engine

MAX_HEAD = 1024

_NAME_CHARS = st.sampled_from(list("abcHost-_:.~ \t\x00\x7f\xe9"))
_VALUE_CHARS = st.sampled_from(list("ab1, \t;=/\x00\x01\x7f\x80\xff\r\n:"))
_KNOWN = ["host", "Host", "content-length", "Content-Length", "transfer-encoding"]
_KNOWN += ["expect", "upgrade", "connection", "accept"]


def _pick(draw: st.DrawFn, clean: list[bytes], noisy: st.SearchStrategy[bytes]) -> bytes:
    """Mostly a clean choice, sometimes one from ``noisy`` (where parsers disagree)."""
    if draw(st.integers(0, 15)) == 0:
        return draw(noisy)
    return draw(st.sampled_from(clean))


_NOISY_TEXT = st.text(_VALUE_CHARS, max_size=8).map(lambda t: t.encode("latin-1"))


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    method = _pick(
        draw, [b"GET", b"POST", b"DELETE"], st.sampled_from([b"CONNECT", b"get", b"P@ST", b""])
    )
    target = _pick(draw, [b"/mcp", b"/a?b=c", b"*"], st.sampled_from([b"/x y", b"/\x7f", b""]))
    version = _pick(
        draw, [b"HTTP/1.1", b"HTTP/1.0"], st.sampled_from([b"HTTP/2.0", b"HTTP/1.1 ", b"http/1.1"])
    )
    eol = _pick(draw, [b"\r\n"], st.sampled_from([b"\n", b"\r"]))
    lead = _pick(draw, [b""], st.sampled_from([b"\r\n", b"\n", b" "]))
    lines = [lead + method + b" " + target + b" " + version]
    if draw(st.integers(0, 7)):
        lines.append(b"Host: 127.0.0.1:8000")
    body = draw(st.binary(max_size=40))
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(_KNOWN)).encode()
        else:
            name = _pick(
                draw,
                [b"x-a", b"Accept", b"mcp-method"],
                st.text(_NAME_CHARS, max_size=6).map(lambda t: t.encode("latin-1")),
            )
        if name.lower() == b"content-length":
            value = _pick(draw, [str(n).encode() for n in (0, 2, 5, 40, 60)], _NOISY_TEXT)
        else:
            value = _pick(draw, [b"a", b"a b", b"x/y; q=1", b"", b"\xe9t\xe9"], _NOISY_TEXT)
        sep = _pick(draw, [b": ", b":", b":\t"], st.sampled_from([b" : ", b" :"]))
        line = name + sep + value
        if draw(st.integers(0, 15)) == 0:
            line = draw(st.sampled_from([b" ", b"\t"])) + line  # obsolete line folding
        lines.append(line)
    raw = b"".join(line + _pick(draw, [eol], st.sampled_from([b"\n", b"\r\n"])) for line in lines)
    raw += eol + body
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))]
    return raw


def _h11_events(raw: bytes) -> list[object]:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    if raw:  # (receiving b"" would mean the client closed)
        conn.receive_data(raw)
    events: list[object] = []
    while True:
        event = conn.next_event()
        events.append(event)
        if event is h11.NEED_DATA or type(event) in (h11.EndOfMessage, h11.ConnectionClosed):
            return events
        if event is h11.PAUSED:
            return events


@settings(max_examples=2000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(requests())
@example(b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
@example(b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhel")
@example(b"GET / HTTP/1.0\r\n\r\n")
def test_what_the_fast_path_reads_h11_reads_the_same(raw: bytes) -> None:
    buffer = bytearray(raw)
    head = parse(buffer, MAX_HEAD)
    event(repr(head) if not isinstance(head, Head) else "read")
    if head is DECLINE:
        assert buffer == raw  # untouched: h11 gets it all
        return
    if head is NEED_MORE:
        assert buffer == raw
        assert _h11_events(raw) == [h11.NEED_DATA]
        return
    assert isinstance(head, Head)
    events = _h11_events(raw)  # raises if h11 would refuse what the fast path took
    request = events[0]
    assert isinstance(request, h11.Request)
    assert request.method == head.method
    assert request.target == head.target
    assert request.http_version == (b"1.1" if head.http11 else b"1.0")
    assert [(name.lower(), value) for name, value in request.headers.raw_items()] == head.headers
    data = b"".join(bytes(e.data) for e in events[1:] if isinstance(e, h11.Data))
    assert data == head.body
    if head.remaining:
        assert events[-1] is h11.NEED_DATA
    else:
        assert type(events[-1]) is h11.EndOfMessage
    assert bytes(buffer) == raw[head.size + len(head.body) :]


def _fields(head: Head) -> tuple[object, ...]:
    return tuple(getattr(head, name) for name in Head.__slots__ if name != "memo")


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(requests())
def test_a_kept_head_reads_as_it_did_the_first_time(raw: bytes) -> None:
    own: dict[bytes, object] = {}
    kept = fasthead.KeptHeads()
    first = parse(bytearray(raw), MAX_HEAD, own, kept)
    buffer = bytearray(raw)
    again = parse(buffer, MAX_HEAD, own, kept)
    if not isinstance(first, Head):
        assert again is first
        assert buffer == raw
        assert not kept  # only heads read whole are kept
        return
    assert isinstance(again, Head)
    assert _fields(again) == _fields(first)
    assert again.memo is first.memo is not None  # one memo per kept head
    assert bytes(buffer) == raw[again.size + len(again.body) :]


def test_kept_heads_are_bounded_per_connection() -> None:
    own: dict[bytes, object] = {}
    kept = fasthead.KeptHeads()
    memos = []
    for length in range(1, fasthead.MAX_OWN_HEADS + 2):
        raw = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n" % length
        head = parse(bytearray(raw + b"x" * length), MAX_HEAD, own, kept)
        assert isinstance(head, Head)
        assert head.body == b"x" * length
        assert head.headers == [(b"host", b"h"), (b"content-length", b"%d" % length)]
        memos.append(head.memo)
        assert 1 <= len(kept) <= fasthead.MAX_OWN_HEADS
    assert len({id(memo) for memo in memos}) == len(memos)  # each head its own memo
    large = b"POST /mcp HTTP/1.1\r\nHost: h\r\nX-Pad: " + b"p" * 1100 + b"\r\n\r\n"
    head = parse(bytearray(large), 4096, own, kept)
    assert isinstance(head, Head)
    assert head.memo is None  # over 1 KiB: read each time, not kept
    assert large[:-4] not in kept


def test_a_plain_request_is_read_with_its_body_and_the_next_one_stays() -> None:
    first = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nAccept: a, b\r\n\r\n{}"
    second = b"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n"
    buffer = bytearray(first + second)
    head = parse(buffer, MAX_HEAD)
    assert isinstance(head, Head)
    assert (head.method, head.target, head.http11) == (b"POST", b"/mcp", True)
    assert head.headers == [(b"host", b"h"), (b"content-length", b"2"), (b"accept", b"a, b")]
    assert (head.body, head.remaining, head.size) == (b"{}", 0, len(first) - 2)
    assert bytes(buffer) == second


def test_a_body_still_arriving_is_owed() -> None:
    buffer = bytearray(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n123")
    head = parse(buffer, MAX_HEAD)
    assert isinstance(head, Head)
    assert (head.body, head.remaining) == (b"123", 7)
    assert buffer == b""


@pytest.mark.parametrize(
    "raw",
    [
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n",
        b"CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nx",
        b"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",  # folded
        b"GET / HTTP/1.1\nHost: h\r\n\r\n",  # bare LF
        b"GET / HTTP/1.1\r\nHost: h\n\n",
        b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",  # no Host
        b"GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\nX: a\x00b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: h\r\n\r\n",
        b"GET /" + b"a" * 2000 + b" HTTP/1.1\r\n",  # over the head limit, incomplete
    ],
)
def test_anything_unusual_is_left_to_h11(raw: bytes) -> None:
    buffer = bytearray(raw)
    assert parse(buffer, MAX_HEAD) is DECLINE
    assert buffer == raw


def test_an_incomplete_head_needs_more() -> None:
    assert parse(bytearray(b"POST /mcp HTTP/1.1\r\nHost: h\r\n"), MAX_HEAD) is NEED_MORE
    assert parse(bytearray(b""), MAX_HEAD) is NEED_MORE


def test_remembered_header_lines_stay_bounded() -> None:
    from trimcp.transports.http_server import fasthead

    for i in range(3000):
        value = b"%d-%s" % (i, b"v" * (i % 400))
        raw = b"GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: " + value + b"\r\n\r\n"
        head = parse(bytearray(raw), 16384)
        assert isinstance(head, Head)
        assert head.headers[-1] == (b"user-agent", value)
    assert any(line.startswith(b"User-Agent: ") for line in fasthead._FIELDS)  # kept, ...
    assert len(fasthead._FIELDS) <= fasthead._MAX_FIELDS
    assert all(len(line) <= fasthead._MAX_FIELD_BYTES for line in fasthead._FIELDS)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
CREDENTIALS = [
    b"Authorization: Bearer alice-key",
    b"Proxy-Authorization: Basic YTpi",
    b"Cookie: session=s3cret",
    b"Mcp-Session-Id: 3f1c9a",
    b"X-Api-Key: k-123",
]


def test_credential_lines_are_never_remembered() -> None:
    # Fails before: every short line was remembered, credentials included, in a memo
    # that every connection of the process shares and that outlives the request.
    from trimcp.transports.http_server import fasthead

    fasthead._FIELDS.clear()
    raw = b"POST /mcp HTTP/1.1\r\nHost: h\r\nAccept: a\r\nContent-Length: 0\r\n"
    raw += b"".join(line + b"\r\n" for line in CREDENTIALS) + b"\r\n"
    for _ in range(2):  # read twice: the second read finds the remembered lines
        head = parse(bytearray(raw), MAX_HEAD)
        assert isinstance(head, Head)
        assert head.headers[3:] == [
            (name.lower(), value) for name, value in (c.split(b": ") for c in CREDENTIALS)
        ]
    assert set(fasthead._FIELDS) == {b"Host: h", b"Accept: a", b"Content-Length: 0"}


def test_a_connection_keeps_its_own_lines_to_itself() -> None:
    # The request line and the credential lines are matched once per connection: kept in
    # the connection's own table (bounded), never in the memo every connection shares.
    from trimcp.transports.http_server import fasthead

    fasthead._FIELDS.clear()
    raw = b"POST /mcp?k=v HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"
    raw += b"".join(line + b"\r\n" for line in CREDENTIALS) + b"\r\n"
    own: dict[bytes, object] = {}
    alone = parse(bytearray(raw), MAX_HEAD)
    for _ in range(2):  # the second read finds the kept lines
        head = parse(bytearray(raw), MAX_HEAD, own)
        assert isinstance(head, Head)
        assert isinstance(alone, Head)
        assert (head.method, head.target, head.headers) == (
            alone.method,
            alone.target,
            alone.headers,
        )
    assert set(own) == {b"POST /mcp?k=v HTTP/1.1", *CREDENTIALS}
    assert set(fasthead._FIELDS) == {b"Host: h", b"Content-Length: 0"}
    for i in range(3 * fasthead.MAX_OWN_LINES):
        parse(bytearray(b"GET /%d HTTP/1.1\r\nHost: h\r\nX-Key: %d\r\n\r\n" % (i, i)), 999, own)
    assert len(own) <= fasthead.MAX_OWN_LINES


def test_credential_response_lines_are_never_remembered() -> None:
    # Fails before: the response header memo kept every line, session ids included.
    # A connection keeps its own (they end with it), bounded.
    own: dict[tuple[bytes, bytes], tuple[bytes, int, bool]] = {}
    for _ in range(2):
        line = heads.header(b"mcp-session-id", b"3f1c9a", own)[0]
        assert line == b"mcp-session-id: 3f1c9a\r\n"
        assert heads.header(b"set-cookie", b"s=1", own)[0] == b"set-cookie: s=1\r\n"
        assert heads.header(b"content-type", b"text/event-stream", own)[1] == heads.PLAIN
    assert (b"mcp-session-id", b"3f1c9a") not in heads.LINES
    assert (b"set-cookie", b"s=1") not in heads.LINES
    assert (b"content-type", b"text/event-stream") in heads.LINES
    assert set(own) == {(b"mcp-session-id", b"3f1c9a"), (b"set-cookie", b"s=1")}
    for i in range(3 * heads.MAX_OWN_LINES):
        heads.header(b"mcp-session-id", b"%d" % i, own)
    assert len(own) <= heads.MAX_OWN_LINES


@pytest.mark.parametrize("engine", ["lean"])
async def test_each_request_on_a_keep_alive_connection_has_its_own_credentials(
    engine: Engine,
) -> None:
    # Short bearer values (a memo would have kept them) on one lean-engine connection:
    # each request is authenticated by its own header, and none is left in the memo.
    from trimcp.transports.http_server import fasthead

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(),
                    port=0,
                    engine=engine,
                    config=HttpServerConfig(authenticate=_by_header),
                    task_status=task_status,
                )
            )
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                client = RawHttp(stream, f"127.0.0.1:{port}")
                for n, user in enumerate(["alice", "bob", "alice", None, "carol"]):
                    assert await _call_2026(client, user, n) == (user or "anonymous")
                # A 2025 session: its id (a credential) is sent back in a response header.
                status, headers, _ = await client.request(
                    "POST", json.dumps(INITIALIZE).encode(), HEADERS
                )
                assert status == 200
                session_id = headers["mcp-session-id"].encode()
            assert not [line for line in fasthead._FIELDS if b"Bearer" in line]
            assert not [pair for pair in heads.LINES if session_id in pair[1]]
            nursery.cancel_scope.cancel()


async def test_a_repeated_head_is_answered_and_refused_as_the_first_time() -> None:
    # The engine keeps a connection's heads and the app its reading of each (HEAD_MEMO):
    # the same head, byte for byte, gets the same answer each time, and a head the gate
    # refuses (a repeated singleton header) is refused each time.
    from tests.http_server.helpers import init_request, tool_call
    from tests.http_server.test_real_socket import _start

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine="lean")
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                client = RawHttp(stream, f"127.0.0.1:{port}")
                status, headers, _ = await client.request(
                    "POST", json.dumps(init_request()).encode(), HEADERS
                )
                assert status == 200
                extra = [
                    ("mcp-session-id", headers["mcp-session-id"]),
                    ("mcp-protocol-version", "2025-11-25"),
                ]
                call = json.dumps(tool_call(7, "echo", {"text": "same"})).encode()
                for _ in range(3):  # one head, byte for byte (the same id and length)
                    status, _, body = await client.request("POST", call, HEADERS + extra)
                    assert status == 200
                    assert b'"same"' in body
                twice = [*extra, ("mcp-protocol-version", "2025-11-25")]
                for _ in range(2):
                    status, _, body = await client.request("POST", call, HEADERS + twice)
                    assert status == 400
                    assert b"Repeated mcp-protocol-version" in body
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("body", "declared"),
    [
        (b"{}", "2"),
        (b"{}", None),
        (b"x" * 10, "10"),  # past the limit
        (b"{}", "99"),  # declared past the limit
        (b"{}", "2x"),  # not digits
        (b"{}", "1" * 19),  # too many digits
    ],
)
async def test_a_body_the_engine_hands_over_is_refused_as_a_read_one(
    body: bytes, declared: str | None
) -> None:
    # asgi.buffered_body (the lean engine's BODY scope key) against read_body.
    from trimcp.transports.http_server.asgi import HttpRejection, buffered_body, read_body

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        expected: object = await read_body(receive, 8, 1.0, declared, buffered=True)
    except HttpRejection as exc:
        expected = (exc.status, exc.message)
    try:
        got: object = buffered_body(body, 8, declared)
    except HttpRejection as exc:
        got = (exc.status, exc.message)
    assert got == expected


def test_the_last_kept_head_is_matched_whole_and_only_whole() -> None:
    # The last head is compared in the buffer, not looked up: a head that begins with the
    # last one's bytes, or is as long with other bytes, is its own head (fails with the
    # comparison's length check taken out: the longer head reads as the shorter one).
    short = b"GET /a HTTP/1.1\r\nHost: h"
    longer = short + b"\r\nX-More: 1"
    same_size = b"GET /b HTTP/1.1\r\nHost: h"
    own: dict[bytes, object] = {}
    kept = fasthead.KeptHeads()
    memos: dict[bytes, object] = {}
    for raw in (short, short, longer, longer, short, same_size, short, same_size):
        head = parse(bytearray(raw + b"\r\n\r\n"), MAX_HEAD, own, kept)
        fresh = parse(bytearray(raw + b"\r\n\r\n"), MAX_HEAD)
        assert isinstance(head, Head)
        assert isinstance(fresh, Head)
        assert _fields(head) == _fields(fresh)
        assert memos.setdefault(raw, head.memo) is head.memo  # one memo per head
    assert len({id(memo) for memo in memos.values()}) == 3
    kept.clear()
    assert kept.last is None  # (cleared with the heads it names)
