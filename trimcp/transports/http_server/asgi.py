"""Small ASGI helpers: request headers, bounded body reading, plain responses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple, TypeVar

import trio

from trimcp.errors import CONNECTION_CLOSED, INVALID_REQUEST, McpError
from trimcp.http.errors import HttpRejection as HttpRejection
from trimcp.protocol import jsonrpc
from trimcp.protocol.connection import DEFAULT_MAX_BATCH
from trimcp.protocol.jsonrpc import (
    InvalidMessage,
    classify,
    encode_error,
    parse_json,
)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]
#: The lean engine's one-step answer (see :data:`RESPOND`): status, body, other headers.
Respond = Callable[[int, bytes, tuple[tuple[bytes, bytes], ...]], Awaitable[None]]

#: Request headers the server reads. A request repeating a singleton among them is refused
#: (400), so two ``Host`` or ``Origin`` values can never be checked one way and used another.
WANTED = frozenset(
    {
        b"host",
        b"origin",
        b"content-type",
        b"content-length",
        b"accept",
        b"mcp-session-id",
        b"mcp-protocol-version",
        b"last-event-id",
        b"mcp-method",
        b"mcp-name",
        b"traceparent",
        b"tracestate",
        b"baggage",
    }
)
#: 2026-07-28 ``Mcp-Param-{Name}`` headers (read too; repeating one is refused the same way).
PARAM_PREFIX = b"mcp-param-"
#: Of :data:`WANTED`, the list-valued headers (RFC 9110, section 5.3): repeated lines are
#: one value, joined with commas, as HTTP allows.
LIST_HEADERS = frozenset({b"accept", b"traceparent", b"tracestate", b"baggage"})

SSE_HEADERS: Headers = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
JSON_TYPE = (b"content-type", b"application/json")

#: ASGI scope extensions the lean engine sets (``scope["extensions"]``): every ``send``
#: is bounded in time by the server itself, and one cut short closes the connection (the
#: app need not shield or time it)...
BOUNDED_SEND = "trimcp.bounded_send"
#: ...and the whole request body is already in memory (reading it never waits)...
BODY_BUFFERED = "trimcp.body_buffered"
#: ...and the scope's header names are lower-case and their values have no surrounding
#: whitespace (as HTTP/1.1 parsers give them: the app need not normalize them again).
NORMALIZED_HEADERS = "trimcp.normalized_headers"

#: A scope key (not an extension: its value is per request) of the lean engine's: a dict
#: that is the same for every request of a connection with the same head, byte for byte,
#: and lives as long as the engine keeps that head (see fasthead.parse). The app keeps
#: there what it derives from the head alone (its RequestHeaders), so that a repeated
#: head is not read again. Absent, or None, when the head is not kept.
HEAD_MEMO = "trimcp.head_memo"
#: A scope key of the lean engine's: the whole request body, when it came with the head
#: (the scope then names :data:`BODY_BUFFERED`); absent or None otherwise. Reading it
#: through ``receive`` works as well: an app takes it here without a message and a
#: coroutine (see :func:`buffered_body`).
BODY = "trimcp.body"
#: A scope key of the lean engine's: ``respond(status, body, headers)``, an async callable
#: that sends a complete answer with a ``Content-Length`` (``headers``: a tuple of the
#: others) in one step: what :func:`respond` sends as two messages, the same bytes on the
#: wire, without the messages (the engine keeps the head it makes of repeated headers).
#: Absent or None with any other server: then use :func:`respond`.
RESPOND = "trimcp.respond"

_T = TypeVar("_T")


class RequestHeaders(dict[bytes, str]):
    """The headers of :data:`WANTED` by lower-case name, decoded as latin-1;
    ``duplicate`` names a repeated singleton (repeated :data:`LIST_HEADERS` are joined
    with ``", "``). A dict, so that reading one (``get``) costs no Python call: the app
    reads about nine per POST."""

    __slots__ = ("duplicate",)

    def __init__(self, raw: Iterable[tuple[bytes, bytes]], *, normalized: bool = False) -> None:
        """``normalized``: the names are lower-case and the values stripped already (the
        lean engine's, see :data:`NORMALIZED_HEADERS`)."""
        # (no dict.__init__ call: the dict is made empty by dict.__new__)
        duplicate: bytes | None = None
        for name, value in raw:
            if not normalized:
                name = name.lower()
            if name in WANTED or name.startswith(PARAM_PREFIX):
                text = value.decode("latin-1")
                if not normalized:
                    text = text.strip()
                if name in self:
                    if name in LIST_HEADERS:
                        text = f"{self[name]}, {text}"
                    else:
                        duplicate = name
                self[name] = text
        self.duplicate = duplicate


def extensions(scope: Scope) -> dict[str, Any]:
    """The scope's ASGI extensions (an empty dict when the server names none)."""
    found: dict[str, Any] | None = scope.get("extensions")
    return found if found is not None else {}


async def read_body(
    receive: Receive,
    limit: int,
    timeout: float,
    declared: str | None,
    *,
    buffered: bool = False,
) -> bytes:
    """The whole request body, at most ``limit`` bytes, within ``timeout`` seconds.

    ``buffered``: the server says the body is already in memory (:data:`BODY_BUFFERED`),
    so no timeout is needed to read it. Raises :class:`HttpRejection`: 413 when
    ``Content-Length`` or the bytes read exceed the limit (nothing more is buffered), 408
    on timeout, 400 for a bad Content-Length or a client that went away. Cancellation:
    safe, the body is simply not read.
    """
    _check_declared(limit, declared)
    if buffered:
        message = await receive()
        if message["type"] == "http.request" and not message.get("more_body", False):
            chunk: bytes = message.get("body", b"")
            if len(chunk) > limit:
                raise _too_large(limit)
            return chunk
        raise HttpRejection(400, "The client went away before sending the body")
    chunks: list[bytes] = []
    size = 0
    with trio.move_on_after(timeout) as scope:
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise HttpRejection(400, "The client went away before sending the body")
            chunk = message.get("body", b"")
            if not message.get("more_body", False) and not chunks:
                if len(chunk) > limit:
                    raise _too_large(limit)
                return chunk
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
    if scope.cancelled_caught:
        raise HttpRejection(408, "The request body did not arrive in time")
    return b"".join(chunks)


def buffered_body(body: bytes, limit: int, declared: str | None) -> bytes:
    """:func:`read_body` for a body the server handed over whole in the scope
    (:data:`BODY`): the same refusals (400 for a bad Content-Length, 413 past ``limit``),
    without reading. Never waits."""
    _check_declared(limit, declared)
    if len(body) > limit:
        raise _too_large(limit)
    return body


def _check_declared(limit: int, declared: str | None) -> None:
    if declared is not None:
        if not declared.isdigit() or len(declared) > 18:
            raise HttpRejection(400, "Bad Content-Length")
        if int(declared) > limit:
            raise _too_large(limit)


def _too_large(limit: int) -> HttpRejection:
    return HttpRejection(
        413, f"Body larger than {limit} bytes", headers=[(b"connection", b"close")]
    )


def error_body(code: int, message: str, request_id: int | str | None = None) -> bytes:
    """A JSON-RPC error response, as the body of an HTTP error."""
    return encode_error(request_id, McpError(code, message))


async def respond(
    send: Send,
    status: int,
    body: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = (),
    *,
    content_type: bytes | None = None,
) -> None:
    """Send a complete response with a ``Content-Length``."""
    out: Headers = [(b"content-length", str(len(body)).encode("ascii"))]
    if content_type is not None:
        out.append((b"content-type", content_type))
    out.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def reject(send: Send, rejection: HttpRejection) -> None:
    """Answer with the rejection's status and a JSON-RPC error body."""
    body = error_body(rejection.code, rejection.message, rejection.request_id)
    await respond(send, rejection.status, body, rejection.headers, content_type=b"application/json")


def session_gone() -> HttpRejection:
    return HttpRejection(404, "Session not found", code=CONNECTION_CLOSED)


async def feed_bounded(channel: trio.MemorySendChannel[_T], body: _T, timeout: float) -> None:
    """Hand a POSTed message to a session's engine, waiting at most ``timeout`` for room.

    Raises :class:`HttpRejection`: 404 when the session is closed, 503 when the engine did
    not take the message in time. Cancellation: atomic, fed whole or not at all.
    """
    closed = (trio.ClosedResourceError, trio.BrokenResourceError)
    try:
        channel.send_nowait(body)
        return
    except trio.WouldBlock:
        pass
    except closed:
        raise session_gone() from None
    with trio.move_on_after(timeout):
        try:
            await channel.send(body)
        except closed:
            raise session_gone() from None
        return
    raise HttpRejection(503, "The session is busy; try again later")


async def wait_for_disconnect(receive: Receive) -> None:
    """Return once the client has gone (``http.disconnect``); drains anything else."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class ParsedBody(NamedTuple):
    """A POST body parsed once: the decoded JSON value (handed to the engine as is), its
    messages, and whether it was a batch."""

    value: Any
    messages: list[jsonrpc.Message]
    batch: bool


def parse_body(
    body: bytes,
    max_batch: int = DEFAULT_MAX_BATCH,
    *,
    prepare: Callable[[Any], None] | None = None,
) -> ParsedBody:
    """Parse a POST body into messages; 400 if invalid.

    A batch over ``max_batch`` members is refused before any member is looked at, so the
    work one body costs stays bounded by its size and the batch limit. ``prepare`` changes
    the decoded value in place before its messages are read (see
    :func:`~trimcp.transports.http_server.tracecontext.trace_adopter`), so that they carry
    the change.
    """
    try:
        parsed = parse_json(body)
        if type(parsed) is list:
            if not parsed:
                raise InvalidMessage(INVALID_REQUEST, "Invalid request: empty batch")
            if len(parsed) > max_batch:
                raise InvalidMessage(
                    INVALID_REQUEST, f"Invalid request: batch larger than {max_batch}"
                )
            if prepare is not None:
                prepare(parsed)
            return ParsedBody(parsed, [classify(item) for item in parsed], True)
        if prepare is not None:
            prepare(parsed)
        return ParsedBody(parsed, [classify(parsed)], False)
    except InvalidMessage as exc:
        raise HttpRejection(400, exc.message, code=exc.code, request_id=exc.request_id) from None
