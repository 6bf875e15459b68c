"""One request on a lean-engine connection: the ASGI ``receive`` and ``send`` the app gets.

Framing and keep-alive are decided here when the response head is written (see the
docstring of :mod:`trimcp.transports.http_server.lean`); the body is read through the
connection (the fast path's buffer, or h11 for a declined request).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import h11
import trio

from trimcp.transports.http_server.asgi import Message
from trimcp.transports.http_server.heads import (
    CONNECTION,
    LENGTH,
    LENGTHS,
    LINES,
    PLAIN,
    Date,
    header,
    status_line,
)

if TYPE_CHECKING:
    from trimcp.transports.http_server.lean import _Connection

__all__ = ["Exchange"]

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
#: What ``_start`` holds once :meth:`Exchange.respond` answered (no message was made).
_RESPONDED: Message = {"type": "http.response.start"}
#: How many kept heads a connection holds (see :meth:`Exchange.respond`).
MAX_PREFIXES = 8
LAST_CHUNK = b"0\r\n\r\n"


class Exchange:
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
            body = self._fast_body
            if body is not None and not self._connection.owed:
                # The whole body came with the head (nearly every request): at once.
                self._fast_body = None
                self.body_done = True
                return {"type": "http.request", "body": body, "more_body": False}
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
                    if not self.started and not await connection.write(CONTINUE):
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
                out += LAST_CHUNK
            elif self._remaining:
                self.keep_alive = False  # short of its Content-Length: cannot reuse
            self.complete = True
        if out and not await self._connection.write(out):
            self.client_gone = True

    async def respond(
        self, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...]
    ) -> None:
        """A complete answer in one step (:data:`~.asgi.RESPOND`): the bytes that
        ``http.response.start`` with ``headers`` and a ``Content-Length``, then the whole
        body, would write.

        The usual answer (keep-alive, a body, no framing header among ``headers``) takes
        the connection's kept head for ``(status, headers)``, which an app repeats on
        every answer to its client: no message, no look-up per header line. Anything
        else goes the way of the two messages."""
        if self._start is not None:
            raise RuntimeError("http.response.start sent twice")
        connection = self._connection
        if (
            self.keep_alive
            and status != 204
            and status != 304
            and self.method != b"HEAD"
            and not connection.state.terminating
            and connection.conn is None
            and connection.owed <= len(connection.buffer)
        ):
            # (what _head decides for this case: Content-Length, the connection kept)
            key = (status, headers)
            prefixes = connection.prefixes
            prefix = prefixes.get(key)
            if prefix is None:
                prefix = self._prefix(status, headers)
                if prefix is not None:
                    if len(prefixes) >= MAX_PREFIXES:
                        prefixes.clear()
                    prefixes[key] = prefix
            if prefix is not None:
                self._start = _RESPONDED
                self.started = self.complete = True
                if self.client_gone:
                    return
                out = b"%scontent-length: %d\r\n%s\r\n" % (prefix, len(body), Date.get())
                if not await connection.write(out + body):
                    self.client_gone = True
                return
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-length", b"%d" % len(body)), *headers],
            }
        )
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    def _prefix(self, status: int, headers: tuple[tuple[bytes, bytes], ...]) -> bytes | None:
        """The status line and the lines of ``headers`` (validated); None when one of
        them is about framing (Content-Length, Connection, ...): :meth:`_head` decides."""
        lines = [status_line(status)]
        own = self._connection.lines
        for name, value in headers:
            pair = (name, value)
            line, kind, _ = (
                LINES.get(pair) or LENGTHS.get(pair) or own.get(pair) or header(name, value, own)
            )
            if kind != PLAIN:
                return None
            lines.append(line)
        return b"".join(lines)

    def _head(self, start: Message, body: bytes, more: bool) -> bytes:
        """The status line and headers; decides framing and keep-alive. Sets ``started``."""
        status = start["status"]
        lines = [status_line(status)]
        length: bytes | None = None
        keep_alive = self.keep_alive
        closing = False  # the app's headers already say Connection: close
        connection = self._connection
        own = connection.lines
        for name, value in start.get("headers", ()):
            pair = (name, value)
            # (header's lookups, inline: known lines take no call)
            line, kind, close = (
                LINES.get(pair) or LENGTHS.get(pair) or own.get(pair) or header(name, value, own)
            )
            if kind == PLAIN:
                lines.append(line)
            elif kind == LENGTH:
                if length is not None or not line.isdigit() or len(line) > 18:
                    raise ValueError(f"bad response Content-Length {line!r}")
                length = line
            elif kind == CONNECTION:
                lines.append(line)
                if close:
                    closing = True
                    keep_alive = False
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
        lines.append(Date.get())
        lines.append(b"\r\n")
        self.keep_alive = keep_alive
        self.started = True
        return b"".join(lines)
