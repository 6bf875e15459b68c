"""Newline-delimited framing for the stdio transport: feed bytes in, pull whole lines out.

Sans-IO in the manner of h11: the caller reads bytes from wherever it likes, hands them to
:meth:`LineFramer.receive_data`, then calls :meth:`LineFramer.next_event` until it gets
:data:`NEED_DATA` (read more) or :data:`EOF` (the peer closed and every line was delivered).
Nothing here parses JSON; a line is just bytes.

The sentinels :data:`NEED_DATA` and :data:`EOF` are shared by every incremental decoder in
``trimcp.protocol`` (the SSE decoder uses them too).
"""

from __future__ import annotations

import enum
from typing import Final, Literal, TypeAlias

import attrs

from trimcp._record import Record
from trimcp.errors import INTERNAL_ERROR, LocalProtocolError

DEFAULT_MAX_LINE_BYTES: Final = 4 * 1024 * 1024

_LF: Final = 0x0A
_CR: Final = 0x0D


class Sentinel(enum.Enum):
    """The type of the :data:`NEED_DATA` and :data:`EOF` markers; compare them with ``is``."""

    NEED_DATA = "NEED_DATA"
    EOF = "EOF"

    def __repr__(self) -> str:
        return self.value


NEED_DATA: Final = Sentinel.NEED_DATA
"""Returned by ``next_event`` when no event can be produced until more bytes arrive."""

EOF: Final = Sentinel.EOF
"""Returned by ``next_event`` (forever) once end of input was fed and everything before it
was delivered."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class LineTooLong(Record):
    """The peer sent a line longer than ``max_line_bytes``; it was discarded, not delivered.

    Reported once, when the over-long line ends (at its newline, or at end of input), so
    ``dropped`` is exact: the number of bytes of that line, line ending excluded. The lines
    after it are delivered normally. For a JSON-RPC peer the right answer is a ``-32700``
    error with ``id: null``, since the id of the dropped message is unknown.
    """

    dropped: int


FramerEvent: TypeAlias = bytes | LineTooLong | Literal[Sentinel.NEED_DATA, Sentinel.EOF]


def frame_message(data: bytes) -> bytes:
    """Return ``data`` followed by ``b"\\n"``, ready to write to a stdio peer.

    Raises ValueError if ``data`` contains a raw LF or CR (it would not arrive as one line,
    or would lose a trailing CR), or is empty or all whitespace (the reader skips such
    lines). ``json.dumps`` output never does either.
    """
    if b"\n" in data or b"\r" in data:
        raise ValueError("a framed message must not contain a raw CR or LF byte")
    if not data or data.isspace():
        raise ValueError("a framed message must not be empty or all whitespace")
    return data + b"\n"


class LineFramer:
    """Incremental splitter of a byte stream into lines (NDJSON framing, as MCP stdio uses).

    ``next_event()`` returns, in stream order:

    - a complete line as ``bytes``, without its line ending (LF or CRLF). Blank and
      whitespace-only lines are skipped. Bytes left without a newline at end of input are
      delivered as a last line, since peers sometimes omit the final newline.
    - :class:`LineTooLong` for a line over ``max_line_bytes`` (line ending excluded). Its
      bytes are discarded as they arrive, so a peer cannot make us hold more than
      ``max_line_bytes`` + 1 bytes of it plus one chunk passed to ``receive_data``.
    - :data:`NEED_DATA` when more input is needed; :data:`EOF` after end of input.

    Memory stays bounded by ``max_line_bytes`` plus one ``receive_data`` chunk, provided the
    caller calls ``next_event()`` until :data:`NEED_DATA` before feeding more. Malformed
    input never raises; it only ever produces events.
    """

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self._max = max_line_bytes
        self._buf = bytearray()
        # A view kept across calls so each line is copied out of the buffer only once
        # (slicing the bytearray and then converting to bytes would copy twice). The buffer
        # cannot be resized while a view exists, so every resize goes through _release_view.
        self._view: memoryview | None = None
        self._start = 0  # first byte not yet consumed
        self._scan = 0  # no LF exists in _buf[_start:_scan]; resume the search here
        self._dropping = False  # discarding the rest of an over-long line
        self._dropped = 0  # bytes of that line discarded so far (a trailing CR included)
        self._dropped_ends_cr = False  # the last byte discarded was CR
        self._eof = False

    @property
    def max_line_bytes(self) -> int:
        """The longest line (line ending excluded) that is delivered rather than dropped."""
        return self._max

    @property
    def buffered_bytes(self) -> int:
        """Bytes the framer currently holds in memory (delivered ones may not be freed yet)."""
        return len(self._buf)

    def receive_data(self, data: bytes) -> None:
        """Add bytes read from the peer; ``b""`` means end of input.

        Feeding ``b""`` again is harmless. Raises LocalProtocolError if non-empty data
        follows end of input (a bug in the caller).
        """
        if self._eof:
            if data:
                raise LocalProtocolError("data received after end of input", INTERNAL_ERROR)
            return
        if not data:
            self._eof = True
            return
        self._release_view()
        self._buf += data

    def next_event(self) -> FramerEvent:
        """Return the next line, :class:`LineTooLong`, :data:`NEED_DATA` or :data:`EOF`."""
        buf = self._buf
        while True:
            start = self._start
            newline = buf.find(b"\n", self._scan)
            if newline < 0:
                return self._no_complete_line()
            self._start = self._scan = newline + 1
            end = newline
            if end > start and buf[end - 1] == _CR:
                end -= 1
            if self._dropping:
                return self._end_drop(ends_cr=end < newline, tail=end - start)
            size = end - start
            if size > self._max:
                return LineTooLong(dropped=size)
            if size == 0:
                continue
            view = self._view
            if view is None:
                view = self._view = memoryview(buf)
            line = view[start:end].tobytes()
            if line.isspace():
                continue
            return line

    def next_lines(self) -> list[bytes]:
        """Every complete line buffered, in order, as :meth:`next_event` would return them
        one at a time; empty when the next event is anything but a line (then ask
        :meth:`next_event`). A reader of many pipelined messages makes one call per read
        instead of one per line. Gives up (returns ``[]``, nothing consumed) on what only
        :meth:`next_event` reports or strips: a line being dropped, one over the limit, a
        CR."""
        if self._dropping:
            return []
        buf = self._buf
        last = buf.rfind(b"\n", self._scan)
        if last < 0:
            return []
        view = self._view
        if view is None:
            view = self._view = memoryview(buf)
        chunk = view[self._start : last].tobytes()
        if chunk.find(b"\r") != -1:
            return []
        lines = chunk.split(b"\n")
        if len(chunk) > self._max and max(map(len, lines)) > self._max:
            return []
        self._start = self._scan = last + 1
        # Blank and whitespace-only lines are skipped (isspace stops at the first other
        # byte: a JSON text costs it one byte).
        return [line for line in lines if line and not line.isspace()]

    def _no_complete_line(self) -> FramerEvent:
        """Handle a buffer with no LF after ``_start``: drop, finish, or ask for more."""
        buf = self._buf
        pending = len(buf) - self._start
        # One byte of slack: a line of exactly max_line_bytes may be waiting for the LF of
        # its CRLF, and it must not be dropped.
        if pending and (self._dropping or pending > self._max + 1):
            self._dropping = True
            self._dropped += pending
            self._dropped_ends_cr = buf[-1] == _CR
            self._clear()
        if self._eof:
            return self._finish()
        if self._start:
            self._release_view()
            del buf[: self._start]
            self._start = 0
        self._scan = len(buf)
        return NEED_DATA

    def _end_drop(self, *, ends_cr: bool, tail: int) -> LineTooLong:
        """Close the over-long line being discarded; ``tail`` bytes of it were still here."""
        if tail == 0 and not ends_cr:
            # The line ending was the first byte of this chunk; was the line's last byte,
            # discarded earlier, a CR?
            ends_cr = self._dropped_ends_cr
            total = self._dropped - int(ends_cr)
        else:
            total = self._dropped + tail
        self._dropping = False
        self._dropped = 0
        self._dropped_ends_cr = False
        return LineTooLong(dropped=total)

    def _finish(self) -> FramerEvent:
        """At end of input: report what is left (as a line or LineTooLong), then EOF."""
        if self._dropping:
            return self._end_drop(ends_cr=False, tail=0)
        buf = self._buf
        start, end = self._start, len(buf)
        if start == end:
            return EOF
        if buf[end - 1] == _CR:
            end -= 1
        line = bytes(buf[start:end])
        self._clear()
        if len(line) > self._max:
            return LineTooLong(dropped=len(line))
        if not line or line.isspace():
            return EOF
        return line

    def _clear(self) -> None:
        self._release_view()
        self._buf.clear()
        self._start = self._scan = 0

    def _release_view(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None
