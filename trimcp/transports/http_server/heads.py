"""Response heads of the lean HTTP/1.1 engine: status lines and validated header lines.

The app repeats the same few headers on every response, so each validated line is kept
(bounded; ``Content-Length`` lines apart, since they vary more). The ``Date`` line is
formatted at most once a second.
"""

from __future__ import annotations

import re
import time
from email.utils import formatdate
from http import HTTPStatus

__all__ = [
    "CONNECTION",
    "FRAMING",
    "LENGTH",
    "LENGTHS",
    "LINES",
    "PLAIN",
    "Date",
    "header",
    "status_line",
    "tokens",
]

_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_FIELD_VALUE = re.compile(rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")
# What a response header is to the framing: passed through, or looked at.
PLAIN, LENGTH, CONNECTION, FRAMING = range(4)
#: Validated header lines by (name, value): the app repeats the same few headers.
#: Written only by :func:`header`; read by the lean engine's response heads too (no call
#: per header line once known). Shared by every connection, so only :data:`_REMEMBERED`
#: headers are kept: never a credential (``Mcp-Session-Id``, ``Set-Cookie``) outlives
#: its response here.
LINES: dict[tuple[bytes, bytes], tuple[bytes, int, bool]] = {}
_MAX_LINES = 1024
#: Validated ``Content-Length`` lines (digits, the caller checks): answers come in a few
#: sizes. Bounded as :data:`LINES`, apart from it.
LENGTHS: dict[tuple[bytes, bytes], tuple[bytes, int, bool]] = {}
#: Response headers that repeat and carry no secret (an allowlist: any other header is
#: validated on each response).
_REMEMBERED = frozenset(
    {
        b"content-type",
        b"cache-control",
        b"connection",
        b"x-accel-buffering",
        b"mcp-protocol-version",
        b"www-authenticate",
        b"allow",
        b"vary",
        b"access-control-allow-origin",
        b"access-control-allow-methods",
        b"access-control-allow-headers",
        b"access-control-expose-headers",
    }
)
_STATUS_LINES: dict[int, bytes] = {}


#: How many lines of other headers a connection keeps (see :func:`header`).
MAX_OWN_LINES = 8


def header(
    name: bytes, value: bytes, own: dict[tuple[bytes, bytes], tuple[bytes, int, bool]]
) -> tuple[bytes, int, bool]:
    """``(line, kind, close)`` for one response header; ValueError if it is malformed.

    ``own``: the lines of headers not shared between connections (``Mcp-Session-Id``,
    repeated on every answer to its client) that one connection keeps for itself, at
    most :data:`MAX_OWN_LINES`: they end with it, and no other client's response sees
    them."""
    pair = (name, value)
    entry = LINES.get(pair) or LENGTHS.get(pair) or own.get(pair)
    if entry is not None:
        return entry
    if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
        raise ValueError(f"illegal response header {name!r}: {value!r}")
    lower = name.lower()
    close = False
    if lower == b"content-length":
        # Kept apart (sizes vary more than the other lines, and must not evict them).
        entry = (value, LENGTH, False)
        if len(LENGTHS) >= _MAX_LINES:
            LENGTHS.clear()
        LENGTHS[pair] = entry
        return entry
    if lower == b"connection":
        kind = CONNECTION
        close = b"close" in tokens(value)
    elif lower in (b"transfer-encoding", b"keep-alive", b"upgrade"):
        kind = FRAMING  # hop-by-hop framing is this server's business: dropped
    else:
        kind = PLAIN
    entry = (name + b": " + value + b"\r\n", kind, close)
    if lower in _REMEMBERED:
        if len(LINES) >= _MAX_LINES:
            LINES.clear()
        LINES[pair] = entry
    elif kind == PLAIN:
        if len(own) >= MAX_OWN_LINES:
            own.clear()
        own[pair] = entry
    return entry


def tokens(value: bytes) -> list[bytes]:
    return [token.strip() for token in value.lower().split(b",")]


def status_line(status: int) -> bytes:
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


class Date:
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
