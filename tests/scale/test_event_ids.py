"""trimcp.stores.event_ids: a Last-Event-ID is read back only as the store writes one.

Pure functions, no Redis: every name the store mints parses back to what it says, and
each part just past its bound, or written otherwise than the store writes it, is refused
(None) before any Redis call.
"""

from __future__ import annotations

import pytest

from trimcp.protocol.jsonrpc import RequestId
from trimcp.stores.event_ids import (
    MAX_EVENT_ID_CHARS,
    MAX_NAMED_IDS,
    PRIMING,
    EventName,
    is_replica_id,
    name_requests,
    new_replica_id,
    parse_event_id,
    post_stream_name,
)

REPLICA = "0123456789ab"
U64 = 2**64 - 1


@pytest.mark.parametrize(
    "request_ids",
    [[7], [0], [-3], ["abc"], [""], ["é\ud800"], [1, "x", -2], [U64 * 10]],
)
def test_every_minted_name_parses_back(request_ids: list[RequestId]) -> None:
    local = post_stream_name(12, request_ids)
    parsed = parse_event_id(f"{REPLICA}.{local}_1700000000000-5")
    assert parsed == EventName(
        stream=f"{REPLICA}.{local}",
        owner=REPLICA,
        local=local,
        request_ids=tuple(request_ids),
        entry="1700000000000-5",
    )
    assert parsed.stored


def test_the_get_stream_and_post_streams_without_ids() -> None:
    get = parse_event_id("0_5-0")
    assert get == EventName(stream="0", owner=None, local="0", request_ids=None, entry="5-0")
    assert parse_event_id("0_0-0") is None  # the GET stream's priming events are stored
    post = parse_event_id(f"{REPLICA}.3_{PRIMING}")
    assert post is not None
    assert (post.local, post.request_ids, post.stored) == ("3", None, False)
    unstored = parse_event_id(f"{REPLICA}.3_0-9")
    assert unstored is not None
    assert not unstored.stored


@pytest.mark.parametrize(
    "entry",
    ["0-0", f"{U64}-{U64}", f"1-{U64}", f"{U64}-0", "18446744073709551614-1"],
)
def test_entries_up_to_64_bits_are_read(entry: str) -> None:
    assert parse_event_id(f"{REPLICA}.1_{entry}") is not None


@pytest.mark.parametrize(
    "entry",
    [
        f"{U64 + 1}-0",
        f"0-{U64 + 1}",
        "99999999999999999999-0",  # 20 digits, past 64 bits
        "01-0",  # a leading zero
        "1-01",
        "1",
        "1-",
        "-1",
        "1-2-3",
        "",
        "a-b",
    ],
)
def test_entries_not_written_by_redis_are_refused(entry: str) -> None:
    assert parse_event_id(f"{REPLICA}.1_{entry}") is None
    assert parse_event_id(f"0_{entry}") is None


@pytest.mark.parametrize(
    "stream",
    [
        "0123456789a.1",  # a replica id one short
        "0123456789abc.1",  # one long
        "0123456789AB.1",  # upper case
        "0123456789ab",  # no number
        "0123456789ab.",
        "0123456789ab.0",  # numbers count from 1
        "0123456789ab.01",
        "0123456789ab.12345678901234567890",  # 20 digits
        "0123456789ab.1.",  # an empty id list
        "0123456789ab.1.-0",  # ids written otherwise than the store writes them
        "0123456789ab.1.01",
        "0123456789ab.1.s4A",
        "0123456789ab.1.sff",  # not UTF-8
        "0123456789ab.1.1,,2",
        "0123456789ab.1.x",
        "1",
        "",
    ],
)
def test_streams_not_named_by_the_store_are_refused(stream: str) -> None:
    assert parse_event_id(f"{stream}_1-0") is None


def test_the_longest_number_is_read() -> None:
    assert parse_event_id(f"{REPLICA}.{'9' * 19}_1-0") is not None


def test_request_ids_are_named_up_to_their_bound() -> None:
    longest = [int("9" * MAX_NAMED_IDS)]
    assert name_requests(longest) == "9" * MAX_NAMED_IDS
    assert name_requests([int("9" * (MAX_NAMED_IDS + 1))]) is None
    assert name_requests([]) is None
    assert post_stream_name(4, []) == "4"
    assert post_stream_name(4, [int("9" * (MAX_NAMED_IDS + 1))]) == "4"
    parsed = parse_event_id(f"{REPLICA}.1.{'9' * MAX_NAMED_IDS}_1-0")
    assert parsed is not None
    assert parsed.request_ids == (int("9" * MAX_NAMED_IDS),)
    assert parse_event_id(f"{REPLICA}.1.{'9' * (MAX_NAMED_IDS + 1)}_1-0") is None


def test_the_longest_minted_id_is_read_and_one_longer_is_not() -> None:
    local = f"{'9' * 19}.{'9' * MAX_NAMED_IDS}"
    longest = f"{REPLICA}.{local}_{U64}-{U64}"
    assert len(longest) == MAX_EVENT_ID_CHARS
    assert parse_event_id(longest) is not None
    assert parse_event_id(longest + "0") is None


def test_replica_ids() -> None:
    made = new_replica_id()
    assert is_replica_id(made)
    assert made != new_replica_id()
    assert not is_replica_id(made.upper() + "X")
    assert not is_replica_id(made[:-1])
