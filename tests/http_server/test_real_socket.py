"""On a real loopback socket, under both engines: serve_http, limits, shutdown, SDK interop.

These use the real clock; every wait is bounded by ``fail_after`` and none asserts a time.
The lean engine's limits are also tested deterministically in ``test_lean_engine.py``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import h11
import pytest
import trio

from tests.http_server.helpers import ServerLog, init_request, make_server, tool_call
from trimcp.protocol.sse import SSEDecoder, SSEEvent
from trimcp.transports.http_server import HttpServerConfig, hypercorn_config, serve_http

BOUND = 30.0
PEER = Path(__file__).with_name("sdk_client_peer.py")


class RawHttp:
    """A minimal keep-alive HTTP/1.1 client over one socket (h11)."""

    def __init__(self, stream: trio.SocketStream, host: str) -> None:
        self.stream = stream
        self.host = host
        self.conn = h11.Connection(h11.CLIENT)

    async def _next(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.conn.receive_data(await self.stream.receive_some(65536))

    async def request(
        self,
        method: str,
        body: bytes = b"",
        headers: list[tuple[str, str]] | None = None,
        path: str = "/mcp",
    ) -> tuple[int, dict[str, str], bytes]:
        all_headers = [("host", self.host), *(headers or [])]
        if method == "POST":
            all_headers.append(("content-length", str(len(body))))
        data = self.conn.send(h11.Request(method=method, target=path, headers=all_headers))
        if body:
            data += self.conn.send(h11.Data(data=body))
        data += self.conn.send(h11.EndOfMessage())
        await self.stream.send_all(data)
        response = await self._next()
        chunks = []
        while True:
            event = await self._next()
            if isinstance(event, h11.EndOfMessage):
                break
            chunks.append(bytes(event.data))
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
        names = {k.decode(): v.decode() for k, v in response.headers}
        return response.status_code, names, b"".join(chunks)


def sse_messages(body: bytes) -> list[Any]:
    decoder = SSEDecoder()
    decoder.receive_data(body)
    out = []
    while isinstance(event := decoder.next_event(), SSEEvent):
        if event.data:
            out.append(json.loads(event.data))
    return out


HEADERS = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]


@pytest.fixture(params=["hypercorn", "lean"])
def engine(request: pytest.FixtureRequest) -> str:
    """Every real-socket test runs on both HTTP servers."""
    value: str = request.param
    return value


async def _start(nursery: trio.Nursery, **kwargs: Any) -> int:
    kwargs.setdefault("port", 0)
    port: int = await nursery.start(
        lambda task_status: serve_http(
            make_server(kwargs.pop("log", None)), **kwargs, task_status=task_status
        )
    )
    return port


async def test_serve_http_on_port_zero_answers_a_session(engine: str) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine=engine)
            assert port > 0
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            client = RawHttp(stream, f"127.0.0.1:{port}")
            status, headers, body = await client.request(
                "POST", json.dumps(init_request()).encode(), HEADERS
            )
            assert status == 200
            session_id = headers["mcp-session-id"]
            assert sse_messages(body)[0]["result"]["serverInfo"]["name"] == "http-test"
            extra = [("mcp-session-id", session_id), ("mcp-protocol-version", "2025-11-25")]
            status, _, body = await client.request(
                "POST",
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                HEADERS + extra,
            )
            assert status == 202
            assert body == b""
            for i in range(3):  # keep-alive: several requests on one connection
                status, _, body = await client.request(
                    "POST",
                    json.dumps(tool_call(i, "echo", {"text": f"n{i}"})).encode(),
                    HEADERS + extra,
                )
                assert status == 200
                assert sse_messages(body)[-1]["result"]["content"][0]["text"] == f"n{i}"
            status, _, _ = await client.request("DELETE", headers=extra)
            assert status == 204
            await stream.aclose()
            nursery.cancel_scope.cancel()


async def test_dns_rebinding_is_refused_on_the_wire(engine: str) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine=engine)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            client = RawHttp(stream, "evil.example.com")
            status, _, body = await client.request(
                "POST",
                json.dumps(init_request()).encode(),
                [*HEADERS, ("origin", "http://evil.example.com")],
            )
            assert status == 421
            assert json.loads(body)["error"]["code"] == -32600
            await stream.aclose()
            nursery.cancel_scope.cancel()


async def test_slow_headers_are_cut_by_the_header_timeout(engine: str) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(
                nursery, engine=engine, hypercorn=hypercorn_config(header_timeout=0.3)
            )
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            # never finish the headers: the server must close the connection
            while await stream.receive_some(1024):
                pass
            await stream.aclose()
            nursery.cancel_scope.cancel()


async def test_chunked_oversized_body_over_the_wire(engine: str) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(
                nursery, engine=engine, config=HttpServerConfig(max_body_bytes=10_000)
            )
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            head = (
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            await stream.send_all(head)
            chunk = b"x" * 4096
            received = b""
            with trio.move_on_after(BOUND / 2):
                async with trio.open_nursery() as pair:

                    async def write() -> None:
                        with contextlib.suppress(trio.BrokenResourceError):
                            for _ in range(1000):  # 4 MB offered
                                await stream.send_all(b"%x\r\n" % len(chunk) + chunk + b"\r\n")

                    pair.start_soon(write)
                    while b"\r\n\r\n" not in received:
                        received += await stream.receive_some(4096)
                    pair.cancel_scope.cancel()
            assert received.startswith(b"HTTP/1.1 413")
            await stream.aclose()
            nursery.cancel_scope.cancel()


async def test_graceful_shutdown_ends_open_streams_and_returns(engine: str) -> None:
    stop = trio.Event()
    log = ServerLog()
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            # A connection left open would hold hypercorn for graceful_timeout, past BOUND.
            port = await _start(
                nursery,
                engine=engine,
                shutdown_trigger=stop.wait,
                log=log,
                hypercorn=hypercorn_config(graceful_timeout=3 * BOUND),
            )
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            client = RawHttp(stream, f"127.0.0.1:{port}")
            _, headers, _ = await client.request(
                "POST", json.dumps(init_request()).encode(), HEADERS
            )
            session_id = headers["mcp-session-id"]
            # a long GET stream on a second connection
            get_stream = await trio.open_tcp_stream("127.0.0.1", port)
            await get_stream.send_all(
                f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                f"Mcp-Session-Id: {session_id}\r\n\r\n".encode()
            )
            first = await get_stream.receive_some(65536)
            assert first.startswith(b"HTTP/1.1 200")
            stop.set()
            rest = b""
            while data := await get_stream.receive_some(65536):
                rest += data
            assert rest.endswith(b"0\r\n\r\n")  # the chunked body ended cleanly
            await get_stream.aclose()
            await stream.aclose()
        # serve_http returned by itself: the nursery closed without a cancel


@pytest.mark.parametrize("mode", ["streamable", "sse"])
async def test_official_sdk_client_against_trimcp(mode: str, engine: str) -> None:
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine=engine)
            path = "/mcp" if mode == "streamable" else "/sse"
            done = await trio.run_process(
                [sys.executable, str(PEER), f"http://127.0.0.1:{port}{path}", mode],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            nursery.cancel_scope.cancel()
    output = done.stdout.decode()
    assert done.returncode == 0, output + done.stderr.decode()[-3000:]
    report = json.loads(output)
    assert report["server_name"] == "http-test"
    assert report["tools"] == ["echo"]
    assert report["echo"] == ["hello over http"]
    assert report["progress_result"] == ["progressed"]
    assert report["progress"] == [1, 2, 3]
    assert report["sample"] == ["sampled: from the SDK"]


async def test_lean_pipelined_requests_are_answered_in_order() -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine="lean")
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                client = RawHttp(stream, f"127.0.0.1:{port}")
                _, headers, _ = await client.request(
                    "POST", json.dumps(init_request()).encode(), HEADERS
                )
                session_id = headers["mcp-session-id"]
                raw = b""
                for i in (1, 2):
                    body = json.dumps(tool_call(i, "echo", {"text": f"p{i}"})).encode()
                    raw += (
                        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        "Content-Type: application/json\r\n"
                        "Accept: application/json, text/event-stream\r\n"
                        f"Mcp-Session-Id: {session_id}\r\nContent-Length: {len(body)}\r\n\r\n"
                    ).encode() + body
                await stream.send_all(raw)  # both requests in one write
                got = b""
                while got.count(b'"result"') < 2:
                    got += await stream.receive_some(65536)
                assert got.index(b'"p1"') < got.index(b'"p2"')
            nursery.cancel_scope.cancel()


async def test_stalled_body_gets_408_then_the_connection_closes(engine: str) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine=engine, config=HttpServerConfig(body_timeout=0.3))
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                await stream.send_all(
                    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n"
                    b'{"jsonrpc":'  # and nothing more
                )
                answer = b""
                while data := await stream.receive_some(65536):
                    answer += data
                assert answer.startswith(b"HTTP/1.1 408")
                assert b"-32600" in answer
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("raw", "status"),
    [(b"hello there\r\n\r\n", b"400"), (b"GET /mcp HTTP/1.1\r\n\r\n", b"400")],
)
async def test_malformed_request_gets_an_error_then_the_connection_closes(
    engine: str, raw: bytes, status: bytes
) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine=engine)
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                await stream.send_all(raw)
                answer = b""
                while data := await stream.receive_some(65536):
                    answer += data
                assert answer.startswith(b"HTTP/1.1 " + status)
            nursery.cancel_scope.cancel()


async def test_oversized_headers_are_refused(engine: str) -> None:
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await _start(nursery, engine=engine)
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                await stream.send_all(
                    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 40_000
                )
                answer = b""
                while data := await stream.receive_some(65536):
                    answer += data
                assert answer.startswith(b"HTTP/1.1 431")
            nursery.cancel_scope.cancel()


async def test_lean_notices_a_get_client_going_away() -> None:
    from trimcp.transports.http_server import create_asgi_app
    from trimcp.transports.http_server.lean import serve_lean

    app = create_asgi_app(make_server())
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: serve_lean(
                    app, host="127.0.0.1", port=0, task_status=task_status
                )
            )
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                client = RawHttp(stream, f"127.0.0.1:{port}")
                _, headers, _ = await client.request(
                    "POST", json.dumps(init_request()).encode(), HEADERS
                )
            session_id = headers["mcp-session-id"]
            get = await trio.open_tcp_stream("127.0.0.1", port)
            await get.send_all(
                f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                f"Mcp-Session-Id: {session_id}\r\n\r\n".encode()
            )
            assert (await get.receive_some(65536)).startswith(b"HTTP/1.1 200")
            entry = app.manager.get(session_id, None, "streamable")
            assert entry is not None
            assert entry.active == 1
            await get.aclose()
            await _until(lambda: entry.active == 0)
            assert entry.transport.standalone.sink is None
            nursery.cancel_scope.cancel()


async def _until(condition: Any) -> None:
    # Real sockets: poll (bounded by the caller's fail_after) for the server to notice.
    while not condition():  # noqa: ASYNC110
        await trio.sleep(0.01)
