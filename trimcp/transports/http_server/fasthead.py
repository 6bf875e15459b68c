"""The lean server's fast path for plain HTTP/1.1 requests: a strict subset h11 also accepts.

h11 parses any request HTTP/1.1 allows, and pays for that generality: about a fifth of a
small MCP call's server CPU went to ``next_event`` (its state machine, header
normalisation, a receive buffer of its own) and to a new ``h11.Connection`` per request.
Almost every request an MCP client sends is the simple kind: one ``\\r\\n``-terminated
head, a ``Content-Length`` body that arrives with it. :func:`parse` reads exactly that
kind and *declines* everything else, which the server then hands to h11 unchanged. It
never refuses anything itself, so what is an error stays h11's decision.

Accepted (all of it, or the request is declined):

- a request line ``METHOD SP target SP HTTP/1.1`` (or ``HTTP/1.0``): method upper-case
  letters, target visible ASCII;
- header lines ``name: value`` with ``\\r\\n`` endings: name a token, value visible
  characters (and obs-text) with inner spaces or tabs, surrounding ones stripped; no line
  folding, no empty line before the request line, no bare ``\\n`` anywhere in the head;
- at most one ``Content-Length`` (digits only) and no ``Transfer-Encoding``, ``Expect``
  or ``Upgrade``; one ``Host`` (required for HTTP/1.1); method not ``CONNECT``.

The head is returned with as much of the body as is buffered; the server reads the rest
(:attr:`Head.remaining` bytes) as the app asks for it. :func:`parse` returns
:data:`NEED_MORE` while the head is incomplete and small; a buffer with more than
``max_head`` bytes and no complete head is declined, so h11 reports it (431).
"""

from __future__ import annotations

import re
from typing import Any, Final

from trimcp.transports.http_server.heads import tokens

__all__ = ["DECLINE", "NEED_MORE", "Head", "KeptHeads", "parse"]

_REQUEST_LINE = re.compile(rb"([A-Z]{1,32}) ([\x21-\x7e]+) HTTP/1\.([01])")
_FIELD = re.compile(
    rb"([-!#$%&'*+.^_`|~0-9A-Za-z]+):[ \t]*"
    rb"((?:[\x21-\x7e\x80-\xff]+(?:[ \t]+[\x21-\x7e\x80-\xff]+)*)?)[ \t]*"
)
#: Header lines read before, as ``(lower-case name, value)``: a client repeats most of its
#: lines on every request, so each distinct short line is matched once (bounded: at most
#: 1024 lines of 256 bytes; cleared when full). Shared by every connection, so only the
#: lines of :data:`_REMEMBERED` headers are kept: never a credential (``Authorization``,
#: ``Cookie``, ``Mcp-Session-Id``, an API key under any name) outlives its request here.
_FIELDS: dict[bytes, tuple[bytes, bytes]] = {}
_MAX_FIELDS = 1024
_MAX_FIELD_BYTES = 256
#: What clients repeat on every request and carries no secret (an allowlist: a header
#: this does not name, a custom credential header included, is parsed every time).
_REMEMBERED = frozenset(
    {
        b"host",
        b"content-type",
        b"content-length",
        b"accept",
        b"accept-encoding",
        b"accept-language",
        b"connection",
        b"user-agent",
        b"origin",
        b"cache-control",
        b"mcp-protocol-version",
        b"mcp-method",
        b"mcp-name",
    }
)
#: How many lines a connection keeps for itself (see :func:`parse`).
MAX_OWN_LINES = 8
#: How many whole heads a connection keeps, read (see :func:`parse`), and the largest kept.
MAX_OWN_HEADS = 4
_MAX_HEAD_KEPT = 1024
#: Headers whose presence sends the request to h11.
_DECLINED = frozenset({b"transfer-encoding", b"expect", b"upgrade"})


class Head:
    """A request read by the fast path: its head and the start of its body."""

    __slots__ = (
        "body",
        "close",
        "headers",
        "http11",
        "length",
        "memo",
        "method",
        "remaining",
        "size",
        "target",
    )

    def __init__(
        self,
        method: bytes,
        target: bytes,
        http11: bool,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        remaining: int,
        size: int,
        length: int = 0,
        close: bool = False,
        memo: dict[str, Any] | None = None,
    ) -> None:
        self.method = method
        self.target = target
        self.http11 = http11
        #: ``(lower-case name, value)`` in the order received.
        self.headers = headers
        #: The body bytes that were buffered with the head.
        self.body = body
        #: Body bytes still to be read from the connection.
        self.remaining = remaining
        #: The head's size on the wire (request line to the blank line, inclusive).
        self.size = size
        #: The body's ``Content-Length`` (0 without one).
        self.length = length
        #: A ``Connection`` header says ``close``.
        self.close = close
        #: For what the app derives from this head alone (see :data:`HEAD_MEMO`): one
        #: dict per head a connection keeps (the same for each request with this exact
        #: head, dropped with it); None when the head is not kept.
        self.memo = memo


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: More bytes are needed before the request can be read.
NEED_MORE: Final = _Marker("NEED_MORE")
#: Not for the fast path: let h11 read this request.
DECLINE: Final = _Marker("DECLINE")


class KeptHeads(dict[bytes, Any]):
    """The whole heads one connection keeps, read, by their bytes (see :func:`parse`), and
    the last one read or kept (``(bytes, entry)``): a client repeats one head, which is
    then compared where it lies in the buffer, not copied out and hashed."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        super().__init__()
        self.last: tuple[bytes, Any] | None = None

    def clear(self) -> None:
        super().clear()
        self.last = None


def parse(
    buffer: bytearray,
    max_head: int,
    own: dict[bytes, Any] | None = None,
    heads: KeptHeads | None = None,
) -> Head | _Marker:
    """Read one request from the front of ``buffer`` and remove it from there.

    Returns a :class:`Head`, :data:`NEED_MORE` or :data:`DECLINE` (``buffer`` then stays
    as it was). ``own``: the lines one connection keeps for itself, matched once (at most
    :data:`MAX_OWN_LINES`, each no longer than the shared ones): its request line and
    the header lines not shared between connections (its ``Mcp-Session-Id``, which it
    repeats on every request). They end with the connection; no other client's request
    meets them. ``heads``: the whole heads one connection keeps, read (at most
    :data:`MAX_OWN_HEADS`, of at most 1 KiB): a client sends the same head, byte for
    byte (``Content-Length`` included), for most requests of a kind, and such a head is
    not read again. A kept head's ``headers`` list is shared by the requests that repeat
    it: read-only.
    """
    if not buffer:
        return NEED_MORE
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if (
            len(buffer) > max_head
            or not 0x41 <= buffer[0] <= 0x5A  # not a method's first letter: h11 refuses
            or buffer.count(b"\n") != buffer.count(b"\r\n")  # a bare LF: h11's to read
        ):
            return DECLINE
        return NEED_MORE
    if end + 4 > max_head:
        return DECLINE  # h11 (and the guard) decide about oversized heads
    known = None
    if heads is not None:
        last = heads.last
        # (the last head again, nearly always: compared in place, not copied and hashed)
        if last is not None and len(last[0]) == end and buffer.startswith(last[0]):
            known = last[1]
        else:
            raw = bytes(buffer[:end])
            known = heads.get(raw)
            if known is not None:
                heads.last = (raw, known)
    if known is not None:
        method, target, http11, headers, length, close, memo = known
    else:
        raw = bytes(buffer[:end])
        parsed = _parse_head(raw, own)
        if parsed is None:
            return DECLINE
        method, target, http11, headers, length, close = parsed
        memo = None
        if heads is not None and end <= _MAX_HEAD_KEPT:
            if len(heads) >= MAX_OWN_HEADS:
                heads.clear()
            memo = {}
            heads[raw] = kept = (*parsed, memo)
            heads.last = (raw, kept)
    start = end + 4
    stop = min(start + length, len(buffer))
    body = bytes(buffer[start:stop])
    del buffer[:stop]
    return Head(
        method, target, http11, headers, body, length - len(body), start, length, close, memo
    )


def _parse_head(
    raw: bytes, own: dict[bytes, Any] | None
) -> tuple[bytes, bytes, bool, list[tuple[bytes, bytes]], int, bool] | None:
    """A head's request line and header lines (None: declined), the body's length."""
    lines = raw.split(b"\r\n")
    first = lines[0]
    parts = None if own is None else own.get(first)
    if parts is None:
        request_line = _REQUEST_LINE.fullmatch(first)
        if request_line is None:
            return None
        parts = request_line.groups()
        if own is not None and len(first) <= _MAX_FIELD_BYTES:
            _keep(own, first, parts)
    method, target, minor = parts
    if method == b"CONNECT":
        return None
    headers: list[tuple[bytes, bytes]] = []
    length = -1
    host = False
    close = False
    fields = _FIELDS
    for line in lines[1:]:
        pair = fields.get(line)
        if pair is None and own is not None:
            pair = own.get(line)
        if pair is None:
            field = _FIELD.fullmatch(line)
            if field is None:
                return None
            pair = (field[1].lower(), field[2])
            if len(line) <= _MAX_FIELD_BYTES:
                if pair[0] in _REMEMBERED:
                    if len(fields) >= _MAX_FIELDS:
                        fields.clear()
                    fields[line] = pair
                elif own is not None:
                    _keep(own, line, pair)
        name, value = pair
        if name == b"content-length":
            if length >= 0 or not value.isdigit() or len(value) > 18:
                return None
            length = int(value)
        elif name == b"host":
            if host:
                return None  # h11 refuses two
            host = True
        elif name == b"connection":
            close = close or b"close" in tokens(value)
        elif name in _DECLINED:
            return None
        headers.append((name, value))
    http11 = minor == b"1"
    if http11 and not host:
        return None
    return method, target, http11, headers, max(length, 0), close


def _keep(own: dict[bytes, Any], line: bytes, parsed: Any) -> None:
    if len(own) >= MAX_OWN_LINES:
        own.clear()
    own[line] = parsed
