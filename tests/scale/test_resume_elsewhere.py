"""A 2025-11-25 client resumes a call's stream (``GET`` with ``Last-Event-ID``) on a replica
that is not running the call: it gets the rest of the stream, as the call goes on
elsewhere, then the answer (or, if the running replica dies, an error naming it), never
an empty stream. Raw HTTP straight to two replicas of ``tests/scale/replica_app.py``
sharing a real Redis.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.scale.peers import RedisServer, Replica

VERSION = "2025-11-25"
HEADERS = {"mcp-protocol-version": VERSION}


@contextlib.contextmanager
def _post(
    port: int, message: Mapping[str, object], session: str | None
) -> Iterator[http.client.HTTPResponse]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {
        **HEADERS,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    if session is not None:
        headers["mcp-session-id"] = session
    try:
        connection.request("POST", "/mcp", json.dumps(message), headers)
        yield connection.getresponse()
    finally:
        connection.close()


def read_events(
    response: http.client.HTTPResponse, count: int | None = None
) -> list[dict[str, str]]:
    """SSE events (their fields) until ``count`` of them or the end of the stream."""
    events: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    while count is None or len(events) < count:
        raw = response.fp.readline()
        line = raw.decode().rstrip("\r\n")
        if line and ":" in line:
            name, _, value = line.partition(":")
            fields[name] = fields.get(name, "") + value.strip()
        elif fields:
            events.append(fields)
            fields = {}
        if not raw:
            break
    return events


def open_session(port: int) -> str:
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    with _post(port, initialize, None) as response:
        response.read()
        session = response.getheader("mcp-session-id")
        assert response.status == 200
    assert session
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    with _post(port, initialized, session) as response:
        response.read()
        assert response.status == 202
    return session


def start_slow_call(port: int, session: str, tag: str, steps: int, delay: float) -> str:
    """POST a ``slow`` call, read its priming event, hang up; the priming event's id."""
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "slow",
            "arguments": {"tag": tag, "steps": steps, "delay": delay},
            "_meta": {"progressToken": "p"},
        },
    }
    with _post(port, call, session) as response:
        assert response.status == 200
        (priming,) = read_events(response, 1)
    assert "id" in priming
    return priming["id"]


def resume(port: int, session: str, last_event_id: str) -> list[dict[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {
        **HEADERS,
        "accept": "text/event-stream",
        "mcp-session-id": session,
        "last-event-id": last_event_id,
    }
    try:
        connection.request("GET", "/mcp", headers=headers)
        response = connection.getresponse()
        assert response.status == 200
        return read_events(response)
    finally:
        connection.close()


@pytest.fixture(scope="module")
def replicas(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Replica]]:
    marks: Path = tmp_path_factory.mktemp("marks")
    started: list[Replica] = []
    try:
        for _ in range(2):
            started.append(Replica(redis_server.url, env={"SCALE_MARKS": str(marks)}))
        yield started
    finally:
        for replica in started:
            replica.stop()


def test_a_resume_on_another_replica_follows_the_call_to_its_answer(
    replicas: list[Replica],
) -> None:
    a, b = replicas
    session = open_session(a.port)
    priming = start_slow_call(a.port, session, "followed", steps=4, delay=0.3)
    # Resumed on b while a still runs the call: b follows what a stores, to the answer.
    events = resume(b.port, session, priming)
    messages = [json.loads(event["data"]) for event in events if event.get("data")]
    assert messages, "an empty stream"
    answer = messages[-1]
    assert answer.get("id") == 7, messages
    assert answer["result"]["content"][0]["text"] == "done followed"
    progress = [m["params"]["progress"] for m in messages if m.get("method")]
    assert progress == [1, 2, 3, 4]
    assert all(event.get("id") for event in events if event.get("data"))


def test_a_resume_followed_while_the_runner_dies_ends_with_an_error_naming_it(
    replicas: list[Replica],
) -> None:
    a, b = replicas
    session = open_session(a.port)
    priming = start_slow_call(a.port, session, "cut", steps=600, delay=0.1)
    a.kill()
    replicas[0] = a.respawn()
    events = resume(b.port, session, priming)
    messages = [json.loads(event["data"]) for event in events if event.get("data")]
    answer = messages[-1]
    assert answer.get("id") == 7, messages
    assert "stopped" in answer["error"]["message"], answer
    assert answer["error"]["data"]["replica"], answer
