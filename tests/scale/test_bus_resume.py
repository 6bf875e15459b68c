"""A change raised while a 2025 session's GET stream is away (the client reconnecting it) is
not lost: the replica the stream last attached to stores it, and the client's resume with
``Last-Event-ID`` on another replica replays it, once. Raw HTTP straight to three replicas
of ``tests/scale/bus_app.py`` sharing a real Redis.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import trio

from tests.scale.peers import RedisServer, Replica
from trimcp.stores.redis_client import RedisClient

HERE = Path(__file__).resolve().parent
VERSION = "2025-11-25"


def post(port: int, message: Mapping[str, object], session: str | None = None) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
    }
    if session is not None:
        headers["mcp-session-id"] = session
    try:
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        body = response.read().decode()
        return response.status, response.getheader("mcp-session-id") or body
    finally:
        connection.close()


def get_events(
    port: int, session: str, last_event_id: str | None, count: int
) -> list[tuple[str, str]]:
    """Open a GET stream, read ``count`` events (id, data), and hang up."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {
        "accept": "text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": VERSION,
    }
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    events: list[tuple[str, str]] = []
    try:
        connection.request("GET", "/mcp", headers=headers)
        response = connection.getresponse()
        assert response.status == 200
        event_id, data = "", ""
        while len(events) < count:
            line = response.fp.readline().decode().rstrip("\r\n")
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
            elif not line and (event_id or data):
                events.append((event_id, data))
                event_id, data = "", ""
    finally:
        connection.close()
    return events


@pytest.fixture(scope="module")
def replicas(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Replica]]:
    marks = tmp_path_factory.mktemp("marks")
    started: list[Replica] = []
    try:
        for _ in range(3):
            started.append(
                Replica(redis_server.url, app=HERE / "bus_app.py", env={"BUS_MARKS": str(marks)})
            )
        yield started
    finally:
        for replica in started:
            replica.stop()


async def stored_list_changes(redis_url: str, session: str) -> int:
    client = RedisClient(redis_url)
    try:
        entries = await client.execute("XRANGE", f"trimcp:ev:{session}", "-", "+")
    finally:
        await client.aclose()
    assert isinstance(entries, list)
    return sum(b"notifications/tools/list_changed" in b"".join(fields) for _, fields in entries)


def test_a_change_while_the_get_stream_reconnects_is_replayed_once(
    replicas: list[Replica], redis_server: RedisServer
) -> None:
    a, b, c = replicas
    status, session = post(
        a.port,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
    )
    assert status == 200
    assert (
        post(a.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    )
    # The GET stream opens on b (its priming event names where to resume), then drops.
    ((priming, _),) = get_events(b.port, session, None, 1)
    # A change raised on a while no stream is open anywhere: b, where the stream was last,
    # stores it for the resume.
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "grow", "arguments": {"name": "g"}},
    }
    assert post(a.port, call, session)[0] == 200
    deadline = time.monotonic() + 10
    while trio.run(stored_list_changes, redis_server.url, session) == 0:
        assert time.monotonic() < deadline, "the change was never stored"
        time.sleep(0.05)  # b hears it through Redis: poll its effect (bounded)
    # The client resumes on c: the change is replayed, once.
    (replayed,) = get_events(c.port, session, priming, 1)
    assert "notifications/tools/list_changed" in replayed[1]
    assert trio.run(stored_list_changes, redis_server.url, session) == 1
