"""The JSON codec's memory: an encoded message keeps only its own bytes allocated."""

from __future__ import annotations

import tracemalloc

import pytest

from trimcp.protocol.jsonrpc import InvalidMessage, dump_json, holds_long_digit_run, parse_json


@pytest.mark.parametrize("length", [10, 1_000, 5_000, 100_000])
def test_an_encoded_message_keeps_no_spare_buffer(length: int) -> None:
    # Regression: orjson's output kept its whole growth buffer (4 KiB for a 13-byte
    # message, 64 KiB for a 5 KB one), which every event store entry paid for.
    value = {"text": "a" * length}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [dump_json(value) for _ in range(20)]
        held = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert parse_json(kept[0]) == value
    assert held < len(kept[0]) + 200


@pytest.mark.parametrize(
    "number",
    [2**63 - 1, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**18, -(10**18), 10**30],
)
@pytest.mark.parametrize("as_bytes", [True, False], ids=["bytes", "str"])
def test_integers_near_the_64_bit_edges_parse_exactly(number: int, as_bytes: bool) -> None:
    # orjson reads integers beyond 64 bits (2**64, -2**63 - 1) as floats: the digit-run
    # check must send every such text to the stdlib, from bytes and from str.
    text = f'{{"id":{number},"n":[{number}]}}'
    parsed = parse_json(text.encode() if as_bytes else text)
    assert parsed == {"id": number, "n": [number]}
    assert type(parsed["id"]) is int
    assert type(parsed["n"][0]) is int


@pytest.mark.parametrize(
    ("text", "held"),
    [
        (b"", False),
        (b'{"id":' + b"9" * 18 + b"}", False),
        (b'{"id":' + b"9" * 19 + b"}", True),
        (b'{"id":-' + b"1" * 19 + b"}", True),
        (b'{"a":"' + b"0" * 25 + b'"}', True),  # inside a string too (harmless)
        (b"1" * 10 + b"\n" + b"2" * 10, False),  # a line break ends a run
        (b"1" * 18 + b".5", False),
    ],
)
def test_holds_long_digit_run_finds_runs_of_19_digits(text: bytes, held: bool) -> None:
    assert holds_long_digit_run(text) is held


@pytest.mark.parametrize("number", [10**18 - 1, -(10**18 - 1), 2**53, 7])
def test_a_screened_text_parses_as_it_would_unscreened(number: int) -> None:
    # A reader that screened a read's lines at once (no run of 19 digits) parses each
    # with screened=True: the same value, the same refusals.
    text = f'{{"id":{number},"n":[{number}, 1.5]}}'.encode()
    assert not holds_long_digit_run(text)
    assert parse_json(text, True) == parse_json(text) == {"id": number, "n": [number, 1.5]}
    for bad in (b'{"id":1,', b'{"id":1,"a":"\\ud800"}', b"\xef\xbb\xbf{}"):
        with pytest.raises(InvalidMessage) as screened:
            parse_json(bad, True)
        with pytest.raises(InvalidMessage) as plain:
            parse_json(bad)
        assert (screened.value.code, str(screened.value)) == (plain.value.code, str(plain.value))
