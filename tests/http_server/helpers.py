"""A tiny in-process ASGI client, and a test server, for driving the HTTP app under the
autojump clock.

:class:`Exchange` is one HTTP request/response: the app reads the request body from it and
writes the response into it. ``blocking=True`` makes the app's body writes wait until
:meth:`Exchange.unblock` (a client that does not read). :class:`AsgiClient` starts each
exchange as a task in the test's nursery.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.framing import EOF, NEED_DATA
from trimcp.protocol.sse import SSEDecoder, SSEEvent
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext
from trimcp.transports.http_server import (
    HttpServerConfig,
    McpHttpApp,
    close_request_stream,
    create_asgi_app,
)
from trimcp.types import (
    Implementation,
    ServerCapabilities,
    ToolsCapability,
)

WAIT = 60.0  # bound on every wait in these tests (instant under the autojump clock)
HOST = "127.0.0.1:8000"
ACCEPT_BOTH = "application/json, text/event-stream"


class Exchange:
    """One request to the app and its response, as the app sees and writes them."""

    def __init__(
        self,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]],
        body_chunks: Sequence[bytes],
        *,
        blocking: bool = False,
        query: bytes = b"",
    ) -> None:
        self.scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": query,
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        self._requests = [
            {"type": "http.request", "body": chunk, "more_body": i < len(body_chunks) - 1}
            for i, chunk in enumerate(body_chunks or [b""])
        ]
        self.read_requests = 0
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.started = trio.Event()
        self.finished = trio.Event()
        self.app_returned = trio.Event()
        self._gone = trio.Event()
        self._changed = trio.Event()
        self._unblocked = trio.Event()
        if not blocking:
            self._unblocked.set()
        self._decoder = SSEDecoder()
        self._events: list[SSEEvent] = []
        self._event_index = 0

    # --- the app's side ---

    async def receive(self) -> dict[str, Any]:
        if self.read_requests < len(self._requests):
            self.read_requests += 1
            return self._requests[self.read_requests - 1]
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        assert not self.finished.is_set(), f"message after the response ended: {message}"
        if message["type"] == "http.response.start":
            assert self.status is None, "two response starts"
            self.status = message["status"]
            self.headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
            self.started.set()
        elif message["type"] == "http.response.body":
            assert self.status is not None
            await self._unblocked.wait()
            body = message.get("body", b"")
            if body:
                self.chunks.append(body)
                self._decoder.receive_data(body)
            if not message.get("more_body", False):
                self.finished.set()
        self._changed.set()
        self._changed = trio.Event()

    # --- the test's side ---

    def disconnect(self) -> None:
        self._gone.set()

    def unblock(self) -> None:
        self._unblocked.set()

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def json(self) -> Any:
        return json.loads(self.body)

    def _pull_events(self) -> None:
        while True:
            event = self._decoder.next_event()
            if event is NEED_DATA or event is EOF:
                return
            assert isinstance(event, SSEEvent), event
            self._events.append(event)

    @property
    def events(self) -> list[SSEEvent]:
        self._pull_events()
        return list(self._events)

    def messages(self) -> list[Any]:
        """The JSON-RPC messages of every data-carrying SSE event so far."""
        return [json.loads(e.data) for e in self.events if e.data]

    async def next_event(self) -> SSEEvent:
        with trio.fail_after(WAIT):
            while True:
                self._pull_events()
                if self._event_index < len(self._events):
                    self._event_index += 1
                    return self._events[self._event_index - 1]
                assert not self.finished.is_set(), "the stream ended"
                await self._changed.wait()

    async def next_message(self) -> Any:
        while True:
            event = await self.next_event()
            if event.data:
                return json.loads(event.data)

    async def wait_finished(self) -> Exchange:
        with trio.fail_after(WAIT):
            await self.finished.wait()
        return self

    async def wait_returned(self) -> Exchange:
        """Wait until the app is done with this request (e.g. after a disconnect)."""
        with trio.fail_after(WAIT):
            await self.app_returned.wait()
        return self

    async def wait_started(self) -> Exchange:
        with trio.fail_after(WAIT):
            await self.started.wait()
        return self


class AsgiClient:
    """Starts exchanges against ``app`` as tasks of ``nursery``."""

    def __init__(self, app: McpHttpApp, nursery: trio.Nursery) -> None:
        self.app = app
        self.nursery = nursery

    async def _run(self, exchange: Exchange) -> None:
        try:
            await self.app(exchange.scope, exchange.receive, exchange.send)
        finally:
            exchange.app_returned.set()

    def start(
        self,
        method: str,
        path: str = "/mcp",
        *,
        headers: Sequence[tuple[str, str]] = (),
        body: bytes | Any = b"",
        chunks: Sequence[bytes] | None = None,
        host: str | None = HOST,
        blocking: bool = False,
        query: bytes = b"",
    ) -> Exchange:
        all_headers = [("host", host)] if host is not None else []
        all_headers.extend(headers)
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        exchange = Exchange(
            method,
            path,
            all_headers,
            chunks if chunks is not None else [body],
            blocking=blocking,
            query=query,
        )
        self.nursery.start_soon(self._run, exchange)
        return exchange

    async def request(self, method: str, path: str = "/mcp", **kwargs: Any) -> Exchange:
        """Start an exchange and wait until its response is complete."""
        return await self.start(method, path, **kwargs).wait_finished()

    async def post(
        self,
        message: Any,
        *,
        session_id: str | None = None,
        version: str | None = "2025-11-25",
        accept: str = ACCEPT_BOTH,
        extra: Sequence[tuple[str, str]] = (),
        wait: bool = True,
        **kwargs: Any,
    ) -> Exchange:
        headers = post_headers(session_id, version, accept)
        headers.extend(extra)
        exchange = self.start("POST", headers=headers, body=message, **kwargs)
        if wait:
            await exchange.wait_finished()
        return exchange

    async def initialize(self, version: str = "2025-11-25", **kwargs: Any) -> str:
        """Run the handshake; returns the session id."""
        reply = await self.post(init_request(version), version=None, **kwargs)
        assert reply.status == 200, (reply.status, reply.body)
        session_id = reply.headers["mcp-session-id"]
        note = await self.post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            session_id=session_id,
            version=version,
            **kwargs,
        )
        assert note.status == 202, (note.status, note.body)
        return session_id

    async def call(
        self, session_id: str, request_id: int, name: str, args: Any = None, **kwargs: Any
    ) -> Any:
        """tools/call over a POST; returns the JSON-RPC answer (SSE or JSON)."""
        reply = await self.post(tool_call(request_id, name, args), session_id=session_id, **kwargs)
        assert reply.status == 200, (reply.status, reply.body)
        if reply.headers["content-type"].startswith("application/json"):
            return reply.json()
        answers = [m for m in reply.messages() if m.get("id") == request_id and "method" not in m]
        assert len(answers) == 1, reply.body
        return answers[0]


def post_headers(
    session_id: str | None = None, version: str | None = "2025-11-25", accept: str = ACCEPT_BOTH
) -> list[tuple[str, str]]:
    headers = [("content-type", "application/json"), ("accept", accept)]
    if session_id is not None:
        headers.append(("mcp-session-id", session_id))
    if version is not None:
        headers.append(("mcp-protocol-version", version))
    return headers


def init_request(version: str = "2025-11-25", request_id: int = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }


def tool_call(
    request_id: int | str, name: str, args: Any = None, meta: Any = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": args or {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


class ServerLog:
    """What the test server's handlers saw."""

    def __init__(self) -> None:
        self.started: list[Any] = []
        self.cancelled: list[Any] = []
        self.finished: list[Any] = []
        self.release = trio.Event()
        self.sessions: list[Any] = []  # strong references: ids stay unique


def make_server(log: ServerLog | None = None) -> LowLevelServer:
    """A server with tools: echo, slow (waits for log.release), notify (n unrelated
    notifications), progress (n related progress notifications), sample (asks the client),
    poll (closes its SSE response before answering), boom (raises), exit (raises
    SystemExit), surrogate (answers with a lone surrogate)."""
    log = log or ServerLog()
    server = LowLevelServer(
        Implementation(name="http-test", version="1.0.0"),
        capabilities=ServerCapabilities(tools=ToolsCapability(), logging={}),
    )

    @server.request_handler("tools/list")
    async def list_tools(ctx: RequestContext) -> Any:
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        name = ctx.params.name
        args = ctx.params.arguments or {}
        log.sessions.append(ctx.session)
        if name == "echo":
            return text(str(args.get("text", "")))
        if name == "slow":
            log.started.append(ctx.request_id)
            try:
                await log.release.wait()
            except trio.Cancelled:
                log.cancelled.append(ctx.request_id)
                raise
            log.finished.append(ctx.request_id)
            return text("slow done")
        if name == "notify":
            assert ctx.session is not None
            for i in range(int(args.get("n", 1))):
                await ctx.session.send_notification(
                    "notifications/message", {"level": "info", "data": f"note {i}"}
                )
            return text("notified")
        if name == "progress":
            for i in range(int(args.get("n", 3))):
                await ctx.report_progress(i + 1, int(args.get("n", 3)))
            return text("progressed")
        if name == "sample":
            result = await ctx.send_request(
                "sampling/createMessage",
                {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                    "maxTokens": 10,
                },
            )
            return text(f"sampled: {result.content.text}")
        if name == "poll":
            closed = close_request_stream(ctx)
            await ctx.send_notification(
                "notifications/message", {"level": "info", "data": f"closed={closed}"}
            )
            await trio.sleep(1)
            return text("polled")
        if name == "boom":
            raise RuntimeError("boom")
        if name == "exit":  # what argparse does with bad arguments
            raise SystemExit(2)
        if name == "surrogate":  # an answer our encoder must escape (no UTF-8 form)
            return text("\ud800" + str(args.get("text", "")))
        raise McpError(INVALID_PARAMS, f"no tool {name}")

    return server


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


@asynccontextmanager
async def running_app(
    config: HttpServerConfig | None = None, server: Any = None
) -> AsyncIterator[tuple[McpHttpApp, AsgiClient]]:
    """The app with its session manager running, and a client; shut down on exit."""
    app = create_asgi_app(server or make_server(), config=config or HttpServerConfig())
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        yield app, AsgiClient(app, nursery)
        with trio.fail_after(WAIT):
            await app.shutdown()
        nursery.cancel_scope.cancel()
