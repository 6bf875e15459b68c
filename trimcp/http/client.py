"""HTTP/1.1 client exchanges: h11 over Trio streams, with a small keep-alive pool.

h11 does the protocol; this module only moves its bytes and bounds every wait. One
:class:`HttpConnection` carries one exchange at a time. :class:`ConnectionPool` hands out
connections to one origin and takes them back for reuse only when the previous exchange
ended cleanly (both sides DONE); anything else — an abandoned body, a timeout, a
cancellation — closes the connection, so no half-read response can leak into the next one.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Final

import h11
import trio

from trimcp.http.errors import HttpClientError
from trimcp.http.url import Endpoint

logger = logging.getLogger("trimcp.http_client")

#: Bytes asked for per read.
READ_SIZE: Final = 65536
#: Default bound on the response head (status line and headers).
DEFAULT_MAX_HEADER_BYTES: Final = 64 * 1024
#: Idle connections older than this are closed rather than reused: common servers
#: (uvicorn, Node) drop keep-alive connections after 5 s of quiet.
MAX_IDLE_SECONDS: Final = 4.0

_STREAM_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError, h11.ProtocolError)


class BodyTooLarge(HttpClientError):
    """A response body was larger than the limit the caller gave."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body is larger than the {limit}-byte limit")
        self.limit = limit


class HttpTimeout(HttpClientError):
    """The server sent nothing within a time limit (the connection is then closed)."""


class Response:
    """The head of a response and a way to read its body, chunk by chunk.

    ``headers`` maps lower-case names to values (latin-1; repeated headers joined with
    ``", "``). The body must be read from the task that holds the exchange.
    """

    def __init__(self, connection: HttpConnection, event: h11.Response, url: str) -> None:
        self._connection = connection
        self.url = url
        self.status: int = event.status_code
        self.reason = event.reason.decode("latin-1", "replace")
        headers: dict[str, str] = {}
        for raw_name, raw_value in event.headers:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.headers = headers
        self.complete = False

    @property
    def content_type(self) -> str:
        """The media type, lower case, without parameters (``""`` when absent)."""
        return self.headers.get("content-type", "").partition(";")[0].strip().lower()

    async def read_chunk(self, timeout: float) -> bytes:
        """The next piece of the body; ``b""`` once it is complete.

        Raises :class:`HttpClientError` when nothing arrives within ``timeout`` seconds or
        the connection breaks. Cancellation: the connection is then closed, not reused.
        """
        if self.complete:
            return b""
        try:
            with trio.fail_after(timeout):
                event = await self._connection.next_event()
        except trio.TooSlowError:
            raise HttpTimeout(
                f"no data from {self.url} for {timeout:g} s", {"timeout": timeout}
            ) from None
        except _STREAM_ERRORS as exc:
            raise HttpClientError(f"reading from {self.url} failed: {_describe(exc)}") from None
        if type(event) is h11.Data:
            return bytes(event.data)
        if type(event) is h11.EndOfMessage:
            self.complete = True
            return b""
        raise HttpClientError(f"unexpected HTTP event from {self.url}: {type(event).__name__}")

    async def read_all(self, limit: int, timeout: float) -> bytes:
        """The whole body, refused past ``limit`` bytes (checked before reading when the
        server declares a ``Content-Length``). ``timeout`` bounds each read."""
        declared = self.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(limit)
        body = bytearray()
        while chunk := await self.read_chunk(timeout):
            body += chunk
            if len(body) > limit:
                raise BodyTooLarge(limit)
        return bytes(body)

    async def read_excerpt(self, limit: int, timeout: float) -> bytes:
        """Up to ``limit`` bytes of the body, read within ``timeout`` seconds in all (the
        rest is left unread, so the connection is not reused); for error messages and
        bodies to discard. Never raises."""
        body = bytearray()
        with trio.move_on_after(timeout):
            try:
                while len(body) < limit and (chunk := await self.read_chunk(timeout)):
                    body += chunk
            except HttpClientError:
                pass
        return bytes(body[:limit])


class HttpConnection:
    """One HTTP/1.1 connection driven by h11. Not safe for concurrent use."""

    def __init__(self, stream: trio.abc.Stream, *, max_header_bytes: int) -> None:
        self._stream = stream
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_header_bytes)
        #: True once the connection has served an exchange and went back to the pool.
        self.reused = False
        #: Response bytes received during the current exchange.
        self.received = 0
        #: When the connection went back to the pool (Trio clock).
        self.idle_since = 0.0
        self.closed = False
        #: True once we stopped sending (:meth:`stop_sending`): never reused.
        self.half_closed = False

    async def send_request(
        self, method: str, endpoint: Endpoint, headers: list[tuple[str, str]], body: bytes
    ) -> None:
        """Write a whole request. Raises ``h11.LocalProtocolError`` for bad headers."""
        conn = self._h11
        all_headers = [("Host", endpoint.host_header), *headers]
        if body or method in ("POST", "PUT"):
            all_headers.append(("Content-Length", str(len(body))))
        data = conn.send(h11.Request(method=method, target=endpoint.target, headers=all_headers))
        assert data is not None
        if body:
            more = conn.send(h11.Data(data=body))
            assert more is not None
            data += more
        end = conn.send(h11.EndOfMessage())
        assert end is not None
        await self._stream.send_all(data + end)

    async def next_event(self) -> h11.Event:
        """The next h11 event that is not a request for more data."""
        conn = self._h11
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await self._stream.receive_some(READ_SIZE)
                self.received += len(data)
                conn.receive_data(data if type(data) is bytes else bytes(data))
                continue
            assert isinstance(event, h11.Event)
            if type(event) is h11.ConnectionClosed:
                raise HttpClientError("the server closed the connection")
            return event

    async def receive_response(self, url: str) -> Response:
        """Wait for the response head (skipping 1xx)."""
        while True:
            event = await self.next_event()
            if type(event) is h11.Response:
                return Response(self, event, url)
            if type(event) is not h11.InformationalResponse:
                raise HttpClientError(f"unexpected HTTP event from {url}: {type(event).__name__}")

    async def stop_sending(self) -> bool:
        """Half-close: tell the server we send nothing more (it sees us leave) while we
        still read what it sends. False when the stream cannot (TLS) or is gone. The
        connection is not reused afterwards."""
        stream = self._stream
        if self.closed or not isinstance(stream, trio.abc.HalfCloseableStream):
            return False
        self.half_closed = True
        try:
            await stream.send_eof()
        except (*_STREAM_ERRORS, trio.BusyResourceError):
            return False
        return True

    def start_next_cycle(self) -> bool:
        """Make the connection ready for another exchange; False if it cannot be reused."""
        conn = self._h11
        if (
            self.closed
            or self.half_closed
            or conn.our_state is not h11.DONE
            or conn.their_state is not h11.DONE
        ):
            return False
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            return False
        self.received = 0
        return True

    async def aclose(self) -> None:
        """Close at once (no TLS close_notify wait). Idempotent; never raises."""
        if not self.closed:
            self.closed = True
            await trio.aclose_forcefully(self._stream)


async def open_connection(
    endpoint: Endpoint, *, ssl_context: ssl.SSLContext | None, max_header_bytes: int
) -> HttpConnection:
    """Open a TCP (and for https, TLS) connection to the endpoint's origin.

    Raises :class:`HttpClientError` on any failure (DNS, refused, certificate).
    Cancellation: nothing is left open.
    """
    try:
        stream: trio.abc.Stream = await trio.open_tcp_stream(endpoint.host, endpoint.port)
    except OSError as exc:
        raise HttpClientError(f"cannot connect to {endpoint.url}: {exc}") from None
    if endpoint.scheme == "https":
        context = ssl_context if ssl_context is not None else _default_ssl_context()
        tls = trio.SSLStream(stream, context, server_hostname=endpoint.host, https_compatible=True)
        try:
            await tls.do_handshake()
        except BaseException as exc:
            await trio.aclose_forcefully(tls)
            if isinstance(exc, (trio.BrokenResourceError, OSError)):
                # trio wraps the ssl error (the useful part) as the cause.
                reason = _describe(exc.__cause__ or exc)
                raise HttpClientError(
                    f"TLS handshake with {endpoint.url} failed: {reason}"
                ) from None
            raise
        stream = tls
    return HttpConnection(stream, max_header_bytes=max_header_bytes)


_ssl_context: ssl.SSLContext | None = None


def _default_ssl_context() -> ssl.SSLContext:
    # Certificate and host name verification on (create_default_context's defaults).
    global _ssl_context
    if _ssl_context is None:
        context = ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        _ssl_context = context
    return _ssl_context


class ConnectionPool:
    """Connections to one origin: opened on demand, kept alive for reuse, bounded.

    The pool does not limit how many connections are in use (callers bound their own
    concurrency); it keeps at most ``max_idle`` idle ones. ``connect_timeout`` bounds
    opening a connection and writing a request.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None,
        connect_timeout: float,
        max_idle: int,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    ) -> None:
        self._ssl_context = ssl_context
        self._connect_timeout = connect_timeout
        self._max_idle = max_idle
        self._max_header_bytes = max_header_bytes
        self._idle: dict[tuple[str, str, int], list[HttpConnection]] = {}
        self._closed = False
        #: Connections opened so far (for tests and statistics).
        self.opened = 0

    @asynccontextmanager
    async def request(
        self,
        method: str,
        endpoint: Endpoint,
        headers: Mapping[str, str],
        body: bytes = b"",
        *,
        head_timeout: float,
        on_sent: Callable[[HttpConnection], None] | None = None,
    ) -> AsyncIterator[Response]:
        """Send one request and yield its response once the head has arrived.

        ``head_timeout`` bounds the wait for the response head after the request is
        written. A kept-alive connection the server had closed meanwhile is replaced once,
        transparently (only when no byte of a response arrived, so the server cannot have
        seen the request; never once we stopped sending). ``on_sent`` is given the
        connection once the request is written. Raises :class:`HttpClientError` on
        failure. On exit the connection goes back to the pool only if the body was read
        to its end.
        Cancellation: the connection is closed.
        """
        if self._closed:
            raise trio.ClosedResourceError("the HTTP client is closed")
        header_list = list(headers.items())
        for attempt in (1, 2):
            # A retry always gets a new connection: the other idle ones are as old.
            conn = await self._acquire(endpoint, fresh=attempt == 2)
            try:
                response = await self._exchange(
                    conn, method, endpoint, header_list, body, head_timeout, on_sent
                )
            except HttpClientError as exc:
                await conn.aclose()
                stale = (
                    conn.reused
                    and conn.received == 0
                    and not conn.half_closed
                    and not isinstance(exc, HttpTimeout)
                )
                if stale and attempt == 1:
                    # The server closed the idle connection; it never saw this request.
                    logger.debug(
                        "kept-alive connection to %s was stale; reconnecting", endpoint.url
                    )
                    continue
                raise
            except BaseException:
                await conn.aclose()
                raise
            break
        try:
            yield response
        except BaseException as exc:
            await conn.aclose()
            if isinstance(exc, _STREAM_ERRORS):
                raise HttpClientError(
                    f"connection to {endpoint.url} failed: {_describe(exc)}"
                ) from None
            raise
        await self._release(endpoint, conn, response.complete)

    async def _exchange(
        self,
        conn: HttpConnection,
        method: str,
        endpoint: Endpoint,
        headers: list[tuple[str, str]],
        body: bytes,
        head_timeout: float,
        on_sent: Callable[[HttpConnection], None] | None = None,
    ) -> Response:
        try:
            with trio.fail_after(self._connect_timeout):
                await conn.send_request(method, endpoint, headers, body)
        except trio.TooSlowError:
            raise HttpTimeout(
                f"sending to {endpoint.url} took longer than {self._connect_timeout:g} s"
            ) from None
        except _STREAM_ERRORS as exc:
            raise HttpClientError(f"request to {endpoint.url} failed: {_describe(exc)}") from None
        if on_sent is not None:
            on_sent(conn)
        try:
            with trio.fail_after(head_timeout):
                return await conn.receive_response(endpoint.url)
        except trio.TooSlowError:
            raise HttpTimeout(
                f"no response from {endpoint.url} within {head_timeout:g} s",
                {"timeout": head_timeout},
            ) from None
        except _STREAM_ERRORS as exc:
            raise HttpClientError(f"request to {endpoint.url} failed: {_describe(exc)}") from None

    async def _acquire(self, endpoint: Endpoint, *, fresh: bool = False) -> HttpConnection:
        idle = self._idle.get(endpoint.origin)
        oldest = trio.current_time() - MAX_IDLE_SECONDS
        while idle and not fresh:
            conn = idle.pop()  # the most recently used: the least likely to be stale
            if conn.closed:
                continue
            if conn.idle_since < oldest:
                await conn.aclose()
                continue
            conn.reused = True
            return conn
        try:
            with trio.fail_after(self._connect_timeout):
                conn = await open_connection(
                    endpoint,
                    ssl_context=self._ssl_context,
                    max_header_bytes=self._max_header_bytes,
                )
        except trio.TooSlowError:
            raise HttpTimeout(
                f"connecting to {endpoint.url} took longer than {self._connect_timeout:g} s"
            ) from None
        self.opened += 1
        return conn

    async def _release(self, endpoint: Endpoint, conn: HttpConnection, complete: bool) -> None:
        idle = self._idle.setdefault(endpoint.origin, [])
        if complete and not self._closed and len(idle) < self._max_idle and conn.start_next_cycle():
            conn.idle_since = trio.current_time()
            idle.append(conn)
        else:
            await conn.aclose()

    async def aclose(self) -> None:
        """Close every idle connection; connections in use close when released."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for conn in connections:
                await conn.aclose()


#: h11's words for a body the peer cut short (then, in brackets, how far it got).
_CUT_SHORT = "peer closed connection without sending complete message body"


def _describe(exc: BaseException) -> str:
    """``exc`` in words about the server: h11's "peer closed connection without sending
    complete message body (incomplete chunked read)" says the answer was cut short."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, h11.RemoteProtocolError) and text.startswith(_CUT_SHORT):
        how_far = text[len(_CUT_SHORT) :].strip()
        if how_far.startswith("(received"):  # "(received 100 bytes, expected 1000)"
            return (
                "the server closed the connection before its answer was complete "
                f"{how_far}; it may have crashed or been stopped"
            )
        return (
            "the server closed the connection before its answer was complete; it may have "
            "crashed or been stopped"
        )
    return text
