"""Server-Sent Events: encode events to bytes, and decode a byte stream into events.

The decoder follows the WHATWG "event stream interpretation" rules (HTML Living Standard,
server-sent events): lines end in CRLF, LF or CR; a UTF-8 BOM at stream start is skipped;
``:`` starts a comment; a blank line dispatches the event being built; an incomplete event at
end of input is discarded. Sans-IO in the manner of h11: feed bytes with ``receive_data``,
pull events with ``next_event`` until :data:`NEED_DATA` or :data:`EOF` (the same sentinels as
:mod:`trimcp.protocol.framing`).
"""

from __future__ import annotations

import enum
import re
from typing import Final, Literal, TypeAlias

import attrs

from trimcp._record import Record
from trimcp.errors import INTERNAL_ERROR, LocalProtocolError
from trimcp.protocol.framing import EOF, NEED_DATA, Sentinel

DEFAULT_MAX_EVENT_BYTES: Final = 4 * 1024 * 1024

_BOM: Final = b"\xef\xbb\xbf"
_LINE_END: Final = re.compile(rb"[\r\n]")
_TEXT_LINE_END: Final = re.compile(r"\r\n|\r|\n")
_LF: Final = 0x0A
_CR: Final = 0x0D
_COLON: Final = 0x3A


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SSEEvent(Record):
    """One dispatched event.

    ``id`` is the stream's last event id when the event was dispatched (ids persist across
    events until changed, as the spec says), or None if it is empty. ``retry_ms`` is the
    ``retry`` value given in this event's block, if any; the latest one given anywhere is
    :attr:`SSEDecoder.retry_ms`.
    """

    event: str = "message"
    data: str
    id: str | None = None
    retry_ms: int | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class EventTooLarge(Record):
    """An event grew past ``max_event_bytes``; it is being skipped, not delivered.

    Reported as soon as the limit is crossed, so a client may give up on the stream early.
    The decoder discards the rest of that event (up to its blank line) without buffering it.
    """

    limit: int


SSEDecoderEvent: TypeAlias = SSEEvent | EventTooLarge | Literal[Sentinel.NEED_DATA, Sentinel.EOF]


def encode_event(
    data: str,
    *,
    event: str | None = None,
    id: str | None = None,
    retry_ms: int | None = None,
) -> bytes:
    """Return the UTF-8 bytes of one complete event (ending in a blank line).

    ``data`` may hold several lines (split at CRLF, CR or LF; they arrive joined with LF).
    ``event`` and ``id`` must not contain CR or LF, and ``id`` must not contain NUL (a
    receiver would ignore it); ``retry_ms`` must be a non-negative int. Raises ValueError
    otherwise. An ``id`` of ``""`` tells the receiver to forget its last event id.
    """
    lines: list[str] = []
    if event is not None:
        _check_single_line("event", event)
        lines.append(f"event: {event}")
    if id is not None:
        _check_single_line("id", id)
        if "\0" in id:
            raise ValueError("an SSE id must not contain NUL")
        lines.append(f"id: {id}")
    if retry_ms is not None:
        if isinstance(retry_ms, bool) or not isinstance(retry_ms, int) or retry_ms < 0:
            raise ValueError(f"retry_ms must be a non-negative int, not {retry_ms!r}")
        lines.append(f"retry: {retry_ms}")
    # Always "data: " with the space: the receiver strips one space, so a line that itself
    # starts with a space survives.
    lines.extend(f"data: {line}" for line in _TEXT_LINE_END.split(data))
    lines.append("\n")
    return "\n".join(lines).encode("utf-8")


def encode_comment(text: str = "") -> bytes:
    """Return a comment (one ``:`` line per line of ``text``), e.g. as a keep-alive.

    Receivers ignore comments, and a comment never completes an event.
    """
    return "".join(f": {line}\n" for line in _TEXT_LINE_END.split(text)).encode("utf-8")


def _check_single_line(name: str, value: str) -> None:
    if "\r" in value or "\n" in value:
        raise ValueError(f"an SSE {name} must not contain CR or LF")


class _Skip(enum.Enum):
    NOTHING = enum.auto()
    LINE = enum.auto()  # the rest of an over-long comment line
    EVENT = enum.auto()  # the rest of an over-large event, up to its blank line


class SSEDecoder:
    """Incremental decoder of a ``text/event-stream`` body.

    ``next_event()`` returns :class:`SSEEvent`, :class:`EventTooLarge`, :data:`NEED_DATA`
    or :data:`EOF`. An event's size is the bytes of its field lines (comments and line
    endings excluded); past ``max_event_bytes`` the event is skipped and memory stays
    bounded by ``max_event_bytes`` plus one ``receive_data`` chunk, provided the caller
    calls ``next_event()`` until :data:`NEED_DATA` before feeding more. Invalid UTF-8 is
    decoded with U+FFFD replacement. A ``retry`` value that is not all ASCII digits, or has
    more than 18 significant digits, is ignored. Malformed input never raises.
    """

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError("max_event_bytes must be at least 1")
        self._max = max_event_bytes
        self._buf = bytearray()
        self._pos = 0  # first byte not yet consumed
        self._scan = 0  # no line ending exists in _buf[_pos:_scan]; search from here
        self._bom_checked = False
        self._after_cr = False  # the last line ended in CR; an LF next belongs to it
        self._skip = _Skip.NOTHING
        self._line_dropped = False  # bytes of the current line were discarded
        self._eof = False
        # The event being built (the spec's "buffers").
        self._size = 0
        self._data: list[str] = []
        self._event_type = ""
        self._block_retry: int | None = None
        self._id_buffer = ""
        self._last_event_id = ""
        self._retry_ms: int | None = None

    @property
    def last_event_id(self) -> str | None:
        """The id to send as ``Last-Event-ID`` when reconnecting, or None if there is none.

        Updated at each blank line (event boundary), even when no event is dispatched.
        """
        return self._last_event_id or None

    @property
    def retry_ms(self) -> int | None:
        """The latest reconnection time the server asked for, in milliseconds, if any."""
        return self._retry_ms

    @property
    def buffered_bytes(self) -> int:
        """Raw bytes the decoder currently holds (delivered ones may not be freed yet)."""
        return len(self._buf)

    def receive_data(self, data: bytes) -> None:
        """Add bytes of the stream; ``b""`` means end of input.

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
        self._buf += data

    def next_event(self) -> SSEDecoderEvent:
        """Return the next event, :data:`NEED_DATA` or :data:`EOF`."""
        buf = self._buf
        while True:
            if not self._bom_checked and not self._check_bom():
                return NEED_DATA
            if self._after_cr and self._pos < len(buf):
                self._after_cr = False
                if buf[self._pos] == _LF:
                    self._pos += 1
            start = self._pos
            match = _LINE_END.search(buf, max(start, self._scan))
            if match is None:
                return self._no_complete_line()
            end = match.start()
            self._pos = self._scan = end + 1
            if buf[end] == _CR:
                self._after_cr = True
            line = buf[start:end]
            dropped, self._line_dropped = self._line_dropped, False
            result = self._process_line(line, dropped=dropped)
            if result is not None:
                return result

    def _check_bom(self) -> bool:
        """Skip a BOM at stream start; False if more bytes are needed to tell."""
        head = bytes(self._buf[:3])
        if len(head) < 3 and _BOM.startswith(head) and not self._eof:
            return False
        if head == _BOM:
            self._pos = 3
        self._bom_checked = True
        return True

    def _no_complete_line(self) -> SSEDecoderEvent:
        """No line ending after ``_pos``: bound the partial line, finish, or ask for more."""
        buf = self._buf
        pending = len(buf) - self._pos
        result: SSEDecoderEvent = NEED_DATA
        if pending:
            if self._skip is _Skip.NOTHING:
                if buf[self._pos] == _COLON:
                    if pending > self._max:
                        self._skip = _Skip.LINE
                elif self._size + pending > self._max:
                    result = self._start_skipping_event()
            if self._skip is not _Skip.NOTHING:
                self._line_dropped = True
                self._pos = len(buf)
        if self._eof:
            # The spec discards an incomplete event at end of input; only a pending
            # EventTooLarge is still worth reporting.
            buf.clear()
            self._pos = self._scan = 0
            return result if result is not NEED_DATA else EOF
        if self._pos:
            del buf[: self._pos]
            self._pos = 0
        self._scan = len(buf)
        return result

    def _process_line(self, line: bytearray, *, dropped: bool) -> SSEDecoderEvent | None:
        """Apply one complete line (without its ending); return an event to hand out."""
        if self._skip is _Skip.LINE:
            self._skip = _Skip.NOTHING
            return None
        if self._skip is _Skip.EVENT:
            if line or dropped:
                return None
            self._skip = _Skip.NOTHING
            self._dispatch()
            return None
        if not line:
            return self._dispatch()
        if line[0] == _COLON:
            return None
        self._size += len(line)
        if self._size > self._max:
            return self._start_skipping_event()
        name, colon, value = line.decode("utf-8", "replace").partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self._id_buffer = value
        elif name == "retry":
            self._set_retry(value)
        return None

    def _set_retry(self, value: str) -> None:
        if not (value.isascii() and value.isdigit()):
            return
        # int() refuses over 4300 digits, and no sane delay needs more than 18; such a
        # value is as useless as a malformed one, so it is ignored the same way.
        digits = value.lstrip("0") or "0"
        if len(digits) <= 18:
            self._retry_ms = self._block_retry = int(digits)

    def _start_skipping_event(self) -> EventTooLarge:
        self._skip = _Skip.EVENT
        self._data = []
        return EventTooLarge(limit=self._max)

    def _dispatch(self) -> SSEEvent | None:
        """End of an event block (blank line): build the event if it has data, then reset."""
        self._last_event_id = self._id_buffer
        event: SSEEvent | None = None
        if self._data:
            event = SSEEvent(
                event=self._event_type or "message",
                data="\n".join(self._data),
                id=self._last_event_id or None,
                retry_ms=self._block_retry,
            )
        self._data = []
        self._event_type = ""
        self._block_retry = None
        self._size = 0
        return event
