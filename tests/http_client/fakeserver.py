"""A scriptable HTTP/1.1 server on a real loopback socket, built on trio + h11.

Tests give it an ``app(request, reply)``; the server logs every request (with the Trio
clock time it arrived) and lets the app answer with JSON, a status, or an SSE stream it
can end cleanly or drop mid-way.
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import h11
import trio


@attrs.define
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    time: float
    connection: int

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def rpc_method(self) -> str | None:
        if self.method != "POST":
            return None
        value = self.json()
        return value.get("method") if isinstance(value, dict) else None


class DropConnection(Exception):
    """Raised by :meth:`Reply.drop` to close the connection without ending the response."""


class Reply:
    """How an app answers one request."""

    def __init__(self, stream: trio.abc.Stream, conn: h11.Connection) -> None:
        self._stream = stream
        self._conn = conn
        self.started = False
        self.ended = False

    async def _send(self, event: h11.Event) -> None:
        data = self._conn.send(event)
        if data:
            await self._stream.send_all(data)

    async def start(
        self, status: int, headers: dict[str, str] | None = None, *, length: int | None = None
    ) -> None:
        items = list((headers or {}).items())
        if length is not None:
            items.append(("content-length", str(length)))
        await self._send(h11.Response(status_code=status, headers=items))
        self.started = True

    async def body(self, data: bytes) -> None:
        if data:
            await self._send(h11.Data(data=data))

    async def end(self) -> None:
        await self._send(h11.EndOfMessage())
        self.ended = True

    async def status(
        self, status: int, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> None:
        await self.start(status, headers, length=len(body))
        await self.body(body)
        await self.end()

    async def json(
        self, value: Any, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        all_headers = {"content-type": "application/json", **(headers or {})}
        await self.status(status, json.dumps(value).encode(), all_headers)

    async def start_sse(self, headers: dict[str, str] | None = None) -> None:
        await self.start(200, {"content-type": "text/event-stream", **(headers or {})})

    async def event(
        self,
        data: Any = None,
        *,
        id: str | None = None,
        retry: int | None = None,
        event: str | None = None,
        raw: bytes | None = None,
    ) -> None:
        if raw is not None:
            await self.body(raw)
            return
        lines = []
        if event is not None:
            lines.append(f"event: {event}")
        if id is not None:
            lines.append(f"id: {id}")
        if retry is not None:
            lines.append(f"retry: {retry}")
        text = "" if data is None else data if isinstance(data, str) else json.dumps(data)
        lines.append(f"data: {text}")
        await self.body(("\n".join(lines) + "\n\n").encode())

    def drop(self) -> None:
        raise DropConnection


App = Callable[[Request, Reply], Awaitable[None]]


class FakeServer:
    def __init__(self, app: App) -> None:
        self.app = app
        self.requests: list[Request] = []
        self.port = 0
        self.scheme = "http"
        self.connections = 0
        self.active = 0
        self.max_active = 0

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/mcp"

    def of(self, method: str) -> list[Request]:
        """Requests with this HTTP method, or POSTs carrying this JSON-RPC method."""
        if method.isupper():
            return [r for r in self.requests if r.method == method]
        return [r for r in self.requests if r.rpc_method == method]

    async def handle(self, stream: trio.abc.Stream) -> None:
        self.connections += 1
        number = self.connections
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read_request(stream, conn, number)
                if request is None:
                    return
                self.requests.append(request)
                reply = Reply(stream, conn)
                self.active += 1
                self.max_active = max(self.max_active, self.active)
                try:
                    await self.app(request, reply)
                finally:
                    self.active -= 1
                if not reply.started:
                    await reply.status(202)
                elif not reply.ended:
                    await reply.end()
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (
            DropConnection,
            trio.BrokenResourceError,
            trio.ClosedResourceError,
            h11.ProtocolError,
        ):
            return
        finally:
            await trio.aclose_forcefully(stream)

    async def _read_request(
        self, stream: trio.abc.Stream, conn: h11.Connection, number: int
    ) -> Request | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await stream.receive_some(65536)))
                continue
            if isinstance(event, h11.ConnectionClosed):
                return None
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                headers = {k.decode().lower(): v.decode() for k, v in head.headers}
                return Request(
                    head.method.decode(),
                    head.target.decode(),
                    headers,
                    bytes(body),
                    trio.current_time(),
                    number,
                )


@asynccontextmanager
async def fake_server(app: App, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[FakeServer]:
    """Serve ``app`` on 127.0.0.1 (a free port); over TLS when given a server context."""
    server = FakeServer(app)
    serve: functools.partial[Any]
    if tls is None:
        serve = functools.partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1")
    else:
        serve = functools.partial(
            trio.serve_ssl_over_tcp, server.handle, 0, tls, host="127.0.0.1", https_compatible=True
        )
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(serve)
        listener = listeners[0]
        socket_listener = listener.transport_listener if tls is not None else listener
        server.port = socket_listener.socket.getsockname()[1]
        if tls is not None:
            server.scheme = "https"
        yield server
        nursery.cancel_scope.cancel()


def result(request: Request, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.json()["id"], "result": value}


def error(request: Request, code: int, message: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request.json()["id"],
        "error": {"code": code, "message": message},
    }


def init_result(version: str = "2025-11-25") -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "fake", "version": "1"},
    }


TOOLS = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}


class McpApp:
    """A small stateful Streamable HTTP server; tests override ``call`` or the hooks.

    Answers initialize with a session id (``session-<n>``), notifications with 202,
    tools/list with :data:`TOOLS`, tools/call with :meth:`call` (JSON by default), GET
    with 405 and DELETE with 200. Unknown session ids get 404.
    """

    def __init__(self, *, sessions: bool = True, get: bool = False) -> None:
        self.sessions = sessions
        self.get_stream = get
        self.live: set[str] = set()
        self.count = 0
        self.version: str | None = None
        self.get_replies: list[Reply] = []

    async def __call__(self, request: Request, reply: Reply) -> None:
        session = request.headers.get("mcp-session-id")
        if request.method == "DELETE":
            await self.delete(request, reply)
            return
        if request.method == "GET":
            await self.get(request, reply)
            return
        message = request.json()
        method = message.get("method") if isinstance(message, dict) else None
        if method == "initialize":
            self.count += 1
            headers = {}
            if self.sessions:
                session = f"session-{self.count}"
                self.live.add(session)
                headers["mcp-session-id"] = session
            version = message["params"]["protocolVersion"]
            await reply.json(result(request, init_result(version)), headers=headers)
            return
        if self.sessions and session not in self.live:
            await reply.status(404 if session else 400)
            return
        if "id" not in message or method is None:
            await reply.status(202)
            return
        if method == "tools/list":
            await reply.json(result(request, TOOLS))
            return
        await self.call(request, reply)

    async def call(self, request: Request, reply: Reply) -> None:
        arguments = request.json()["params"].get("arguments", {})
        await reply.json(result(request, {"content": [{"type": "text", "text": str(arguments)}]}))

    async def get(self, request: Request, reply: Reply) -> None:
        if not self.get_stream:
            await reply.status(405)
            return
        await reply.start_sse()
        self.get_replies.append(reply)
        await trio.sleep_forever()

    async def delete(self, request: Request, reply: Reply) -> None:
        self.live.discard(request.headers.get("mcp-session-id", ""))
        await reply.status(200)
