"""Follows of another replica's stream share one reader and are budgeted across replicas,
and so are 2026-07-28 listen streams (issue 30, defect 3 and the listen-budget decision).

Three replicas of ``tests/scale/budget_app.py`` on a real Redis: calls run on ``a``; their
clients resume them on ``b`` and ``c``, which follow what ``a`` stores. Raw HTTP for the
2025-11-25 resumes, trimcp's client for the 2026-07-28 listen streams.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.scale.peers import RedisServer, Replica
from tests.scale.raw_session import open_resume, open_session, start_slow_call
from trimcp import connect_http
from trimcp.errors import McpError
from trimcp.stores.redis_client import RedisClient

BUDGET_APP = Path(__file__).with_name("budget_app.py")
WAIT = 20.0
#: Follows opened at once on one replica (before: one Redis connection each).
FOLLOWS = 40


@pytest.fixture(scope="module")
def replicas(redis_server: RedisServer) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for _ in range(3):
            started.append(Replica(redis_server.url, app=BUDGET_APP, script=True))
        yield started
    finally:
        for replica in started:
            replica.stop()


async def _redis(url: str, *command: str | int) -> object:
    client = RedisClient(url)
    try:
        return await client.execute(*command)
    finally:
        await client.aclose()


def redis(redis_server: RedisServer, *command: str | int) -> object:
    return trio.run(_redis, redis_server.url, *command)


def connected_clients(redis_server: RedisServer) -> int:
    info = redis(redis_server, "INFO", "clients")
    assert isinstance(info, bytes)
    line = next(x for x in info.decode().splitlines() if x.startswith("connected_clients:"))
    return int(line.split(":")[1]) - 1  # not ours


def follows_counted(redis_server: RedisServer) -> int:
    count = redis(redis_server, "ZCARD", "trimcp:lease:follow")
    assert isinstance(count, int)
    return count


def follow(port: int, session: str, last_event_id: str) -> http.client.HTTPConnection:
    """Open a resume that the replica follows (its head is sent once the follow is
    admitted); the caller closes the connection."""
    connection, response = open_resume(port, session, last_event_id)
    if response.status != 200:
        body = response.read()
        connection.close()
        raise AssertionError(f"{response.status}: {body[:300]!r}")
    return connection


def refused(port: int, session: str, last_event_id: str) -> tuple[int, bytes]:
    connection, response = open_resume(port, session, last_event_id)
    try:
        return response.status, response.read()
    finally:
        connection.close()


def test_follows_share_one_reader_are_budgeted_across_replicas_and_end(
    replicas: list[Replica], redis_server: RedisServer
) -> None:
    a, b, c = replicas
    sessions = [open_session(a.port) for _ in range(3)]
    # A long call per session on a, read up to its first progress event: its next is
    # 100 s away, so a resume from there has nothing to replay and is followed.
    last = [
        start_slow_call(a.port, s, f"long{n}", steps=3, delay=100.0, progress=1)[-1]
        for n, s in enumerate(sessions)
    ]
    before = connected_clients(redis_server)
    opened: list[http.client.HTTPConnection] = []
    try:
        for n in range(FOLLOWS):  # 14, 13 and 13 per session, all on b
            opened.append(follow(b.port, sessions[n % 3], last[n % 3]))
        # Before: one Redis connection of its own per follow (+40).
        assert connected_clients(redis_server) - before < 10
        assert follows_counted(redis_server) == FOLLOWS
        # A session's share (16) holds across replicas: 14 on b, 2 more on c, no 17th.
        opened += [follow(c.port, sessions[0], last[0]) for _ in range(2)]
        status, body = refused(c.port, sessions[0], last[0])
        assert status == 429, body
        assert b"HttpServerConfig.max_follows_per_session" in body
        # So does the (anonymous) principal's share (45): 42 so far, 3 more, no 46th.
        opened += [follow(c.port, sessions[1 + n % 2], last[1 + n % 2]) for n in range(3)]
        status, body = refused(c.port, sessions[2], last[2])
        assert status == 429, body
        assert b"HttpServerConfig.max_follows_per_principal" in body
    finally:
        for connection in opened:
            connection.close()
    # Each follow ends with its request: nothing counted, nothing held.
    deadline = time.monotonic() + WAIT
    while follows_counted(redis_server) and time.monotonic() < deadline:
        time.sleep(0.05)  # other processes: nothing to wait on but what Redis holds
    assert follows_counted(redis_server) == 0
    assert connected_clients(redis_server) - before < 10
    # And every key the replicas wrote expires (sessions, events, stream records, the
    # bus's keys of each session, leases, heartbeats).
    keys = redis(redis_server, "KEYS", "*")
    assert isinstance(keys, list)
    assert keys
    for key in keys:
        assert redis(redis_server, "PTTL", key.decode()) != -1, key


async def test_listen_streams_are_budgeted_across_replicas(
    replicas: list[Replica], redis_server: RedisServer
) -> None:
    # Before: each replica counted its own streams (N replicas let one principal hold N
    # times its share).
    _, b, c = replicas
    with trio.fail_after(WAIT):
        async with connect_http(b.url) as first, connect_http(c.url) as second:
            async with first.listen(tools_list_changed=True):
                with pytest.raises(McpError, match="listen_max_streams_per_principal"):
                    async with second.listen(tools_list_changed=True):
                        pass
            # Given back when b sees the stream end (another process: polled, bounded)...
            for _ in range(400):
                if not await _redis(redis_server.url, "ZCARD", "trimcp:lease:listen"):
                    break
                await trio.sleep(0.05)
            # ... and then c may open one.
            async with second.listen(tools_list_changed=True) as stream:
                assert stream.acknowledged is not None
