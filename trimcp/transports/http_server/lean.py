"""A lean HTTP/1.1 server for the MCP app: h11 on trio streams, one task per connection.

Hypercorn spends most of a small request's time in its own machinery: a task, channels and
an idle timer per request, and a lock, a shielded cancel scope and a ``send_all`` per ASGI
message (three writes for a small SSE answer). This server runs the ASGI app directly in
the connection's task and writes a response whose body is complete when first sent
(JSON answers, SSE answers that fit one chunk) with one ``send_all``: status line, headers
and body together. It serves exactly what :class:`~trimcp.transports.http_server.McpHttpApp`
needs from HTTP/1.1 (keep-alive, pipelining, ``Expect: 100-continue``, Content-Length and
chunked bodies both ways, streaming responses, disconnect detection) and nothing else: no
HTTP/2, no TLS, no upgrades.

Requests are read by a fast path for the plain kind nearly every client sends
(:mod:`.fasthead`: a strict subset of HTTP/1.1 that h11 also accepts); any other request
goes to h11 (one ``h11.Connection`` per such request, handed the bytes buffered so far),
which also decides every refusal. Responses are framed here, because h11's general-purpose
response path (header validation, state bookkeeping for three events) cost about as much
CPU as parsing the request. What h11 would decide about framing and keep-alive is decided
the same way: Content-Length when the body is complete at once, chunked when it streams
to an HTTP/1.1 client, delimited by closing the connection for HTTP/1.0; no body for
HEAD, 204 and 304; keep-alive unless the client or the app says ``Connection: close``.

Limits: see :func:`serve_lean`; body size and time are the app's. Malformed requests get
h11's status hint (400, 431, 501), HTTP versions other than 1.0 and 1.1 get 505, both
Content-Length and Transfer-Encoding get 400; then the connection closes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

import attrs
import h11
import trio

from trimcp._fastio import FastReceive, FastSend
from trimcp._record import Record
from trimcp.transports.http_server import fasthead
from trimcp.transports.http_server.app import McpHttpApp
from trimcp.transports.http_server.asgi import (
    BODY,
    BODY_BUFFERED,
    BOUNDED_SEND,
    HEAD_MEMO,
    NORMALIZED_HEADERS,
    RESPOND,
)
from trimcp.transports.http_server.exchange import Exchange
from trimcp.transports.http_server.fasthead import NEED_MORE, Head
from trimcp.transports.http_server.guard import check_head
from trimcp.transports.http_server.heads import Date, status_line, tokens
from trimcp.transports.http_server.idle import IdleTimer
from trimcp.transports.http_server.reuseport import open_reuseport_listeners

logger = logging.getLogger("trimcp.http.lean")

_READ = 65536
#: Bound on draining a client's unread input before closing (seconds, bytes).
_LINGER = 1.0
_LINGER_BYTES = 1024 * 1024
_PEER_GONE = (trio.BrokenResourceError, trio.ClosedResourceError)
_VERSIONS = {b"1.1": "1.1", b"1.0": "1.0"}
# What this server promises the app (see trimcp.transports.http_server.asgi): shared,
# read-only dicts, one per case.
_STREAMED_BODY: dict[str, Any] = {BOUNDED_SEND: {}, NORMALIZED_HEADERS: {}}
_BUFFERED_BODY: dict[str, Any] = {BOUNDED_SEND: {}, BODY_BUFFERED: {}, NORMALIZED_HEADERS: {}}

#: The scope's ``asgi`` entry (shared, read-only) and the usual methods' names, made once.
_ASGI: dict[str, str] = {"version": "3.0", "spec_version": "2.3"}
_METHODS = {name.encode("ascii"): name for name in ("POST", "GET", "DELETE", "HEAD", "OPTIONS")}

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class _Limits(Record):
    """Every bound a connection applies (see :func:`serve_lean`)."""

    header_timeout: float
    max_header_bytes: int
    send_timeout: float
    read_timeout: float | None
    keep_alive_max_requests: int
    root_path: str


# --- server --------------------------------------------------------------------------------


class _ServerState:
    """What every connection needs to know about the server: is it stopping?"""

    def __init__(self, timer: IdleTimer | None = None) -> None:
        self.terminating = False
        #: Scopes of connections waiting for their next request, cancelled at shutdown.
        self.idle: set[trio.CancelScope] = set()
        #: Keeps the header timeout of every connection (when running; else each
        #: connection waits under a deadline scope of its own).
        self.timer = timer

    def terminate(self) -> None:
        self.terminating = True
        for scope in list(self.idle):
            scope.cancel()


class _Connection:
    """One client connection: requests one after the other (keep-alive)."""

    def __init__(
        self, stream: trio.abc.HalfCloseableStream, app: App, state: _ServerState, limits: _Limits
    ) -> None:
        self.stream = stream
        self.app = app
        self.state = state
        self.limits = limits
        #: h11, for a request the fast path declined (None: the fast path reads this cycle).
        self.conn: h11.Connection | None = None
        #: Bytes read and not yet parsed, while the fast path reads (``conn`` is None).
        self.buffer = bytearray()
        #: Body bytes of the fast path's current request not yet taken from the client.
        self.owed = 0
        self.http11 = True
        self.requests = 0
        #: Nothing is buffered for the next request: read before asking h11 for it.
        self._empty = True
        #: Bytes given to h11 in this request cycle (a head can be complete in one read:
        #: h11's own bound only applies to incomplete input).
        self._fed = 0
        self._eof = False
        #: The last read found nothing (:meth:`_request_now`): the next one waits first.
        self._blocked = False
        self._broken = False  # a write failed or timed out: the stream is unusable
        self.client, self.server = _addresses(stream)
        #: The socket under a SocketStream is read and written with direct syscalls on
        #: POSIX, waiting through trio only when the kernel would block: trio's
        #: ``receive_some`` costs two checkpoints and a conflict check around each
        #: ``recv``. Their checkpoint policy is also this connection's fairness: see
        #: trimcp/_fastio.py.
        self._in = FastReceive(stream)
        self._out = FastSend(stream)
        #: The connection's own scope: the idle timer cancels it while it waits too long.
        self.scope = trio.CancelScope()
        #: Validated response header lines of this connection's own (see heads.header).
        self.lines: dict[tuple[bytes, bytes], tuple[bytes, int, bool]] = {}
        #: Request lines of this connection's own, read by the fast path (see its parse).
        self.fields: dict[bytes, Any] = {}
        #: Whole request heads of this connection's, read by the fast path (ditto).
        self.heads = fasthead.KeptHeads()
        #: Response heads of this connection's own, up to their header lines, by status
        #: and headers (see Exchange.respond).
        self.prefixes: dict[tuple[int, tuple[tuple[bytes, bytes], ...]], bytes] = {}

    async def read(self) -> bool:
        """Feed h11 one read from the socket; False at end of input or on error."""
        if self._eof:
            return False
        timeout = self.limits.read_timeout
        blocked, self._blocked = self._blocked, False
        try:
            if timeout is None:
                data = await self._in.receive_some(_READ, blocked=blocked)
            else:
                data = b""
                with trio.move_on_after(timeout):
                    data = await self._in.receive_some(_READ, blocked=blocked)
        except _PEER_GONE:
            data = b""
        conn = self.conn
        if not data:
            self._eof = True
            if conn is not None:
                conn.receive_data(b"")
            return False
        self._fed += len(data)
        if conn is None:
            self.buffer += data
        else:
            conn.receive_data(bytes(data))  # no copy for bytes
        return True

    def buffered(self) -> int:
        """How many bytes are read and not yet parsed."""
        conn = self.conn
        return len(self.buffer) if conn is None else len(conn.trailing_data[0])

    async def write(self, data: bytes) -> bool:
        """Send ``data``; False when the client is gone or did not take it in time.

        A write cut short leaves the stream unusable: it is closed, which also wakes a
        task reading from it (the app then sees ``http.disconnect``).
        """
        if self._broken:
            return False
        try:
            await self._out.send_all(data, timeout=self.limits.send_timeout)
            return True
        except (*_PEER_GONE, trio.TooSlowError):
            pass
        self._broken = self._eof = True
        await self.stream.aclose()
        return False

    async def wait_for_eof(self) -> None:
        """Return once the client closed the connection (or sent more than we buffer)."""
        while await self.read():
            if self.buffered() > self.limits.max_header_bytes:
                return  # a client pipelining more than a request head: stop serving it

    async def run(self) -> None:
        try:
            with self.scope:
                while not self.state.terminating:
                    # (no checkpoint of its own: reading and writing through trimcp._fastio
                    # takes a schedule point at least every few calls, and every request
                    # served writes)
                    request: Head | h11.Request | None = self._request_now()
                    if request is None:
                        request = await self._next_request()
                        if request is None:
                            return
                    keep = await self._serve(request)
                    if not keep or self.state.terminating:
                        return
                    if self.conn is None:  # (_next_cycle's fast path, inlined)
                        self._fed = len(self.buffer)
                        self._empty = not self.buffer and not self._eof
                    else:
                        self._next_cycle()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(_LINGER):
                await self._close()

    def _next_cycle(self) -> None:
        # Back to the fast path. An h11 connection (a declined request) never reaches DONE,
        # since responses are not written through it: it hands over what it buffered
        # (pipelining), and the next declined request gets a fresh one.
        conn = self.conn
        if conn is not None:
            data, closed = conn.trailing_data
            self.buffer = bytearray(data)
            if closed:
                self._eof = True
            self.conn = None
        self._fed = len(self.buffer)
        self._empty = not self.buffer and not self._eof

    def _h11(self) -> h11.Connection:
        """Hand this request cycle to h11, with everything buffered so far."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes)
        if self.buffer:
            conn.receive_data(bytes(self.buffer))
            self.buffer = bytearray()
        if self._eof:
            conn.receive_data(b"")
        self.conn = conn
        return conn

    async def _close(self) -> None:
        # Closing with unread input makes the kernel send RST, which can destroy the
        # answer (e.g. a 413) before the client reads it: shut our side down first and
        # drain what the client still sends, bounded in bytes and time.
        conn = self.conn
        pending = (
            bool(self.buffer) or self.owed > 0
            if conn is None
            else conn.their_state not in (h11.DONE, h11.CLOSED, h11.IDLE)
        )
        if not self._eof and pending:
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

    def _request_now(self) -> Head | None:
        """The next request's head when the fast path reads it whole without waiting (a
        busy server nearly always finds it there); else None, and :meth:`_next_request`
        reads it (what was read here stays buffered). No header timeout or shutdown
        scope is needed for a head that is already here: nothing waits."""
        if self.conn is not None or self._eof:
            return None
        buffer = self.buffer
        if self._empty:
            try:
                data = self._in.receive_nowait(_READ)
            except _PEER_GONE:
                data = b""
            if data is None:
                self._blocked = True  # (read() then waits for the kernel first)
                return None  # nothing yet: wait for it under the header timeout
            if not data:
                self._eof = True  # (read() then says so)
                return None
            self._fed += len(data)
            buffer += data
            self._empty = False
        head = fasthead.parse(buffer, self.limits.max_header_bytes, self.fields, self.heads)
        return head if type(head) is Head else None

    async def _next_request(self) -> Head | h11.Request | None:
        """The next request head, within the header timeout; None: the connection ends.

        The idle timer (when the server runs one) cancels the connection's scope at the
        deadline; otherwise the wait has a deadline scope of its own. Either scope is
        cancelled at shutdown while the connection waits.
        """
        state = self.state
        timer = state.timer
        if timer is not None and timer.running:
            scope = self.scope
            wait = timer.start(scope)
            state.idle.add(scope)
            try:
                if (
                    self._blocked
                    and self.limits.read_timeout is None
                    and await self._in.wait_readable()
                ):
                    # The usual wait (nothing buffered, and the kernel had nothing): for
                    # the socket here, then the head is read and parsed without waiting
                    # (no coroutines of read() and _read_request() per wait). Anything
                    # else (a head in parts, the end of input) goes on below as before.
                    self._blocked = False
                    head = self._request_now()
                    if head is not None:
                        return head
                return await self._read_request()
            finally:
                wait.stop()
                state.idle.discard(scope)
        deadline = trio.current_time() + self.limits.header_timeout
        with trio.CancelScope(deadline=deadline) as own:
            state.idle.add(own)
            try:
                return await self._read_request()
            finally:
                state.idle.discard(own)
        return None  # header timeout or shutdown

    async def _read_request(self) -> Head | h11.Request | None:
        limits = self.limits
        if self._empty and not await self.read():
            return None
        while self.conn is None:
            head = fasthead.parse(self.buffer, limits.max_header_bytes, self.fields, self.heads)
            if type(head) is Head:
                return head
            if head is not NEED_MORE:
                break  # declined: h11 reads this one
            if not await self.read():
                return None  # closed (or silent past read_timeout): no request
        conn = self.conn or self._h11()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint
                if status == 431 and b"\n" not in conn.trailing_data[0]:
                    status = 414  # the request line alone is over the limit
                await self._refuse(status)
                return None
            if type(event) is h11.Request:
                return event
            if event is h11.NEED_DATA:
                if not await self.read():
                    return None
                continue
            return None  # ConnectionClosed

    async def _refuse(self, status: int) -> None:
        """Answer ``status`` with an empty body; the connection then closes."""
        head = status_line(status) + b"content-length: 0\r\nconnection: close\r\n"
        await self.write(head + Date.get() + b"\r\n")

    async def _serve(self, request: Head | h11.Request) -> bool:
        """Run the app for one request. True when the connection can take another."""
        limit = self.limits.max_header_bytes
        headers: list[tuple[bytes, bytes]]
        fast_body: bytes | None
        body_length: int | None
        memo: dict[str, Any] | None = None
        if type(request) is Head:
            # The fast path read the framing headers already (no Transfer-Encoding).
            http11 = request.http11
            version = "1.1" if http11 else "1.0"
            headers = request.headers
            fast_body = request.body
            self.owed = request.remaining
            expect_continue = False
            keep_alive = http11 and not request.close
            body_length = request.length
            memo = request.memo
            # check_head counts a head as written with ": " after each name: at most one
            # byte per header line more than the wire (a head the fast path took is no
            # larger than the limit there, and has no Transfer-Encoding). Only a head
            # that close to the limit can be refused.
            refusal = (
                check_head(request.method, request.target, headers, limit, head_bytes=request.size)
                if request.size + len(headers) > limit
                else None
            )
        else:
            assert isinstance(request, h11.Request)
            assert self.conn is not None
            found = _VERSIONS.get(request.http_version)
            if found is None:
                await self._refuse(505)
                return False
            version = found
            http11 = version == "1.1"
            headers = [(raw.lower(), value) for raw, value in request.headers.raw_items()]
            # The head's size on the wire, counted only when it may be over the limit.
            fed = self._fed
            head_bytes = fed - len(self.conn.trailing_data[0]) if fed > limit else 0
            fast_body = None
            expect_continue = self.conn.they_are_waiting_for_100_continue
            keep_alive = http11
            body_length = 0
            for name, value in headers:
                if name == b"connection":
                    if b"close" in tokens(value):
                        keep_alive = False
                elif name == b"content-length":
                    body_length = int(value)  # checked by h11: digits
                elif name == b"transfer-encoding":
                    body_length = None
            refusal = check_head(
                request.method, request.target, headers, limit, head_bytes=head_bytes
            )
        self.http11 = http11
        if refusal is not None:  # too large (431/414), or CL with TE: smuggling (400)
            await self._refuse(refusal[0])
            return False
        self.requests += 1
        if self.requests >= self.limits.keep_alive_max_requests:
            keep_alive = False
        buffered = fast_body is not None and not self.owed
        target = request.target
        path, _, query = target.partition(b"?")
        text = path.decode("ascii")  # h11 accepts visible ASCII only
        method = request.method
        exchange = Exchange(self, method, keep_alive, expect_continue, fast_body)
        exchange.body_length = body_length
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": version,
            "method": _METHODS.get(method) or method.decode("ascii"),
            "scheme": "http",
            "path": unquote(text) if "%" in text else text,
            "raw_path": path,
            "query_string": query,
            "root_path": self.limits.root_path,
            "headers": headers,
            "client": self.client,
            "server": self.server,
            "extensions": _BUFFERED_BODY if buffered else _STREAMED_BODY,
            HEAD_MEMO: memo,
            BODY: fast_body if buffered else None,
            RESPOND: exchange.respond,
        }
        try:
            await self.app(scope, exchange.receive, exchange.send)
        except Exception:
            logger.exception("the app failed on %s %s", scope["method"], scope["path"])
        if exchange.error_status is not None:
            if not exchange.started:
                await self._refuse(exchange.error_status)
            return False
        if exchange.client_gone or self._broken:
            return False
        if not exchange.started:
            await self._refuse(500)
            return False
        if not exchange.complete:
            return False  # the app ended mid-response: the connection cannot be reused
        if self.conn is None and not self.owed:  # read whole by the fast path: nearly always
            return exchange.keep_alive
        return exchange.keep_alive and self._request_read()

    def _request_read(self) -> bool:
        """Whether the request is read to its end, reading only what is buffered."""
        conn = self.conn
        if conn is None:
            # The fast path: the rest of the body must already be buffered (dropped).
            owed = self.owed
            if owed > len(self.buffer):
                return False
            del self.buffer[:owed]
            self.owed = 0
            return True
        while conn.their_state is h11.SEND_BODY:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError:
                return False
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return False  # the app answered without reading a body still arriving
        return conn.their_state is h11.DONE


def _addresses(stream: trio.abc.HalfCloseableStream) -> tuple[Any, Any]:
    sock = getattr(stream, "socket", None)  # None: not a socket (tests use memory streams)
    if sock is None:
        return None, None
    try:
        return tuple(sock.getpeername()[:2]), tuple(sock.getsockname()[:2])
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
    send_timeout: float = 30.0,
    read_timeout: float | None = None,
    keep_alive_max_requests: int = 1000,
    backlog: int = 100,
    root_path: str = "",
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    reuse_port: bool = False,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` with the lean server; reports the bound port.

    ``reuse_port``: bind with ``SO_REUSEPORT``, so several processes serve one port.

    Limits, per connection: a request head must be complete within ``header_timeout``
    seconds of the connection opening or of the previous response ending (so it is also
    the keep-alive idle time) and fit ``max_header_bytes`` (431 past it); a write the
    client does not take within ``send_timeout`` closes the connection (the app sees
    ``http.disconnect``); ``read_timeout`` (None: no bound) treats a read that waits
    longer as the client closing, as hypercorn does; after ``keep_alive_max_requests``
    requests the response says ``Connection: close``. ``backlog`` is the listen queue;
    ``root_path`` goes into each ASGI scope. Body size and time are the app's limits.

    When ``shutdown_trigger`` returns: every session closes (bounded, which ends their
    streams), the listener closes, idle connections close, and busy ones get
    ``graceful_timeout`` to finish (their responses say ``Connection: close``).
    Cancellation: stops at once; sessions still get their bounded close.
    """
    limits = _Limits(
        header_timeout=header_timeout,
        max_header_bytes=max_header_bytes,
        send_timeout=send_timeout,
        read_timeout=read_timeout,
        keep_alive_max_requests=keep_alive_max_requests,
        root_path=root_path,
    )
    timer = IdleTimer(header_timeout)
    state = _ServerState(timer)
    if reuse_port:
        listeners = await open_reuseport_listeners(host, port, backlog=backlog)
    else:
        listeners = await trio.open_tcp_listeners(port, host=host, backlog=backlog)
    bound = listeners[0].socket.getsockname()[1]
    serve_request = app.http  # (every scope here is "http": no dispatch on the type)

    async def handle(stream: trio.SocketStream) -> None:
        await _Connection(stream, serve_request, state, limits).run()

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(app.run)
            await nursery.start(timer.run)
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
            timer.close()
    finally:
        # serve_listeners closes them, but not when the app failed to start (a lifespan
        # that raised): the port must not stay bound.
        for listener in listeners:
            listener.socket.close()
