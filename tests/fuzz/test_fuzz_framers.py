"""Fuzzing the NDJSON framer and the SSE decoder: any bytes, split anywhere.

Properties: nothing raises; how the bytes are split never changes the events; memory stays
within the documented bound (the limit plus one chunk) while the caller drains events.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.settings import FUZZ
from trimcp.protocol.framing import EOF, NEED_DATA, LineFramer
from trimcp.protocol.sse import SSEDecoder

# Bytes rich in what the framers care about: line endings, field names, BOMs, UTF-8.
_PIECES = st.sampled_from(
    [
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b":",
        b" ",
        b"data:",
        b"data: ",
        b"id:",
        b"id: 1",
        b"event:",
        b"retry:",
        b"retry: 10",
        b"retry: 99999999999999999999",
        b"\xef\xbb\xbf",
        b"{}",
        b'{"jsonrpc":"2.0"}',
        b"\x00",
        b"\xff",
        b"\xc3\xa9",
        b"\xed\xa0\x80",
        b"x" * 40,
    ]
)
_STREAMS = st.one_of(
    st.binary(max_size=600),
    st.lists(st.one_of(_PIECES, st.binary(max_size=8)), max_size=80).map(b"".join),
)


def _split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks, last = [], 0
    for point in [*points, len(stream)]:
        if point > last:
            chunks.append(stream[last:point])
            last = point
    return chunks


def _drain(decoder: LineFramer | SSEDecoder, chunks: list[bytes], bound: int) -> list[object]:
    events: list[object] = []
    for chunk in [*chunks, b""]:
        decoder.receive_data(chunk)
        assert decoder.buffered_bytes <= bound + len(chunk)
        while (event := decoder.next_event()) is not NEED_DATA and event is not EOF:
            events.append(event)
        if event is EOF:
            break
    return events


@FUZZ
@given(
    stream=_STREAMS, cuts=st.lists(st.integers(0, 10_000), max_size=12), limit=st.integers(1, 64)
)
def test_the_ndjson_framer_takes_any_bytes_split_anywhere(
    stream: bytes, cuts: list[int], limit: int
) -> None:
    whole = _drain(LineFramer(limit), [stream] if stream else [], limit + 1)
    split = _drain(LineFramer(limit), _split(stream, cuts), limit + 1)
    assert split == whole
    for event in whole:
        if isinstance(event, bytes):
            assert len(event) <= limit
            assert b"\n" not in event


@FUZZ
@given(
    stream=_STREAMS, cuts=st.lists(st.integers(0, 10_000), max_size=12), limit=st.integers(1, 128)
)
def test_the_sse_decoder_takes_any_bytes_split_anywhere(
    stream: bytes, cuts: list[int], limit: int
) -> None:
    whole_decoder, split_decoder = SSEDecoder(limit), SSEDecoder(limit)
    # The documented bound: the limit (and a line ending) plus one chunk.
    bound = limit + 2
    whole = _drain(whole_decoder, [stream] if stream else [], bound)
    split = _drain(split_decoder, _split(stream, cuts), bound)
    assert split == whole
    assert split_decoder.last_event_id == whole_decoder.last_event_id
    assert split_decoder.retry_ms == whole_decoder.retry_ms
