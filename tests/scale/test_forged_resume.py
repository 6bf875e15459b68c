"""A ``Last-Event-ID`` is client input: a name the server could not have issued is refused
(400 "Unknown Last-Event-ID") before any work, writes nothing to Redis, and costs an
answer of a few hundred bytes, whatever it names (issue 30, defect 2). Raw HTTP straight
to two replicas of ``tests/scale/replica_app.py`` sharing a real Redis.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import trio

from tests.scale.peers import RedisServer, Replica
from tests.scale.raw_session import open_resume, open_session, read_events, start_slow_call
from trimcp.stores.redis_client import RedisClient

#: More than a refusal can take: what is read of an answer at most.
READ_AT_MOST = 1024 * 1024


@pytest.fixture(scope="module")
def replicas(redis_server: RedisServer) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for _ in range(2):
            started.append(Replica(redis_server.url))
        yield started
    finally:
        for replica in started:
            replica.stop()


async def _snapshot(url: str) -> dict[str, object]:
    """Every key but the replicas' heartbeats, with what it holds (length or value)."""
    client = RedisClient(url)
    try:
        keys = await client.execute("KEYS", "*")
        assert isinstance(keys, list)
        held: dict[str, object] = {}
        for raw in keys:
            key = raw.decode()
            if ":replica:" in key:
                continue  # rewritten every second by each replica
            kind = await client.execute("TYPE", key)
            if kind == b"stream":
                held[key] = ("stream", await client.execute("XLEN", key))
            elif kind == b"string":
                held[key] = ("string", await client.execute("GET", key))
            else:
                held[key] = (kind, None)
        return held
    finally:
        await client.aclose()


def snapshot(redis_server: RedisServer) -> dict[str, object]:
    return trio.run(_snapshot, redis_server.url)


def refused(port: int, session: str, last_event_id: str) -> tuple[int, bytes]:
    """The status of a resume and at most :data:`READ_AT_MOST` bytes of its body."""
    connection, response = open_resume(port, session, last_event_id)
    try:
        return response.status, response.read(READ_AT_MOST)
    finally:
        connection.close()


def test_a_forged_10kb_last_event_id_is_refused_and_writes_nothing(
    replicas: list[Replica], redis_server: RedisServer
) -> None:
    # The case: 2,222 request ids of a replica that never was. Before: 200, one
    # error per id stored in the session's Redis stream and sent back (23 MB).
    _, b = replicas
    session = open_session(b.port)
    forged = "0badc0ffee00.1." + ",".join(str(n) for n in range(2222)) + "_0-0"
    assert len(forged) > 10_000
    before = snapshot(redis_server)
    status, body = refused(b.port, session, forged)
    assert (status, len(body) < 1024) == (400, True), body[:300]
    assert b"Unknown Last-Event-ID" in body
    assert snapshot(redis_server) == before


@pytest.mark.parametrize(
    "forged",
    [
        "0badc0ffee00.1.7_0-0",  # a replica that never was: no record of the stream
        "0badc0ffee00.1.7_1-0",  # ... resumed after an entry of no stream
        "0badc0ffee00.01.7_0-0",  # a number the server never writes
        "0badc0ffee00.1.07_0-0",  # an id written otherwise than the server writes it
        "0badc0ffee00.1.sZZ_0-0",  # a string id that is not hex
        "0BADC0FFEE00.1.7_0-0",  # a replica id the server never makes
        "0badc0ffee00.1.7_99999999999999999999999-0",  # past Redis's entry ids
        "0badc0ffee00.1.7_0-0_0-0",
        "0_0-0",  # the GET stream's priming events are stored: never 0-0
    ],
)
def test_a_well_formed_looking_name_of_a_stream_never_made_is_refused(
    replicas: list[Replica], redis_server: RedisServer, forged: str
) -> None:
    # Before: the first one stored an error for request 7 ("replica 0badc0ffee00 that
    # was running this request stopped") and a marker key, for an hour.
    _, b = replicas
    session = open_session(b.port)
    before = snapshot(redis_server)
    status, body = refused(b.port, session, forged)
    assert status == 400, body[:300]
    assert b"Unknown Last-Event-ID" in body
    assert snapshot(redis_server) == before


def test_a_stream_a_live_replica_never_made_is_not_followed(
    replicas: list[Replica], redis_server: RedisServer
) -> None:
    # The name of a live replica (a, learnt from a real event id) with a stream number it
    # never used. Before: b followed it for ever on a Redis connection of its own.
    a, b = replicas
    session = open_session(a.port)
    priming, *_ = start_slow_call(a.port, session, "real", steps=2, delay=0.05)
    replica_id = priming.partition(".")[0]
    before = snapshot(redis_server)
    status, body = refused(b.port, session, f"{replica_id}.99.7_0-0")
    assert status == 400, body[:300]
    assert b"Unknown Last-Event-ID" in body
    assert snapshot(redis_server) == before


async def _gets(url: str) -> int:
    client = RedisClient(url)
    try:
        info = await client.execute("INFO", "commandstats")
        assert isinstance(info, bytes)
        found = re.search(rb"cmdstat_get:calls=(\d+)", info)
        return int(found[1]) if found else 0
    finally:
        await client.aclose()


@pytest.mark.parametrize("session", ["x" * 10_000, "not-a-session", "A" * 31, "A" * 33])
def test_a_session_id_the_server_could_not_have_made_costs_no_redis_call(
    replicas: list[Replica], redis_server: RedisServer, session: str
) -> None:
    # Session ids are 32 URL-safe characters (new_session_id): any other is 404 before
    # the store is asked. Before: a GET of the session's record (a 10 KB key) first.
    _, b = replicas
    before = trio.run(_gets, redis_server.url)
    status, body = refused(b.port, session, "0_1-0")
    assert status == 404, body[:300]
    assert trio.run(_gets, redis_server.url) == before


def test_a_real_stream_still_resumes_on_either_replica(replicas: list[Replica]) -> None:
    a, b = replicas
    session = open_session(a.port)
    priming, *_ = start_slow_call(a.port, session, "either", steps=2, delay=0.05)
    for port in (a.port, b.port):
        connection, response = open_resume(port, session, priming)
        try:
            assert response.status == 200
            events = read_events(response)
        finally:
            connection.close()
        assert any('"done either"' in event.get("data", "") for event in events), events
