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
import os
import re
import time
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

import attrs
import h11
import trio

from trimcp.transports.http_server import fasthead
from trimcp.transports.http_server.app import McpHttpApp
from trimcp.transports.http_server.asgi import BODY_BUFFERED, BOUNDED_SEND, Message
from trimcp.transports.http_server.fasthead import NEED_MORE, Head
from trimcp.transports.http_server.guard import check_head
from trimcp.transports.http_server.idle import IdleTimer
from trimcp.transports.http_server.reuseport import open_reuseport_listeners

logger = logging.getLogger("trimcp.http.lean")

_READ = 65536
#: Bound on draining a client's unread input before closing (seconds, bytes).
_LINGER = 1.0
_LINGER_BYTES = 1024 * 1024
_PEER_GONE = (trio.BrokenResourceError, trio.ClosedResourceError)
_VERSIONS = {b"1.1": "1.1", b"1.0": "1.0"}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# What this server promises the app (see trimcp.transports.http_server.asgi): shared,
# read-only dicts, one per case.
_STREAMED_BODY: dict[str, Any] = {BOUNDED_SEND: {}}
_BUFFERED_BODY: dict[str, Any] = {BOUNDED_SEND: {}, BODY_BUFFERED: {}}
_LAST_CHUNK = b"0\r\n\r\n"

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


@attrs.frozen(kw_only=True)
class _Limits:
    """Every bound a connection applies (see :func:`serve_lean`)."""

    header_timeout: float
    max_header_bytes: int
    send_timeout: float
    read_timeout: float | None
    keep_alive_max_requests: int
    root_path: str


# --- response heads ------------------------------------------------------------------------

_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_FIELD_VALUE = re.compile(rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")
# What a response header is to the framing: passed through, or looked at.
_PLAIN, _LENGTH, _CONNECTION, _FRAMING = range(4)
#: Validated header lines by (name, value): the app repeats the same few headers.
_LINES: dict[tuple[bytes, bytes], tuple[bytes, int, bool]] = {}
_MAX_LINES = 1024
_STATUS_LINES: dict[int, bytes] = {}


def _header(name: bytes, value: bytes) -> tuple[bytes, int, bool]:
    """``(line, kind, close)`` for one response header; ValueError if it is malformed."""
    pair = (name, value)
    entry = _LINES.get(pair)
    if entry is not None:
        return entry
    if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
        raise ValueError(f"illegal response header {name!r}: {value!r}")
    lower = name.lower()
    close = False
    if lower == b"content-length":
        return value, _LENGTH, False  # varies per response: not cached
    if lower == b"connection":
        kind = _CONNECTION
        close = b"close" in _tokens(value)
    elif lower in (b"transfer-encoding", b"keep-alive", b"upgrade"):
        kind = _FRAMING  # hop-by-hop framing is this server's business: dropped
    else:
        kind = _PLAIN
    entry = (name + b": " + value + b"\r\n", kind, close)
    if len(_LINES) >= _MAX_LINES:
        _LINES.clear()
    _LINES[pair] = entry
    return entry


def _tokens(value: bytes) -> list[bytes]:
    return [token.strip() for token in value.lower().split(b",")]


def _status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    if line is None:
        if type(status) is not int or not 200 <= status <= 999:
            raise ValueError(f"the app's response status must be an int in 200-999: {status!r}")
        try:
            reason = HTTPStatus(status).phrase.encode("ascii")
        except ValueError:
            reason = b""
        line = _STATUS_LINES[status] = b"HTTP/1.1 %d %s\r\n" % (status, reason)
    return line


class _Date:
    """The ``Date`` header line, formatted at most once a second."""

    second = -1
    line = b""

    @classmethod
    def get(cls) -> bytes:
        now = int(time.time())
        if now != cls.second:
            cls.line = b"date: " + formatdate(now, usegmt=True).encode("ascii") + b"\r\n"
            cls.second = now
        return cls.line


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


class _Exchange:
    """One request on a connection: the ASGI ``receive`` and ``send`` the app gets."""

    __slots__ = (
        "_chunked",
        "_connection",
        "_fast_body",
        "_head_write",
        "_no_body",
        "_remaining",
        "_start",
        "body_done",
        "body_length",
        "client_gone",
        "complete",
        "error_status",
        "expect_continue",
        "keep_alive",
        "method",
        "started",
    )

    def __init__(
        self,
        connection: _Connection,
        method: bytes,
        keep_alive: bool,
        expect_continue: bool,
        fast_body: bytes | None = None,
    ) -> None:
        self._connection = connection
        self.method = method
        self.keep_alive = keep_alive
        self.expect_continue = expect_continue
        self.body_done = False
        #: The request body's declared length (0 without one; None when chunked).
        self.body_length: int | None = 0
        self.client_gone = False
        #: h11's status hint when the request body was malformed.
        self.error_status: int | None = None
        self.started = False  # bytes of the response were written
        self.complete = False  # the whole response was written
        self._start: Message | None = None
        self._chunked = False
        self._no_body = False
        #: Body bytes still owed under the app's own Content-Length (streamed bodies).
        self._remaining: int | None = None
        #: Set while the head is written ahead of the body (see :meth:`receive`).
        self._head_write: trio.Event | None = None
        #: The whole body of a request read by the fast path (None: h11 reads it).
        self._fast_body = fast_body

    # --- receive ---------------------------------------------------------------------------

    async def receive(self) -> Message:
        if not self.body_done:
            return await self._receive_body()
        if self.complete:
            # The response is over: nothing more to wait for, and no client is leaving
            # (the connection stays reusable).
            return {"type": "http.disconnect"}
        if not self.client_gone:
            if self._start is not None and not self.started:
                # The app waits for the client to leave with its response begun: a
                # long-lived stream (a GET with nothing to send yet). The client gets the
                # head now, not with the first event, which may come much later.
                await self._send_head_now()
            if not self.client_gone and not self.complete:
                await self._connection.wait_for_eof()
                self.client_gone = True
        return {"type": "http.disconnect"}

    async def _send_head_now(self) -> None:
        assert self._start is not None
        out = self._head(self._start, b"", True)
        self._head_write = written = trio.Event()
        try:
            if not await self._connection.write(out):
                self.client_gone = True
        finally:
            self._head_write = None
            written.set()

    async def _receive_body(self) -> Message:
        connection = self._connection
        conn = connection.conn
        if conn is None:
            return await self._receive_fast_body()
        assert conn is not None
        chunks: list[bytes] = []
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                # A malformed body: the app sees a disconnect; the client gets h11's hint.
                self.error_status = exc.error_status_hint
                self.client_gone = self.body_done = True
                return {"type": "http.disconnect"}
            if type(event) is h11.Data:
                chunks.append(bytes(event.data))
                continue
            if type(event) is h11.EndOfMessage:
                self.body_done = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            if event is h11.NEED_DATA:
                if chunks:
                    return {"type": "http.request", "body": b"".join(chunks), "more_body": True}
                if self.expect_continue:
                    # The client waits for our go-ahead before sending the body.
                    self.expect_continue = False
                    if not self.started and not await connection.write(_CONTINUE):
                        self.client_gone = self.body_done = True
                        return {"type": "http.disconnect"}
                if not await connection.read():
                    self.client_gone = self.body_done = True
                    return {"type": "http.disconnect"}
                continue
            # ConnectionClosed or anything unexpected: the request will not complete.
            self.client_gone = self.body_done = True
            return {"type": "http.disconnect"}

    async def _receive_fast_body(self) -> Message:
        """The body of a request read by the fast path, in the chunks it arrives in.

        First what came with the head, then the rest (``connection.owed`` bytes).
        """
        connection = self._connection
        body = self._fast_body
        if body is not None:
            self._fast_body = None
            if not connection.owed:
                self.body_done = True
                return {"type": "http.request", "body": body, "more_body": False}
            if body:
                return {"type": "http.request", "body": body, "more_body": True}
        buffer = connection.buffer
        while not buffer:
            if not await connection.read():
                self.client_gone = self.body_done = True
                return {"type": "http.disconnect"}
        take = min(len(buffer), connection.owed)
        chunk = bytes(buffer[:take])
        del buffer[:take]
        connection.owed -= take
        self.body_done = done = not connection.owed
        return {"type": "http.request", "body": chunk, "more_body": not done}

    # --- send ------------------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self._start is not None:
                raise RuntimeError("http.response.start sent twice")
            self._start = message
            return
        if kind != "http.response.body":
            raise ValueError(f"unexpected ASGI message {kind!r} on an HTTP connection")
        if self._start is None:
            raise RuntimeError("http.response.body before http.response.start")
        if self._head_write is not None:
            await self._head_write.wait()  # one write at a time on the stream
        if self.client_gone or self.complete:
            return
        body: bytes = message.get("body", b"")
        more = bool(message.get("more_body", False))
        out = self._head(self._start, body, more) if not self.started else b""
        if body and not self._no_body:
            if self._chunked:
                out += b"%x\r\n" % len(body) + body + b"\r\n"
            else:
                if self._remaining is not None:
                    self._remaining -= len(body)
                    if self._remaining < 0:
                        raise ValueError("response body longer than its Content-Length")
                out += body
        if not more:
            if self._chunked:
                out += _LAST_CHUNK
            elif self._remaining:
                self.keep_alive = False  # short of its Content-Length: cannot reuse
            self.complete = True
        if out and not await self._connection.write(out):
            self.client_gone = True

    def _head(self, start: Message, body: bytes, more: bool) -> bytes:
        """The status line and headers; decides framing and keep-alive. Sets ``started``."""
        status = start["status"]
        lines = [_status_line(status)]
        length: bytes | None = None
        keep_alive = self.keep_alive
        closing = False  # the app's headers already say Connection: close
        for name, value in start.get("headers", ()):
            line, kind, close = _header(name, value)
            if kind == _PLAIN:
                lines.append(line)
            elif kind == _LENGTH:
                if length is not None or not line.isdigit() or len(line) > 18:
                    raise ValueError(f"bad response Content-Length {line!r}")
                length = line
            elif kind == _CONNECTION:
                lines.append(line)
                if close:
                    closing = True
                    keep_alive = False
        connection = self._connection
        if connection.state.terminating:
            keep_alive = False
        elif keep_alive and not self.body_done:
            # Answered before the app read the body: the connection can serve another
            # request only if the rest of this one is already here; else say it closes.
            conn = connection.conn
            if conn is None:
                if connection.owed > len(connection.buffer):
                    keep_alive = False
            elif conn.their_state is h11.SEND_BODY:
                owed = self.body_length
                if owed is None or len(conn.trailing_data[0]) < owed:
                    keep_alive = False
        self._no_body = no_body = self.method == b"HEAD" or status in (204, 304)
        if length is not None:
            if not no_body:
                declared = int(length)
                if not more and declared != len(body):
                    raise ValueError(
                        f"response Content-Length {declared} but a body of {len(body)} bytes"
                    )
                self._remaining = declared
            lines.append(b"content-length: " + length + b"\r\n")
        elif not more:
            if status not in (204, 304):
                lines.append(b"content-length: %d\r\n" % len(body))
        elif not no_body:
            if connection.http11:
                self._chunked = True
                lines.append(b"transfer-encoding: chunked\r\n")
            else:
                keep_alive = False  # HTTP/1.0: the body ends when the connection closes
        if not keep_alive and not closing:
            lines.append(b"connection: close\r\n")
        lines.append(_Date.get())
        lines.append(b"\r\n")
        self.keep_alive = keep_alive
        self.started = True
        return b"".join(lines)


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
        self._broken = False  # a write failed or timed out: the stream is unusable
        self.client, self.server = _addresses(stream)
        #: The socket under a SocketStream: read and written with direct syscalls, waiting
        #: through trio only when the kernel would block (see :meth:`_receive`).
        self._sock = stream.socket if type(stream) is trio.SocketStream else None
        #: Whether this request cycle waited for the socket (a schedule point).
        self._waited = True
        #: The connection's own scope: the idle timer cancels it while it waits too long.
        self.scope = trio.CancelScope()

    async def read(self) -> bool:
        """Feed h11 one read from the socket; False at end of input or on error."""
        if self._eof:
            return False
        timeout = self.limits.read_timeout
        try:
            if timeout is None:
                data = await self._receive()
            else:
                data = b""
                with trio.move_on_after(timeout):
                    data = await self._receive()
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

    async def _receive(self) -> bytes | bytearray:
        """One read from the client (b"" at its end).

        On a socket, trio's ``receive_some`` costs two checkpoints and a conflict check
        around each ``recv``; here the syscall is made directly and trio is only asked to
        wait when there is nothing to read. A closed socket's ``fileno()`` is -1, so a read
        after a close fails (EBADF) instead of reading another file that reused the number.
        """
        sock = self._sock
        if sock is None:
            return await self.stream.receive_some(_READ)
        while True:
            try:
                return os.read(sock.fileno(), _READ)
            except BlockingIOError:
                self._waited = True
                await trio.lowlevel.wait_readable(sock)
            except OSError:  # reset by the peer, or closed by us
                return b""

    async def write(self, data: bytes) -> bool:
        """Send ``data``; False when the client is gone or did not take it in time.

        A write cut short leaves the stream unusable: it is closed, which also wakes a
        task reading from it (the app then sees ``http.disconnect``).
        """
        if self._broken:
            return False
        sock = self._sock
        if sock is not None:
            # The common case: the kernel takes the whole response at once, with no
            # waiting, so no deadline is needed.
            try:
                sent = os.write(sock.fileno(), data)
            except BlockingIOError:
                sent = 0
            except OSError:
                sent = -1
            if sent == len(data):
                return True
            if sent > 0:
                data = data[sent:]
            elif sent < 0:
                self._broken = self._eof = True
                await self.stream.aclose()
                return False
        with trio.CancelScope(deadline=trio.current_time() + self.limits.send_timeout):
            try:
                await self.stream.send_all(data)
                return True
            except _PEER_GONE:
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
                    if not self._waited:
                        # Requests kept arriving with no wait for the socket: let the
                        # other connections run (a schedule point per request at least).
                        await trio.lowlevel.checkpoint()
                    self._waited = False
                    request = await self._next_request()
                    if request is None:
                        return
                    keep = await self._serve(request)
                    if not keep or self.state.terminating:
                        return
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
            head = fasthead.parse(self.buffer, limits.max_header_bytes)
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
        head = _status_line(status) + b"content-length: 0\r\nconnection: close\r\n"
        await self.write(head + _Date.get() + b"\r\n")

    async def _serve(self, request: Head | h11.Request) -> bool:
        """Run the app for one request. True when the connection can take another."""
        limit = self.limits.max_header_bytes
        headers: list[tuple[bytes, bytes]]
        fast_body: bytes | None
        if type(request) is Head:
            http11 = request.http11
            version = "1.1" if http11 else "1.0"
            headers = request.headers
            head_bytes = request.size
            fast_body = request.body
            self.owed = request.remaining
            expect_continue = False
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
        self.http11 = http11
        keep_alive = http11
        body_length: int | None = 0
        for name, value in headers:
            if name == b"connection":
                if b"close" in _tokens(value):
                    keep_alive = False
            elif name == b"content-length":
                body_length = int(value)  # checked by h11 or the fast path: digits
            elif name == b"transfer-encoding":
                body_length = None
        refusal = check_head(request.method, request.target, headers, limit, head_bytes=head_bytes)
        if refusal is not None:  # too large (431/414), or CL with TE: smuggling (400)
            await self._refuse(refusal[0])
            return False
        self.requests += 1
        if self.requests >= self.limits.keep_alive_max_requests:
            keep_alive = False
        target = request.target
        path, _, query = target.partition(b"?")
        text = path.decode("ascii")  # h11 accepts visible ASCII only
        method = request.method
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": version,
            "method": method.decode("ascii"),
            "scheme": "http",
            "path": unquote(text) if "%" in text else text,
            "raw_path": path,
            "query_string": query,
            "root_path": self.limits.root_path,
            "headers": headers,
            "client": self.client,
            "server": self.server,
            "extensions": _BUFFERED_BODY
            if fast_body is not None and not self.owed
            else _STREAMED_BODY,
        }
        exchange = _Exchange(self, method, keep_alive, expect_continue, fast_body)
        exchange.body_length = body_length
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

    async def handle(stream: trio.SocketStream) -> None:
        await _Connection(stream, app, state, limits).run()

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
