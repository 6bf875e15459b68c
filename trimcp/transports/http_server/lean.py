"""A lean HTTP/1.1 server for the MCP app: h11 on trio streams, one task per connection.

Hypercorn spends most of a small request's time in its own machinery: a task, channels and
an idle timer per request, and a lock, a shielded cancel scope and a ``send_all`` per ASGI
message (three writes for a small SSE answer). This server runs the ASGI app directly in
the connection's task and writes a response whose body is complete when first sent
(JSON answers, SSE answers that fit one chunk) with one ``send_all``: status line, headers
and body together. It serves exactly what :class:`~trimcp.transports.http_server.McpHttpApp`
needs from HTTP/1.1 (keep-alive, Content-Length and chunked bodies both ways, streaming
responses, disconnect detection) and nothing else: no HTTP/2, no TLS, no upgrades.

Bounds: request heads must arrive within ``header_timeout`` (also the keep-alive idle
time) and fit ``max_header_bytes``; bytes a client pipelines while a response streams are
bounded by the same limit (past it the connection closes). Bodies are bounded by the app.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

import h11
import trio

from trimcp.transports.http_server.app import McpHttpApp
from trimcp.transports.http_server.asgi import Message

logger = logging.getLogger("trimcp.http.lean")

_READ = 65536
#: Bound on draining a client's unread input before closing (seconds, bytes).
_LINGER = 1.0
_LINGER_BYTES = 1024 * 1024
_PEER_GONE = (trio.BrokenResourceError, trio.ClosedResourceError)


class _ServerState:
    """What every connection needs to know about the server: is it stopping?"""

    def __init__(self) -> None:
        self.terminating = False
        #: Scopes of connections waiting for their next request, cancelled at shutdown.
        self.idle: set[trio.CancelScope] = set()

    def terminate(self) -> None:
        self.terminating = True
        for scope in list(self.idle):
            scope.cancel()


class _Exchange:
    """One request on a connection: the ASGI ``receive`` and ``send`` the app gets."""

    __slots__ = (
        "_conn",
        "_connection",
        "_start",
        "body_done",
        "client_gone",
        "complete",
        "started",
    )

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection
        self._conn = connection.conn
        self.body_done = False
        self.client_gone = False
        self.started = False  # bytes of the response were written
        self.complete = False  # the whole response was written
        self._start: Message | None = None

    async def receive(self) -> Message:
        if not self.body_done:
            return await self._receive_body()
        if not self.client_gone and not self.complete:
            await self._connection.wait_for_eof()
        self.client_gone = True
        return {"type": "http.disconnect"}

    async def _receive_body(self) -> Message:
        conn = self._conn
        chunks: list[bytes] = []
        while True:
            event = conn.next_event()
            if type(event) is h11.Data:
                chunks.append(bytes(event.data))
                continue
            if type(event) is h11.EndOfMessage:
                self.body_done = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            if event is h11.NEED_DATA:
                if chunks:
                    return {"type": "http.request", "body": b"".join(chunks), "more_body": True}
                if not await self._connection.read():
                    self.client_gone = self.body_done = True
                    return {"type": "http.disconnect"}
                continue
            # ConnectionClosed or anything unexpected: the request will not complete.
            self.client_gone = self.body_done = True
            return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._start = message
            return
        if kind != "http.response.body" or self.client_gone or self.complete:
            return
        conn = self._conn
        body: bytes = message.get("body", b"")
        more = bool(message.get("more_body", False))
        out = b""
        if not self.started:
            start = self._start
            assert start is not None, "http.response.body before http.response.start"
            headers = list(start.get("headers", ()))
            if not more and not any(name.lower() == b"content-length" for name, _ in headers):
                headers.append((b"content-length", str(len(body)).encode("ascii")))
            if self._connection.state.terminating:
                headers.append((b"connection", b"close"))
            out = conn.send(h11.Response(status_code=start["status"], headers=headers)) or b""
            self.started = True
        if body:
            out += conn.send(h11.Data(data=body)) or b""
        if not more:
            out += conn.send(h11.EndOfMessage()) or b""
            self.complete = True
        if out:
            try:
                await self._connection.stream.send_all(out)
            except _PEER_GONE:
                self.client_gone = True


class _Connection:
    """One client connection: requests one after the other (keep-alive)."""

    def __init__(
        self,
        stream: trio.SocketStream,
        app: Callable[[dict[str, Any], Any, Any], Awaitable[None]],
        state: _ServerState,
        header_timeout: float,
        max_header_bytes: int,
    ) -> None:
        self.stream = stream
        self.app = app
        self.state = state
        self.header_timeout = header_timeout
        self.max_header_bytes = max_header_bytes
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=max_header_bytes)
        self._eof = False
        self._reading = False
        self.client, self.server = _addresses(stream)

    async def read(self) -> bool:
        """Feed h11 one read from the socket; False at end of input or on error."""
        if self._eof:
            return False
        try:
            data = await self.stream.receive_some(_READ)
        except _PEER_GONE:
            data = b""
        if not data:
            self._eof = True
            self.conn.receive_data(b"")
            return False
        self.conn.receive_data(data)
        return True

    async def wait_for_eof(self) -> None:
        """Return once the client closed the connection (or sent more than we buffer)."""
        while await self.read():
            if len(self.conn.trailing_data[0]) > self.max_header_bytes:
                return  # a client pipelining more than a request head: stop serving it

    async def run(self) -> None:
        try:
            while not self.state.terminating:
                request = await self._next_request()
                if request is None:
                    return
                keep = await self._serve(request)
                if not keep or self.state.terminating:
                    return
                self.conn.start_next_cycle()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(_LINGER):
                await self._close()

    async def _close(self) -> None:
        # Closing with unread input makes the kernel send RST, which can destroy the
        # answer (e.g. a 413) before the client reads it: shut our side down first and
        # drain what the client still sends, bounded in bytes and time.
        if not self._eof and self.conn.their_state not in (h11.DONE, h11.CLOSED, h11.IDLE):
            try:
                await self.stream.send_eof()
                drained = 0
                while drained < _LINGER_BYTES:
                    data = await self.stream.receive_some(_READ)
                    if not data:
                        break
                    drained += len(data)
            except (*_PEER_GONE, trio.BusyResourceError, OSError):
                pass
        await self.stream.aclose()

    async def _next_request(self) -> h11.Request | None:
        conn = self.conn
        with trio.CancelScope(deadline=trio.current_time() + self.header_timeout) as scope:
            self.state.idle.add(scope)
            try:
                while True:
                    try:
                        event = conn.next_event()
                    except h11.RemoteProtocolError as exc:
                        await self._refuse(exc.error_status_hint)
                        return None
                    if type(event) is h11.Request:
                        return event
                    if event is h11.NEED_DATA:
                        if not await self.read():
                            return None
                        continue
                    return None  # ConnectionClosed, or PAUSED after a half-read body
            finally:
                self.state.idle.discard(scope)
        return None  # header timeout or shutdown

    async def _refuse(self, status: int) -> None:
        try:
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                data = self.conn.send(
                    h11.Response(status_code=status,
                                 headers=[(b"content-length", b"0"), (b"connection", b"close")])
                )
                await self.stream.send_all((data or b"") + (self.conn.send(h11.EndOfMessage())
                                                            or b""))
        except (h11.LocalProtocolError, *_PEER_GONE):
            pass

    async def _serve(self, request: h11.Request) -> bool:
        """Run the app for one request. True when the connection can take another."""
        target = bytes(request.target)
        path, _, query = target.partition(b"?")
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.http_version.decode("ascii"),
            "method": request.method.decode("ascii"),
            "scheme": "http",
            "path": unquote(path.decode("latin-1")),
            "raw_path": path,
            "query_string": query,
            "root_path": "",
            "headers": list(request.headers),
            "client": self.client,
            "server": self.server,
        }
        exchange = _Exchange(self)
        try:
            await self.app(scope, exchange.receive, exchange.send)
        except Exception:
            logger.exception("the app failed on %s %s", scope["method"], scope["path"])
        if exchange.client_gone:
            return False
        if not exchange.started:
            await self._refuse(500)
            return False
        if not exchange.complete:
            return False  # the app ended mid-response: the connection cannot be reused
        return self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE


def _addresses(stream: trio.SocketStream) -> tuple[Any, Any]:
    try:
        return tuple(stream.socket.getpeername()[:2]), tuple(stream.socket.getsockname()[:2])
    except OSError:
        return None, None


async def serve_lean(
    app: McpHttpApp,
    *,
    host: str,
    port: int,
    header_timeout: float = 5.0,
    max_header_bytes: int = 16 * 1024,
    graceful_timeout: float = 5.0,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` with the lean server; reports the bound port.

    When ``shutdown_trigger`` returns: every session closes (bounded, which ends their
    streams), the listener closes, idle connections close, and busy ones get
    ``graceful_timeout`` to finish. Cancellation: stops at once; sessions still get their
    bounded close.
    """
    state = _ServerState()
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]

    async def handle(stream: trio.SocketStream) -> None:
        await _Connection(stream, app, state, header_timeout, max_header_bytes).run()

    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        async with trio.open_nursery() as connections:
            accepting = trio.CancelScope()

            async def accept() -> None:
                with accepting:
                    await trio.serve_listeners(handle, listeners, handler_nursery=connections)

            connections.start_soon(accept)
            task_status.started(bound)
            if shutdown_trigger is None:
                await trio.sleep_forever()
            else:
                await shutdown_trigger()
            await app.shutdown()
            accepting.cancel()
            state.terminate()
            connections.cancel_scope.deadline = trio.current_time() + graceful_timeout
