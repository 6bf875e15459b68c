"""Tests for the SSE encoder and incremental decoder (trimcp.protocol.sse)."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trimcp.errors import LocalProtocolError
from trimcp.protocol.framing import EOF, NEED_DATA
from trimcp.protocol.sse import (
    EventTooLarge,
    SSEDecoder,
    SSEDecoderEvent,
    SSEEvent,
    encode_comment,
    encode_event,
)

BOM = b"\xef\xbb\xbf"


def run(decoder: SSEDecoder, chunks: list[bytes], *, eof: bool = True) -> list[SSEDecoderEvent]:
    """Feed ``chunks`` (then end of input), draining events after each; return them all."""
    events: list[SSEDecoderEvent] = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        while (event := decoder.next_event()) is not NEED_DATA:
            assert event is not EOF
            events.append(event)
    if eof:
        decoder.receive_data(b"")
        while (event := decoder.next_event()) is not EOF:
            assert event is not NEED_DATA, "NEED_DATA after end of input"
            events.append(event)
        events.append(event)
        assert decoder.next_event() is EOF  # EOF is sticky
    return events


def drain_after_eof(decoder: SSEDecoder, stream: bytes) -> list[SSEDecoderEvent]:
    """Feed all of ``stream`` and end of input before asking for any event."""
    decoder.receive_data(stream)
    decoder.receive_data(b"")
    events: list[SSEDecoderEvent] = []
    while (event := decoder.next_event()) is not EOF:
        assert event is not NEED_DATA
        events.append(event)
    return [*events, EOF]


def three_ways(stream: bytes, max_event_bytes: int = 1024) -> list[SSEDecoderEvent]:
    """Events for ``stream`` fed whole, byte by byte, and with trailing data; all must agree."""
    whole = run(SSEDecoder(max_event_bytes), [stream] if stream else [])
    bytewise = run(SSEDecoder(max_event_bytes), [stream[i : i + 1] for i in range(len(stream))])
    assert bytewise == whole
    assert drain_after_eof(SSEDecoder(max_event_bytes), stream) == whole
    if stream.endswith(b"\n\n"):
        # The start of a further event must not change or delay anything before it (nor be
        # over the limit itself).
        more = b"data: more" if max_event_bytes >= 10 else b":"
        trailing = run(SSEDecoder(max_event_bytes), [stream + more], eof=False)
        assert trailing == whole[:-1]
    return whole


def ev(data: str, **kwargs: object) -> SSEEvent:
    return SSEEvent(data=data, **kwargs)  # type: ignore[arg-type]


# The first four are the examples in the WHATWG spec's "event stream interpretation".
@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b"data: YHOO\ndata: +2\ndata: 10\n\n", [ev("YHOO\n+2\n10")]),
        (
            b": test stream\n\ndata: first event\nid: 1\n\n"
            b"data:second event\nid\n\ndata:  third event\n\n",
            [ev("first event", id="1"), ev("second event"), ev(" third event")],
        ),
        (b"data\n\ndata\ndata\n\ndata:", [ev(""), ev("\n")]),
        (b"data:test\n\ndata: test\n\n", [ev("test"), ev("test")]),
        (b"event: add\ndata: 73857293\n\n", [ev("73857293", event="add")]),
        (b"event:\ndata: x\n\n", [ev("x")]),  # empty type means "message"
        (b"data: a\r\ndata: b\r\n\r\n", [ev("a\nb")]),
        (b"data: a\rdata: b\r\rdata: c\n\n", [ev("a\nb"), ev("c")]),
        (b"data: a\n\r\n", [ev("a")]),
        (b"data: no blank line at the end\n", []),  # incomplete event is discarded
        (b"data: x", []),
        (b"id: 7\n\n", []),  # no data: nothing dispatched
        (b"data:\n\n", [ev("")]),  # a data field, empty: dispatched
        (b"foo: bar\ndata: x\nbaz\n\n", [ev("x")]),  # unknown fields ignored
        (b"data:   two spaces\n\n", [ev("  two spaces")]),  # only one space is stripped
        (b"data:a:b: c\n\n", [ev("a:b: c")]),  # only the first colon splits
        (b":comment only\n\n: another\n", []),
        (b"data: x\n:comment inside\ndata: y\n\n", [ev("x\ny")]),
        (b"DATA: x\ndata : y\n\n", []),  # names are case- and space-sensitive
        (b"retry: 3000\ndata: x\n\n", [ev("x", retry_ms=3000)]),
        (b"retry: 30s\ndata: x\n\nretry: -1\ndata: y\n\n", [ev("x"), ev("y")]),
        (b"retry:\ndata: x\n\n", [ev("x")]),
        (b"retry: \xd9\xa3\ndata: x\n\n", [ev("x")]),  # Arabic-Indic digit: not ASCII
        (b"id: 1\x00\ndata: x\n\n", [ev("x")]),  # id with NUL ignored
        (
            b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
            [ev("a", id="1"), ev("b", id="1"), ev("c")],
        ),
        (b"data: \xff\xfe ok \xe2\x82\n\n", [ev("\ufffd\ufffd ok \ufffd")]),
        (BOM + b"data: bom\n\n", [ev("bom")]),
        (BOM + BOM + b"data: x\n\n", []),  # only one BOM is skipped: "\ufeffdata" is unknown
        (b"data: \xef\xbb\xbfinside\n\n", [ev("\ufeffinside")]),
        (b"\xef\xbbdata: x\n\n", []),  # half a BOM is just bytes of the field name
    ],
)
def test_examples_three_ways(stream: bytes, expected: list[SSEEvent]) -> None:
    assert three_ways(stream) == [*expected, EOF]


def test_cr_at_end_of_chunk_and_lf_at_start_of_next_is_one_line_ending() -> None:
    events = run(SSEDecoder(), [b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert events == [ev("a\nb"), EOF]
    # A CR alone, then more text: the CR ended the line by itself.
    assert run(SSEDecoder(), [b"data: a\r", b"data: b\r", b"\r"]) == [ev("a\nb"), EOF]


def test_bom_split_across_chunks() -> None:
    assert run(SSEDecoder(), [b"\xef", b"\xbb", b"\xbfdata: x\n\n"]) == [ev("x"), EOF]


def test_last_event_id_persists_and_updates_without_data() -> None:
    decoder = SSEDecoder()
    assert decoder.last_event_id is None
    decoder.receive_data(b"id: 5\ndata: a\n\n")
    assert decoder.next_event() == ev("a", id="5")
    assert decoder.last_event_id == "5"
    decoder.receive_data(b"id: 6\n")
    assert decoder.next_event() is NEED_DATA
    assert decoder.last_event_id == "5"  # takes effect at the end of the block
    decoder.receive_data(b"\n")
    assert decoder.next_event() is NEED_DATA  # no data: nothing dispatched ...
    assert decoder.last_event_id == "6"  # ... but the id still counts
    decoder.receive_data(b"id:\n\n")
    assert decoder.next_event() is NEED_DATA
    assert decoder.last_event_id is None  # an empty id resets it


def test_retry_is_kept_on_the_decoder_across_events() -> None:
    decoder = SSEDecoder()
    assert decoder.retry_ms is None
    assert run(decoder, [b"retry: 0500\n\ndata: x\n\nretry: 1" + b"9" * 5000 + b"\n\n"]) == [
        ev("x"),
        EOF,
    ]
    assert decoder.retry_ms == 500  # the absurd 5001-digit value was ignored


def test_event_too_large_is_reported_early_and_memory_stays_bounded() -> None:
    limit = 1024 * 1024
    chunk = b"A" * 65536
    decoder = SSEDecoder(max_event_bytes=limit)
    decoder.receive_data(b"id: 1\nevent: big\ndata: ")
    events: list[SSEDecoderEvent] = []
    for _ in range(100 * 1024 * 1024 // len(chunk)):
        decoder.receive_data(chunk)
        while (event := decoder.next_event()) is not NEED_DATA:
            events.append(event)
        assert decoder.buffered_bytes <= limit
    assert events == [EventTooLarge(limit=limit)]
    decoder.receive_data(b"\ndata: more of the big one\n\r\nid: 2\ndata: after\n\n")
    assert decoder.next_event() == ev("after", id="2")  # type "message": big's was reset
    assert decoder.next_event() is NEED_DATA


def test_many_lines_adding_up_past_the_limit() -> None:
    small = b"data: 123456789\n"  # 15 bytes of field line each
    stream = small * 10 + b"\n" + b"data: ok\n\n"
    assert three_ways(stream, max_event_bytes=149) == [EventTooLarge(limit=149), ev("ok"), EOF]
    assert three_ways(stream, max_event_bytes=150)[0] == ev("123456789\n" * 9 + "123456789")


def test_huge_comment_is_skipped_silently_with_bounded_memory() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    decoder.receive_data(b"data: a\n: ")
    for _ in range(1000):
        decoder.receive_data(b"c" * 1000)
        assert decoder.next_event() is NEED_DATA
        assert decoder.buffered_bytes <= 100
    decoder.receive_data(b"\n\n")
    assert decoder.next_event() == ev("a")


def test_event_too_large_at_eof_is_still_reported() -> None:
    assert three_ways(b"data: " + b"x" * 50, max_event_bytes=20) == [
        EventTooLarge(limit=20),
        EOF,
    ]


def test_data_after_eof_is_a_local_error_but_repeated_eof_is_fine() -> None:
    decoder = SSEDecoder()
    decoder.receive_data(b"data: a\n\n")
    decoder.receive_data(b"")
    decoder.receive_data(b"")
    with pytest.raises(LocalProtocolError):
        decoder.receive_data(b"data: b\n\n")
    assert decoder.next_event() == ev("a")
    assert decoder.next_event() is EOF


def test_max_event_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        SSEDecoder(max_event_bytes=0)


def test_encode_event_layout() -> None:
    assert encode_event("x") == b"data: x\n\n"
    assert encode_event("") == b"data: \n\n"
    assert encode_event("a\nb\r\nc\rd") == b"data: a\ndata: b\ndata: c\ndata: d\n\n"
    assert encode_event("{}", event="message", id="42", retry_ms=1000) == (
        b"event: message\nid: 42\nretry: 1000\ndata: {}\n\n"
    )
    assert encode_event("\u00e9") == "data: \u00e9\n\n".encode()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"event": "a\nb"},
        {"event": "a\r"},
        {"id": "1\n"},
        {"id": "1\x00"},
        {"retry_ms": -1},
        {"retry_ms": True},
        {"retry_ms": 1.5},
    ],
)
def test_encode_event_rejects_what_would_not_arrive_intact(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"SSE|retry_ms"):
        encode_event("x", **kwargs)  # type: ignore[arg-type]


def test_encode_comment() -> None:
    assert encode_comment("ping") == b": ping\n"
    assert encode_comment("a\nb") == b": a\n: b\n"
    stream = encode_event("x") + encode_comment("keep-alive") + encode_event("y")
    assert three_ways(stream) == [ev("x"), ev("y"), EOF]


# --- properties -------------------------------------------------------------------------


def reference(stream: bytes, max_event_bytes: int) -> list[SSEDecoderEvent]:
    """What the decoder must produce, computed non-incrementally from the whole stream."""
    body = stream.removeprefix(BOM)
    *lines, tail = re.split(rb"\r\n|\r|\n", body)
    events: list[SSEDecoderEvent] = []
    data: list[str] = []
    event_type, id_buffer, retry, size, skipping = "", "", None, 0, False
    for line in lines:
        if not line:
            if data and not skipping:
                events.append(
                    SSEEvent(
                        event=event_type or "message",
                        data="\n".join(data),
                        id=id_buffer or None,
                        retry_ms=retry,
                    )
                )
            data, event_type, retry, size, skipping = [], "", None, 0, False
        elif skipping or line.startswith(b":"):
            continue
        elif (size := size + len(line)) > max_event_bytes:
            events.append(EventTooLarge(limit=max_event_bytes))
            skipping = True
        else:
            name, _, value = line.decode("utf-8", "replace").partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "event":
                event_type = value
            elif name == "id" and "\0" not in value:
                id_buffer = value
            elif (
                name == "retry"
                and re.fullmatch("[0-9]+", value)
                and len(value.lstrip("0")) <= 18  # longer values are ignored, not parsed
            ):
                retry = int(value)
    if tail and not skipping and not tail.startswith(b":") and size + len(tail) > max_event_bytes:
        events.append(EventTooLarge(limit=max_event_bytes))
    events.append(EOF)
    return events


_LINES = [b""] * 6 + [
    b"data: x",
    b"data:y",
    b"data",
    b"data:",
    b"data:  two",
    b"data: \xe2\x82",
    b"data: \xc3\xa9",
    b"data: " + BOM,
    b"event: e",
    b"event:",
    b"id: 7",
    b"id",
    b"id: 8\x00",
    b"retry: 12",
    b"retry: 1x",
    b"retry:007",
    b": comment",
    b":",
    b"foo: bar",
    b"DATA: x",
    b"data : x",
]
# Mostly well-formed lines, so that events do get dispatched, with arbitrary bytes mixed in.
_lines = st.integers(0, 9).flatmap(
    lambda n: st.binary(max_size=6) if n == 0 else st.sampled_from(_LINES)
)
_line_ends = st.sampled_from([b"\n", b"\r", b"\r\n"])
_streams = st.builds(
    lambda bom, lines, tail: bom + b"".join(line + end for line, end in lines) + tail,
    st.sampled_from([b"", BOM]),
    st.lists(st.tuples(_lines, _line_ends), max_size=30),
    st.binary(max_size=4),
)


@st.composite
def _chunked(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=300)
@given(stream=_streams, max_event_bytes=st.integers(1, 40) | st.just(1024), data=st.data())
def test_any_chunking_matches_the_reference(
    stream: bytes, max_event_bytes: int, data: st.DataObject
) -> None:
    expected = reference(stream, max_event_bytes)
    assert three_ways(stream, max_event_bytes) == expected
    decoder = SSEDecoder(max_event_bytes)
    assert run(decoder, data.draw(_chunked(stream))) == expected
    assert decoder.buffered_bytes == 0


@given(stream=st.binary(max_size=300), data=st.data())
def test_arbitrary_bytes_never_raise_and_stay_bounded(stream: bytes, data: st.DataObject) -> None:
    decoder = SSEDecoder(max_event_bytes=16)
    for chunk in data.draw(_chunked(stream)):
        decoder.receive_data(chunk)
        while decoder.next_event() is not NEED_DATA:
            pass
        assert decoder.buffered_bytes <= 16


_single_line = st.text().filter(lambda s: "\r" not in s and "\n" not in s)


@given(
    events=st.lists(
        st.tuples(
            st.text(),
            st.none() | _single_line,
            st.none() | _single_line.filter(lambda s: "\0" not in s),
            st.none() | st.integers(0, 10**12),
        ),
        max_size=8,
    ),
    data=st.data(),
)
def test_encode_decode_round_trip(
    events: list[tuple[str, str | None, str | None, int | None]], data: st.DataObject
) -> None:
    stream = b"".join(
        encode_event(text, event=event, id=id_, retry_ms=retry)
        for text, event, id_, retry in events
    )
    expected: list[SSEDecoderEvent] = []
    last_id: str | None = None
    for text, event, id_, retry in events:
        if id_ is not None:
            last_id = id_ or None
        expected.append(
            SSEEvent(
                event=event or "message",
                data=re.sub(r"\r\n|\r", "\n", text),
                id=last_id,
                retry_ms=retry,
            )
        )
    decoder = SSEDecoder(max_event_bytes=1 << 20)
    assert run(decoder, data.draw(_chunked(stream))) == [*expected, EOF]
    assert decoder.last_event_id == last_id
