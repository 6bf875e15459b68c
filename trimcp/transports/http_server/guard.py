"""What every HTTP engine refuses before the app sees a request.

One rule set, applied by the lean engine to each parsed request head and by
:class:`GuardedApp` (an ASGI wrapper) under hypercorn or any other ASGI server, so both
engines refuse the same things (RFC 9112):

- a head over ``max_head_bytes`` (the documented 16 KiB by default), even when it arrived
  in one read: 414 when the request line alone is too long, else 431;
- ``Content-Length`` together with ``Transfer-Encoding`` (in any order or spelling): the
  two framings disagree on where the body ends, the classic request-smuggling vector, so
  the request is refused with 400 rather than read either way;
- HTTP versions other than 1.0 and 1.1 (2 and 3 too, when the server speaks them): 505.

Every refusal says ``Connection: close``: whatever follows on the connection is never
parsed as a request.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import trio

from trimcp.transports.http_server.asgi import HttpRejection, Receive, Scope, Send, reject

#: ``http_version`` values of an ASGI scope that are served (2 and 3 from hypercorn's
#: HTTP/2 and HTTP/3 protocols, which frame bodies themselves).
ASGI_VERSIONS = frozenset({"1.0", "1.1", "2", "3"})
_CLOSE = [(b"connection", b"close")]
#: Bounds on reading a refused request's body before answering (see GuardedApp).
DRAIN_BYTES = 64 * 1024
DRAIN_SECONDS = 1.0
# "HTTP/" + "1.1" + two spaces + CRLF around method and target.
_LINE_EXTRA = len("HTTP/") + 3 + 2 + 2


def request_line_bytes(method: bytes, target: bytes) -> int:
    """The length of ``METHOD SP target SP HTTP/x.y CRLF``."""
    return len(method) + len(target) + _LINE_EXTRA


def check_head(
    method: bytes,
    target: bytes,
    headers: Iterable[tuple[bytes, bytes]],
    max_head_bytes: int,
    *,
    head_bytes: int = 0,
) -> tuple[int, str] | None:
    """``(status, reason)`` when a parsed request head must be refused, else None.

    ``headers`` have lower-case names (h11 and ASGI give them so). Sizes are counted as
    the head would be written without optional whitespace; ``head_bytes`` is the head's
    size on the wire when the caller knows it (it then wins when larger).
    """
    line = request_line_bytes(method, target)
    if line > max_head_bytes:
        return 414, f"The request line is longer than {max_head_bytes} bytes"
    total = line + 2
    length = encoding = False
    for name, value in headers:
        total += len(name) + len(value) + 4
        if name == b"content-length":
            length = True
        elif name == b"transfer-encoding":
            encoding = True
    if max(total, head_bytes) > max_head_bytes:
        return 431, f"The request head is larger than {max_head_bytes} bytes"
    if length and encoding:
        return 400, "Content-Length and Transfer-Encoding together"
    return None


def check_scope(scope: Scope, max_head_bytes: int) -> tuple[int, str] | None:
    """:func:`check_head` for an ASGI ``http`` scope, plus the HTTP version (505)."""
    version = scope.get("http_version", "1.1")
    if version not in ASGI_VERSIONS:
        return 505, f"HTTP version {str(version)[:8]!r} is not supported"
    target: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    query: bytes = scope.get("query_string", b"")
    if query:
        target = target + b"?" + query
    return check_head(scope["method"].encode("ascii"), target, scope["headers"], max_head_bytes)


class GuardedApp:
    """An ASGI app that first applies :func:`check_scope` to every HTTP request.

    A refused request gets its status, a JSON-RPC error body and ``Connection: close``;
    the wrapped app never sees it. Its body is read first (at most :data:`DRAIN_BYTES`
    within :data:`DRAIN_SECONDS`): hypercorn fails a connection whose client sent more
    after a complete request once the answer says ``Connection: close``, and that failure
    can cut the answer itself. Everything else (lifespan, attributes such as
    ``manager``) passes through. ``serve_http`` wraps the app with it under hypercorn;
    wrap it yourself when you mount the app under another ASGI server.
    """

    def __init__(self, app: Any, *, max_head_bytes: int = 16 * 1024) -> None:
        self.app = app
        self.max_head_bytes = max_head_bytes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = check_scope(scope, self.max_head_bytes)
            if refusal is not None:
                status, reason = refusal
                await _drain(receive)
                await reject(send, HttpRejection(status, reason, headers=_CLOSE))
                return
        await self.app(scope, receive, send)


async def _drain(receive: Receive) -> None:
    """Read the request body (bounded in bytes and time) and drop it."""
    size = 0
    with trio.move_on_after(DRAIN_SECONDS):
        while size <= DRAIN_BYTES:
            message = await receive()
            if message["type"] != "http.request":
                return
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                return
