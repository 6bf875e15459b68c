"""The lean HTTP/1.1 engine: which engine ``serve_http`` picks, and every limit and error.

Connections run on trio's in-memory streams under the autojump clock, so each timeout
passes instantly and deterministically; ``lockstep_stream_pair`` plays a client that never
reads. No test asserts a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import h11
import pytest
import trio
import trio.testing
from hypercorn.config import Config as HypercornConfig

from tests.http_server.helpers import init_request, make_server, tool_call
from trimcp.transports.http_server import HttpServerConfig, create_asgi_app, serve_http
from trimcp.transports.http_server.idle import IdleTimer
from trimcp.transports.http_server.lean import _Connection, _Limits, _ServerState
from trimcp.transports.http_server.serve import choose_engine

WAIT = 60.0  # bound on every wait (instant under the autojump clock)
MCP = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]
LIMITS = _Limits(
    header_timeout=5.0,
    max_header_bytes=16 * 1024,
    send_timeout=10.0,
    read_timeout=None,
    keep_alive_max_requests=1000,
    root_path="",
)
App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


# --- engine selection ------------------------------------------------------------------


def _tls(config: HypercornConfig) -> None:
    config.certfile = "cert.pem"
    config.keyfile = "key.pem"


def _quic(config: HypercornConfig) -> None:
    config.quic_bind = ["127.0.0.1:4433"]


def _access_log(config: HypercornConfig) -> None:
    config.accesslog = "-"


def _server_names(config: HypercornConfig) -> None:
    config.server_names = ["example.com"]


def _custom_logger(config: HypercornConfig) -> None:
    class Mine(type(config.log)):  # type: ignore[misc]
        pass

    config.logger_class = Mine


def test_auto_is_the_lean_engine_by_default() -> None:
    assert choose_engine("auto", HypercornConfig()) == "lean"


@pytest.mark.parametrize("ask", [_tls, _quic, _access_log, _server_names, _custom_logger])
def test_auto_is_hypercorn_when_the_settings_need_it(
    ask: Callable[[HypercornConfig], None],
) -> None:
    config = HypercornConfig()
    ask(config)
    assert choose_engine("auto", config) == "hypercorn"


def test_explicit_engines_are_kept_but_lean_refuses_tls() -> None:
    assert choose_engine("hypercorn", HypercornConfig()) == "hypercorn"
    assert choose_engine("lean", HypercornConfig()) == "lean"
    access = HypercornConfig()
    _access_log(access)
    assert choose_engine("lean", access) == "lean"
    tls = HypercornConfig()
    _tls(tls)
    assert choose_engine("hypercorn", tls) == "hypercorn"
    with pytest.raises(ValueError, match="TLS"):
        choose_engine("lean", tls)
    with pytest.raises(ValueError, match="engine"):
        choose_engine("fast", HypercornConfig())  # type: ignore[arg-type]


async def _server_header(engine: str | None) -> str | None:
    """The ``server`` header of an answer from ``serve_http`` on a real loopback socket."""
    kwargs: dict[str, Any] = {} if engine is None else {"engine": engine}
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_http(make_server(), port=0, task_status=task_status, **kwargs)
        )
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(request("GET", "/nowhere"))
            answer = await Wire(stream).response("GET")
        nursery.cancel_scope.cancel()
    assert answer.status == 404
    return answer.headers.get("server")


async def test_serve_http_runs_the_lean_engine_by_default() -> None:
    # hypercorn names itself in every answer; the lean engine does not.
    with trio.fail_after(WAIT):
        assert await _server_header(None) is None
        assert await _server_header("lean") is None
        assert await _server_header("hypercorn") == "hypercorn-h11"


# --- a client on the wire ----------------------------------------------------------------


def request(
    method: str,
    path: str = "/mcp",
    body: bytes = b"",
    headers: list[tuple[str, str]] | None = None,
    *,
    version: str = "1.1",
    length: bool = True,
) -> bytes:
    lines = [f"{method} {path} HTTP/{version}", "Host: 127.0.0.1:8000"]
    lines += [f"{name}: {value}" for name, value in headers or []]
    if length and (body or method == "POST"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def mcp_post(message: dict[str, Any], session_id: str | None = None, **kw: Any) -> bytes:
    headers = list(MCP)
    if session_id is not None:
        headers += [("mcp-session-id", session_id), ("mcp-protocol-version", "2025-11-25")]
    return request("POST", body=json.dumps(message).encode(), headers=headers, **kw)


@attrs.frozen
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    informational: list[int]


class Wire:
    """Reads responses off a client stream with h11 (any framing, HEAD included)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = b""

    async def response(self, method: str = "POST") -> Answer:
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method=method, target="/", headers=[("host", "x")]))
        conn.send(h11.EndOfMessage())
        if self.buffer:
            conn.receive_data(self.buffer)  # (an empty one would mean end of input)
        informational: list[int] = []
        status, headers, body = 0, {}, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await self.stream.receive_some(65536)))
            elif isinstance(event, h11.InformationalResponse):
                informational.append(event.status_code)
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                raise AssertionError(f"unexpected {event!r}")
        self.buffer = bytes(conn.trailing_data[0])
        return Answer(status, headers, body, informational)

    async def eof(self) -> bytes:
        """Everything the server still sends before closing the connection."""
        rest = self.buffer
        while data := await self.stream.receive_some(65536):
            rest += data
        return rest


class Watched(trio.abc.HalfCloseableStream):
    """A server-side stream that records when the server closes it."""

    def __init__(self, inner: trio.abc.HalfCloseableStream) -> None:
        self.inner = inner
        self.closed = trio.Event()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        self.closed.set()
        await self.inner.aclose()


@asynccontextmanager
async def lean_connection(
    app: App,
    *,
    lockstep: bool = False,
    state: _ServerState | None = None,
    timer: bool = False,
    **limits: Any,
) -> AsyncIterator[tuple[trio.abc.HalfCloseableStream, Watched]]:
    """One lean connection serving ``app``; the block waits for the server to end it.

    ``timer``: the header timeout is kept by a running :class:`IdleTimer` (as
    ``serve_lean`` does), not by a deadline scope per wait.
    """
    client: trio.abc.HalfCloseableStream
    server: trio.abc.HalfCloseableStream
    if lockstep:
        client, server = trio.testing.lockstep_stream_pair()
    else:
        client, server = trio.testing.memory_stream_pair()
    watched = Watched(server)
    settings = attrs.evolve(LIMITS, **limits)
    if state is None:
        state = _ServerState(IdleTimer(settings.header_timeout) if timer else None)
    connection = _Connection(watched, app, state, settings)
    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            if state.timer is not None:
                await nursery.start(state.timer.run)
            async with trio.open_nursery() as inner:
                inner.start_soon(connection.run)
                yield client, watched
            if state.timer is not None:
                state.timer.close()


@asynccontextmanager
async def mcp_app(**config: Any) -> AsyncIterator[Any]:
    app = create_asgi_app(make_server(), config=HttpServerConfig(**config))
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        yield app
        nursery.cancel_scope.cancel()


async def initialize(app: Any) -> str:
    async with lean_connection(app) as (client, _):
        await client.send_all(mcp_post(init_request()))
        answer = await Wire(client).response()
        assert answer.status == 200
        session_id = answer.headers["mcp-session-id"]
        await client.send_all(
            mcp_post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
        )
        assert (await Wire(client).response()).status == 202
        await client.aclose()
    return session_id


# --- requests served ------------------------------------------------------------------------


@pytest.mark.parametrize("delivery", ["whole", "byte by byte", "with the next request"])
async def test_requests_are_served_however_they_arrive(
    autojump_clock: trio.abc.Clock, delivery: str
) -> None:
    async with mcp_app() as app:
        session_id = await initialize(app)
        calls = [mcp_post(tool_call(i, "echo", {"text": f"t{i}"}), session_id) for i in (1, 2)]
        async with lean_connection(app) as (client, _):
            wire = Wire(client)
            answers = []
            if delivery == "with the next request":
                await client.send_all(calls[0] + calls[1])
                answers = [await wire.response(), await wire.response()]
            for raw in calls if not answers else []:
                if delivery == "whole":
                    await client.send_all(raw)
                else:
                    for i in range(len(raw)):
                        await client.send_all(raw[i : i + 1])
                answers.append(await wire.response())
            assert [a.status for a in answers] == [200, 200]
            assert b'"t1"' in answers[0].body
            assert b'"t2"' in answers[1].body
            await client.aclose()


async def test_an_answer_is_complete_and_dated(autojump_clock: trio.abc.Clock) -> None:
    async with mcp_app(json_response=True) as app, lean_connection(app) as (client, _):
        await client.send_all(mcp_post(init_request()))
        answer = await Wire(client).response()
        assert answer.status == 200
        assert int(answer.headers["content-length"]) == len(answer.body)
        assert json.loads(answer.body)["result"]["serverInfo"]["name"] == "http-test"
        assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", answer.headers["date"])
        assert "connection" not in answer.headers  # kept alive
        await client.aclose()


async def test_expect_100_continue_gets_the_go_ahead(autojump_clock: trio.abc.Clock) -> None:
    body = json.dumps(init_request()).encode()
    head = request(
        "POST",
        headers=[*MCP, ("expect", "100-continue"), ("content-length", str(len(body)))],
        length=False,
    )
    async with mcp_app() as app, lean_connection(app) as (client, _):
        await client.send_all(head)
        received = b""
        while b"\r\n\r\n" not in received:  # the client waits for it before sending the body
            received += await client.receive_some(65536)
        assert received == b"HTTP/1.1 100 Continue\r\n\r\n"
        await client.send_all(body)
        assert (await Wire(client).response()).status == 200
        await client.aclose()


async def test_head_has_headers_only_and_keeps_the_connection(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with mcp_app() as app, lean_connection(app) as (client, _):
        wire = Wire(client)
        await client.send_all(request("HEAD"))
        answer = await wire.response("HEAD")
        assert answer.status == 405
        assert int(answer.headers["content-length"]) > 0
        assert answer.body == b""
        await client.send_all(mcp_post(init_request()))  # the framing stayed in step
        assert (await wire.response()).status == 200
        await client.aclose()


async def test_an_unread_body_does_not_cost_the_connection(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with mcp_app() as app, lean_connection(app) as (client, _):
        wire = Wire(client)
        await client.send_all(request("POST", "/elsewhere", b"x" * 500))
        assert (await wire.response()).status == 404  # answered without reading the body
        await client.send_all(mcp_post(init_request()))
        assert (await wire.response()).status == 200
        await client.aclose()


async def test_http_1_0_gets_its_answer_then_the_connection_closes(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with mcp_app() as app, lean_connection(app) as (client, _):
        await client.send_all(mcp_post(init_request(), version="1.0"))
        wire = Wire(client)
        answer = await wire.response()
        assert answer.status == 200
        assert answer.headers["connection"] == "close"
        assert await wire.eof() == b""


async def test_keep_alive_ends_after_the_maximum_requests(autojump_clock: trio.abc.Clock) -> None:
    async with mcp_app() as app, lean_connection(app, keep_alive_max_requests=2) as (client, _):
        wire = Wire(client)
        await client.send_all(request("GET", "/elsewhere"))
        assert "connection" not in (await wire.response("GET")).headers
        await client.send_all(request("GET", "/elsewhere"))
        assert (await wire.response("GET")).headers["connection"] == "close"
        assert await wire.eof() == b""


# --- limits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("timer", [False, True])
async def test_a_slow_request_head_is_cut(autojump_clock: trio.abc.Clock, timer: bool) -> None:
    async with (
        mcp_app() as app,
        lean_connection(app, header_timeout=5.0, timer=timer) as (client, _),
    ):
        await client.send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        assert await Wire(client).eof() == b""  # closed without an answer


@pytest.mark.parametrize("timer", [False, True])
async def test_an_idle_keep_alive_connection_is_closed(
    autojump_clock: trio.abc.Clock, timer: bool
) -> None:
    async with (
        mcp_app() as app,
        lean_connection(app, header_timeout=5.0, timer=timer) as (client, _),
    ):
        await client.send_all(request("GET", "/elsewhere"))
        wire = Wire(client)
        assert (await wire.response("GET")).status == 404
        assert await wire.eof() == b""  # no next request in time


@pytest.mark.parametrize("timer", [False, True])
async def test_a_busy_connection_is_never_cut_by_earlier_waits(
    autojump_clock: trio.abc.Clock, timer: bool
) -> None:
    # Each request comes 4 s after the last answer, within the 5 s header timeout: the
    # deadlines of the earlier waits (long past by the end) must not end the connection.
    async with (
        mcp_app() as app,
        lean_connection(app, header_timeout=5.0, timer=timer) as (client, _),
    ):
        wire = Wire(client)
        for _ in range(5):
            await trio.sleep(4)
            await client.send_all(request("GET", "/elsewhere"))
            assert (await wire.response("GET")).status == 404
        assert await wire.eof() == b""  # then idle: closed after 5 s


@pytest.mark.parametrize("timer", [False, True])
async def test_shutdown_closes_idle_connections_at_once(
    autojump_clock: trio.abc.Clock, timer: bool
) -> None:
    async with mcp_app() as app:
        state = _ServerState(IdleTimer(1e6) if timer else None)
        async with lean_connection(app, state=state, header_timeout=1e6) as (client, _):
            await client.send_all(request("GET", "/elsewhere"))
            wire = Wire(client)
            assert (await wire.response("GET")).status == 404
            await trio.testing.wait_all_tasks_blocked()
            state.terminate()
            assert await wire.eof() == b""


async def test_read_timeout_cuts_a_silent_client(autojump_clock: trio.abc.Clock) -> None:
    async with (
        mcp_app() as app,
        lean_connection(app, header_timeout=1e6, read_timeout=5.0) as (client, _),
    ):
        await client.send_all(b"POST /mcp HTTP/1.1\r\n")
        assert await Wire(client).eof() == b""


async def test_a_stalled_body_gets_408_then_the_connection_closes(
    autojump_clock: trio.abc.Clock,
) -> None:
    head = request("POST", headers=[*MCP, ("content-length", "100")], length=False)
    async with mcp_app(body_timeout=5.0) as app, lean_connection(app) as (client, _):
        await client.send_all(head + b'{"jsonrpc":')  # and nothing more
        wire = Wire(client)
        answer = await wire.response()
        assert answer.status == 408
        assert json.loads(answer.body)["error"]["code"] == -32600
        assert await wire.eof() == b""


@pytest.mark.parametrize("one_byte_at_a_time", [False, True])
async def test_an_oversized_head_gets_431(
    autojump_clock: trio.abc.Clock, one_byte_at_a_time: bool
) -> None:
    raw = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 2000
    async with (
        mcp_app() as app,
        lean_connection(app, max_header_bytes=1024) as (client, _),
    ):
        if one_byte_at_a_time:
            for i in range(1100):
                await client.send_all(raw[i : i + 1])
        else:
            await client.send_all(raw)
        wire = Wire(client)
        answer = await wire.response()
        assert answer.status == 431
        assert answer.headers["connection"] == "close"
        await wire.eof()


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"hello there\r\n\r\n", 400),
        (b"GET /mcp\r\n\r\n", 400),
        (b"GET /mcp HTTP/1.1\r\n\r\n", 400),  # no Host
        (b"GET /mcp HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400),
        (b"GET /mcp HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),  # HTTP/2 with prior knowledge
        (b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
        ),
        (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"zz\r\n",
            400,  # a malformed body, found while the app reads it
        ),
    ],
)
async def test_malformed_requests_get_a_status_then_the_connection_closes(
    autojump_clock: trio.abc.Clock, raw: bytes, status: int
) -> None:
    async with mcp_app() as app, lean_connection(app) as (client, _):
        await client.send_all(raw)
        wire = Wire(client)
        answer = await wire.response()
        assert answer.status == status
        assert answer.headers["connection"] == "close"
        assert answer.body == b""
        await wire.eof()


async def test_a_client_that_stops_reading_is_cut_and_its_stream_released(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with mcp_app() as app:
        session_id = await initialize(app)
        entry = app.manager.get(session_id, None, "streamable")
        get = request(
            "GET", headers=[("accept", "text/event-stream"), ("mcp-session-id", session_id)]
        )
        async with lean_connection(app, lockstep=True, send_timeout=10.0) as (client, server):
            await client.send_all(get)  # then never reads: the answer cannot be written
            await server.closed.wait()
        # the connection ended, and with it the GET stream
        assert entry.active == 0
        assert entry.transport.standalone.sink is None


async def test_pipelining_past_the_head_limit_ends_a_stream(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with mcp_app() as app:
        session_id = await initialize(app)
        entry = app.manager.get(session_id, None, "streamable")
        get = request(
            "GET", headers=[("accept", "text/event-stream"), ("mcp-session-id", session_id)]
        )
        async with lean_connection(app, max_header_bytes=1024) as (client, _):
            await client.send_all(get)
            assert (await Wire(client).stream.receive_some(65536)).startswith(b"HTTP/1.1 200")
            await client.send_all(b"x" * 2048)
        assert entry.active == 0


# --- framing of what the app sends ------------------------------------------------------


def fixed_app(start: dict[str, Any], bodies: list[dict[str, Any]]) -> App:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", **start})
        for body in bodies:
            await send({"type": "http.response.body", **body})

    return app


STREAMED = [{"body": b"one", "more_body": True}, {"body": b"two", "more_body": False}]


async def test_a_streamed_answer_is_chunked_and_keeps_the_connection(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = fixed_app({"status": 200, "headers": [(b"content-type", b"text/plain")]}, STREAMED)
    async with lean_connection(app) as (client, _):
        wire = Wire(client)
        for _ in range(2):
            await client.send_all(request("GET", "/"))
            answer = await wire.response("GET")
            assert answer.headers["transfer-encoding"] == "chunked"
            assert answer.body == b"onetwo"
        await client.aclose()


async def test_a_streamed_answer_to_http_1_0_ends_with_the_connection(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = fixed_app({"status": 200, "headers": []}, STREAMED)
    async with lean_connection(app) as (client, _):
        await client.send_all(request("GET", "/", version="1.0"))
        raw = await Wire(client).eof()
        head, _, body = raw.partition(b"\r\n\r\n")
        assert b"connection: close" in head
        assert b"transfer-encoding" not in head
        assert body == b"onetwo"


async def test_no_body_for_204(autojump_clock: trio.abc.Clock) -> None:
    app = fixed_app({"status": 204, "headers": []}, [{"body": b""}])
    async with lean_connection(app) as (client, _):
        await client.send_all(request("DELETE", "/"))
        answer = await Wire(client).response("DELETE")
        assert answer.status == 204
        assert "content-length" not in answer.headers
        await client.aclose()


@pytest.mark.parametrize(
    "app",
    [
        fixed_app({"status": 200, "headers": [(b"x-evil", b"a\r\nset-cookie: b")]}, [{}]),
        fixed_app({"status": 200, "headers": [(b"content-length", b"10")]}, [{"body": b"x"}]),
        fixed_app({"status": 99, "headers": []}, [{}]),
        fixed_app({"status": 200, "headers": []}, []),  # never sends a body
    ],
    ids=["header injection", "wrong length", "bad status", "no body"],
)
async def test_an_app_error_before_the_answer_gives_500(
    autojump_clock: trio.abc.Clock, app: App
) -> None:
    async with lean_connection(app) as (client, _):
        await client.send_all(request("GET", "/"))
        wire = Wire(client)
        answer = await wire.response("GET")
        assert answer.status == 500
        assert "set-cookie" not in answer.headers
        await wire.eof()


async def test_answers_during_shutdown_close_the_connection(
    autojump_clock: trio.abc.Clock,
) -> None:
    state = _ServerState()
    reached = trio.Event()
    proceed = trio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        reached.set()
        await proceed.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"bye"})

    async with lean_connection(app, state=state) as (client, _):
        await client.send_all(request("GET", "/"))
        await reached.wait()
        state.terminate()
        proceed.set()
        wire = Wire(client)
        answer = await wire.response("GET")
        assert answer.body == b"bye"
        assert answer.headers["connection"] == "close"
        assert await wire.eof() == b""


# --- the fast path and h11 on one connection -------------------------------------------------


def _chunked(raw: bytes) -> bytes:
    """``raw`` (a request with Content-Length) sent with a chunked body instead."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"content-len")]
    chunks = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    return b"\r\n".join([*lines, b"Transfer-Encoding: chunked"]) + b"\r\n\r\n" + chunks


@pytest.mark.parametrize("order", ["h11 first", "fast first"])
@pytest.mark.parametrize("pipelined", [False, True])
async def test_requests_for_h11_and_the_fast_path_share_a_connection(
    autojump_clock: trio.abc.Clock, order: str, pipelined: bool
) -> None:
    async with mcp_app() as app:
        session_id = await initialize(app)
        calls = [mcp_post(tool_call(i, "echo", {"text": f"t{i}"}), session_id) for i in range(4)]
        # A chunked body is not for the fast path: h11 reads those requests.
        if order == "h11 first":
            calls[0], calls[2] = _chunked(calls[0]), _chunked(calls[2])
        else:
            calls[1], calls[3] = _chunked(calls[1]), _chunked(calls[3])
        async with lean_connection(app) as (client, _):
            wire = Wire(client)
            answers = []
            if pipelined:
                await client.send_all(b"".join(calls))
                answers = [await wire.response() for _ in calls]
            else:
                for raw in calls:
                    await client.send_all(raw)
                    answers.append(await wire.response())
            assert [a.status for a in answers] == [200] * 4
            for i, answer in enumerate(answers):
                assert f'"t{i}"'.encode() in answer.body
            await client.aclose()


async def test_a_body_the_app_does_not_read_is_skipped_when_it_is_here(
    autojump_clock: trio.abc.Clock,
) -> None:
    # A 404 is answered without reading the body; the body and the next request came in
    # the same write, so the connection serves the next request.
    async with mcp_app() as app:
        session_id = await initialize(app)
        ignored = request("POST", "/elsewhere", body=b"x" * 5000)
        call = mcp_post(tool_call(1, "echo", {"text": "after"}), session_id)
        async with lean_connection(app) as (client, _):
            wire = Wire(client)
            await client.send_all(ignored + call)
            assert (await wire.response()).status == 404
            answer = await wire.response()
            assert answer.status == 200
            assert b'"after"' in answer.body
            await client.aclose()


async def test_the_idle_timer_holds_about_one_entry_per_waiting_connection(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Waits that ended are dropped as new ones begin, not only when their deadline comes.
    timer = IdleTimer(5.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(timer.run)
        scope = trio.CancelScope()
        for _ in range(10_000):
            timer.start(scope).stop()
        assert len(timer._queue) <= 1
        nursery.cancel_scope.cancel()
