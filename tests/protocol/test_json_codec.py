"""The JSON codec's memory: an encoded message keeps only its own bytes allocated."""

from __future__ import annotations

import tracemalloc

import pytest

from trimcp.protocol.jsonrpc import dump_json, parse_json


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
