"""Every limit and timeout of the HTTP client transports, in one value object."""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from trimcp._record import Record
from trimcp._validators import positive

#: Default limit on one message (a JSON body or one SSE event).
DEFAULT_MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024

#: Headers the transport sets itself; a caller cannot override them.
RESERVED_HEADERS: Final = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "transfer-encoding",
        "connection",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    }
)


def _headers(
    value: Mapping[str, str] | Iterable[tuple[str, str]] | None,
) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    pairs = []
    for name, text in items:
        if not isinstance(name, str) or not isinstance(text, str):
            raise TypeError("header names and values must be str")
        lower = name.lower()
        if lower in RESERVED_HEADERS:
            raise ValueError(f"the {name!r} header is set by the transport")
        if not name or any(c in name + text for c in "\r\n\0") or not (name + text).isascii():
            raise ValueError(f"invalid header {name!r}")
        pairs.append((lower, text))
    return tuple(pairs)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class HttpClientOptions(Record):
    """Bounds of an HTTP client transport. Times are seconds (Trio clock).

    ``headers``: extra headers on every request (e.g. ``Authorization``); the MCP ones
    are reserved. ``timeout``: connecting (incl. TLS), writing a request, the response
    head of notifications, GET and DELETE requests, waiting for the legacy ``endpoint``
    event, and a re-initialization. ``sse_read_timeout``: the response head of a request
    (a JSON-mode server only answers when the result is ready) and the gap between two
    reads of any body or event stream. ``max_message_bytes``: one JSON body or SSE event.
    ``max_connections``: request POSTs in flight at once; the writer waits past it
    (notifications, responses and the GET stream use at most two more connections).
    ``legacy_fallback``: try the 2024-11-05 HTTP+SSE transport when POSTing
    ``initialize`` gets 400, 404 or 405. ``reinitialize``: on 404 for a session, start a
    new one once and resend (else the session ends). ``delete_timeout``: the DELETE on
    close. Reconnecting a dropped event stream waits the server's ``retry`` (or
    ``reconnect_delay``), doubled after each failed attempt, at most
    ``max_reconnect_delay``; it gives up after ``max_reconnect_attempts`` attempts in a
    row that bring nothing. ``inbox_size``: messages buffered for the session.
    ``late_answer_timeout``: how long a cancelled 2026-07-28 ``tools/call`` still reads
    an answer already on its way (it may name a task the server made of the call, which
    the client then cancels), its connection half-closed so the server sees it leave.
    """

    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_headers)
    timeout: float = attrs.field(default=30.0, validator=positive)
    sse_read_timeout: float = attrs.field(default=300.0, validator=positive)
    max_message_bytes: int = attrs.field(default=DEFAULT_MAX_MESSAGE_BYTES, validator=positive)
    ssl_context: ssl.SSLContext | None = None
    max_connections: int = attrs.field(default=8, validator=positive)
    legacy_fallback: bool = True
    reinitialize: bool = True
    delete_timeout: float = attrs.field(default=5.0, validator=positive)
    reconnect_delay: float = attrs.field(default=1.0, validator=positive)
    max_reconnect_delay: float = attrs.field(default=30.0, validator=positive)
    max_reconnect_attempts: int = attrs.field(default=3, validator=positive)
    inbox_size: int = attrs.field(default=64, validator=positive)
    late_answer_timeout: float = attrs.field(default=2.0, validator=positive)
    #: OAuth (a :class:`trimcp.auth.OAuthClient`): tokens obtained on 401, refreshed, and
    #: stepped up on 403 ``insufficient_scope`` (see docs/authorization.md).
    auth: Any = None

    def reconnect_wait(self, retry_ms: int | None, failures: int) -> float:
        """Seconds to wait before reconnecting after ``failures`` fruitless attempts."""
        base = retry_ms / 1000 if retry_ms is not None else self.reconnect_delay
        backoff: float = base * 2 ** min(failures, 16)
        return min(backoff, self.max_reconnect_delay)

    @property
    def close_bound(self) -> float:
        """The longest closing the transport takes."""
        return self.delete_timeout + 1.0
