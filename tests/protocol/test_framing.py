"""Tests for the NDJSON line framer (trimcp.protocol.framing)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trimcp.errors import LocalProtocolError
from trimcp.protocol.framing import (
    EOF,
    NEED_DATA,
    FramerEvent,
    LineFramer,
    LineTooLong,
    frame_message,
)


def run(framer: LineFramer, chunks: list[bytes], *, eof: bool = True) -> list[FramerEvent]:
    """Feed ``chunks`` (then end of input), draining events after each; return them all."""
    events: list[FramerEvent] = []
    for chunk in chunks:
        framer.receive_data(chunk)
        while (event := framer.next_event()) is not NEED_DATA:
            assert event is not EOF
            events.append(event)
    if eof:
        framer.receive_data(b"")
        while (event := framer.next_event()) is not EOF:
            assert event is not NEED_DATA, "NEED_DATA after end of input"
            events.append(event)
        events.append(event)
        assert framer.next_event() is EOF  # EOF is sticky
    return events


def reference(stream: bytes, max_line_bytes: int) -> list[FramerEvent]:
    """What the framer must produce, computed non-incrementally from the whole stream."""
    events: list[FramerEvent] = []
    for piece in stream.split(b"\n"):
        line = piece.removesuffix(b"\r")
        if len(line) > max_line_bytes:
            events.append(LineTooLong(dropped=len(line)))
        elif line and not line.isspace():
            events.append(line)
    events.append(EOF)
    return events


def drain_after_eof(decoder: LineFramer, stream: bytes) -> list[FramerEvent]:
    """Feed all of ``stream`` and end of input before asking for any event."""
    decoder.receive_data(stream)
    decoder.receive_data(b"")
    events: list[FramerEvent] = []
    while (event := decoder.next_event()) is not EOF:
        assert event is not NEED_DATA
        events.append(event)
    return [*events, EOF]


def three_ways(stream: bytes, max_line_bytes: int = 64) -> list[FramerEvent]:
    """Events for ``stream`` fed whole, byte by byte, and with trailing data; all must agree."""
    whole = run(LineFramer(max_line_bytes), [stream] if stream else [])
    bytewise = run(LineFramer(max_line_bytes), [stream[i : i + 1] for i in range(len(stream))])
    assert bytewise == whole
    assert drain_after_eof(LineFramer(max_line_bytes), stream) == whole
    if stream.endswith(b"\n"):
        # The start of a further line must not change or delay anything before it.
        trailing = run(LineFramer(max_line_bytes), [stream + b'{"more'], eof=False)
        assert trailing == whole[:-1]
    return whole


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b"", []),
        (b"a\n", [b"a"]),
        (b"a\nb\nc\n", [b"a", b"b", b"c"]),
        (b"a\r\nb\r\n", [b"a", b"b"]),
        (b"a\r\nb\nc\r\n", [b"a", b"b", b"c"]),
        (b"\n\n \n\t\r\n\r\na\n \t \n", [b"a"]),
        (b"no final newline", [b"no final newline"]),
        (b"a\nno final newline\r", [b"a", b"no final newline"]),
        (b"a\n   ", [b"a"]),
        (b"mid\rline\n", [b"mid\rline"]),  # only CR directly before LF is a line ending
        (b"a\r\r\n", [b"a\r"]),
        (b"  padded  \n", [b"  padded  "]),  # content is not stripped, only skipped if blank
        (b"\xff\xfe\x00\x80\n", [b"\xff\xfe\x00\x80"]),  # bytes, not text: no decoding here
    ],
)
def test_examples_three_ways(stream: bytes, expected: list[bytes]) -> None:
    assert three_ways(stream) == [*expected, EOF]


def test_pipelined_lines_in_one_read() -> None:
    lines = [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i for i in range(1000)]
    framer = LineFramer()
    assert run(framer, [b"\n".join(lines) + b"\n"]) == [*lines, EOF]
    assert framer.buffered_bytes == 0


def test_over_long_line_between_good_lines_three_ways() -> None:
    stream = b"first\n" + b"x" * 100 + b"\r\nsecond\n" + b"y" * 65 + b"\nthird"
    assert three_ways(stream, max_line_bytes=64) == [
        b"first",
        LineTooLong(dropped=100),
        b"second",
        LineTooLong(dropped=65),
        b"third",
        EOF,
    ]


def test_line_of_exactly_the_limit_is_delivered_even_with_crlf_split() -> None:
    line = b"z" * 64
    for stream in (line + b"\n", line + b"\r\n", line):
        assert three_ways(stream, max_line_bytes=64) == [line, EOF]
    # CR at the end of one read, LF at the start of the next.
    assert run(LineFramer(64), [line + b"\r", b"\nok\n"]) == [line, b"ok", EOF]


def test_over_long_crlf_line_split_at_the_cr_counts_only_content() -> None:
    framer = LineFramer(max_line_bytes=8)
    events = run(framer, [b"a" * 20 + b"\r", b"\nnext\n"])
    assert events == [LineTooLong(dropped=20), b"next", EOF]


@pytest.mark.parametrize("ending", [b"", b"\r", b"\n", b"\r\n"])
def test_over_long_last_line_at_eof(ending: bytes) -> None:
    assert three_ways(b"ok\n" + b"q" * 30 + ending, max_line_bytes=10) == [
        b"ok",
        LineTooLong(dropped=30),
        EOF,
    ]


def test_huge_line_without_newline_keeps_the_buffer_bounded() -> None:
    limit = 1024 * 1024
    chunk = b"A" * 65536
    framer = LineFramer(max_line_bytes=limit)
    total = 100 * 1024 * 1024
    for _ in range(total // len(chunk)):
        framer.receive_data(chunk)
        assert framer.next_event() is NEED_DATA
        assert framer.buffered_bytes <= limit + 1
    framer.receive_data(b"\r\n" + b'{"after": true}\n')
    assert framer.next_event() == LineTooLong(dropped=total)
    assert framer.next_event() == b'{"after": true}'
    assert framer.next_event() is NEED_DATA


def test_data_after_eof_is_a_local_error_but_repeated_eof_is_fine() -> None:
    framer = LineFramer()
    framer.receive_data(b"a\n")
    framer.receive_data(b"")
    framer.receive_data(b"")
    with pytest.raises(LocalProtocolError):
        framer.receive_data(b"b\n")
    assert framer.next_event() == b"a"
    assert framer.next_event() is EOF


def test_max_line_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        LineFramer(max_line_bytes=0)
    assert LineFramer().max_line_bytes == 4 * 1024 * 1024


def test_frame_message() -> None:
    assert frame_message(b'{"a":1}') == b'{"a":1}\n'
    for bad in (b"a\nb", b"a\r", b"", b" \t "):
        with pytest.raises(ValueError, match="framed message"):
            frame_message(bad)


# Streams built from pieces that matter to the framer, plus arbitrary bytes.
_pieces = st.one_of(
    st.sampled_from([b"\n", b"\r\n", b"\r", b" ", b"\t", b"{}", b'{"id":1}', b"x" * 9]),
    st.binary(max_size=12),
)
_streams = st.lists(_pieces, max_size=40).map(b"".join)


@st.composite
def _chunked(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=300)
@given(stream=_streams, max_line_bytes=st.integers(1, 16), data=st.data())
def test_any_chunking_matches_the_reference(
    stream: bytes, max_line_bytes: int, data: st.DataObject
) -> None:
    expected = reference(stream, max_line_bytes)
    assert three_ways(stream, max_line_bytes) == expected
    chunks = data.draw(_chunked(stream))
    framer = LineFramer(max_line_bytes)
    assert run(framer, chunks) == expected
    assert framer.buffered_bytes == 0


@given(stream=st.binary(max_size=300), data=st.data())
def test_arbitrary_bytes_never_raise_and_stay_bounded(stream: bytes, data: st.DataObject) -> None:
    framer = LineFramer(max_line_bytes=8)
    for chunk in data.draw(_chunked(stream)):
        framer.receive_data(chunk)
        while framer.next_event() is not NEED_DATA:
            pass
        assert framer.buffered_bytes <= 8 + 1


_messages = (
    st.binary(min_size=1)
    .map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))
    .filter(lambda b: bool(b) and not b.isspace())
)


@given(messages=st.lists(_messages, max_size=20))
def test_frame_message_round_trips(messages: list[bytes]) -> None:
    stream = b"".join(frame_message(m) for m in messages)
    assert three_ways(stream, max_line_bytes=1 << 20) == [*messages, EOF]


def run_mixed(framer: LineFramer, chunks: list[bytes], many: list[bool]) -> list[FramerEvent]:
    """As :func:`run`, asking :meth:`LineFramer.next_lines` first whenever ``many`` says
    (cycled), else :meth:`LineFramer.next_event`."""
    events: list[FramerEvent] = []
    turns = itertools.cycle(many or [False])
    for chunk in [*chunks, b""]:
        framer.receive_data(chunk)
        while True:
            if next(turns):
                lines = framer.next_lines()
                assert all(type(line) is bytes for line in lines)
                events += lines
                if lines:
                    continue
            event = framer.next_event()
            if event is NEED_DATA or event is EOF:
                break
            events.append(event)
    assert framer.next_event() is EOF
    return [*events, EOF]


def test_next_lines_hands_over_a_pipelined_read_at_once() -> None:
    lines = [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i for i in range(100)]
    framer = LineFramer()
    framer.receive_data(b"\n".join(lines) + b"\n \n\n" + b'{"partial')
    assert framer.next_lines() == lines
    assert framer.next_lines() == []
    assert framer.next_event() is NEED_DATA
    assert framer.buffered_bytes == len(b'{"partial')


@pytest.mark.parametrize(
    "stream",
    [b"a\r\nb\n", b"a\nb\r\n", b"ok\n" + b"x" * 20 + b"\nok2\n", b"a\n" + b"x" * 30 + b"\n"],
)
def test_next_lines_leaves_crs_and_over_long_lines_to_next_event(stream: bytes) -> None:
    framer = LineFramer(max_line_bytes=16)
    framer.receive_data(stream)
    assert framer.next_lines() == []  # nothing consumed: next_event says it all
    assert run(framer, []) == reference(stream, 16)


@settings(max_examples=300)
@given(
    stream=_streams,
    max_line_bytes=st.integers(1, 16),
    many=st.lists(st.booleans(), max_size=6),
    data=st.data(),
)
def test_next_lines_mixed_with_next_event_matches_the_reference(
    stream: bytes, max_line_bytes: int, many: list[bool], data: st.DataObject
) -> None:
    chunks = data.draw(_chunked(stream))
    framer = LineFramer(max_line_bytes)
    assert run_mixed(framer, chunks, many) == reference(stream, max_line_bytes)
    assert framer.buffered_bytes == 0
