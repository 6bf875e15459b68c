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
from typing import Any

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


def start_slow_call(
    port: int, session: str, tag: str, steps: int, delay: float, progress: int = 0
) -> list[str]:
    """POST a ``slow`` call, read its priming event and its first ``progress`` progress
    events, hang up; the ids of the events read."""
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
        events = read_events(response, 1 + progress)
    assert len(events) == 1 + progress
    assert all("id" in event for event in events)
    return [event["id"] for event in events]


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


def resume_until_answered(
    port: int, session: str, last_event_id: str
) -> tuple[list[dict[str, Any]], int]:
    """Resume as a client does: again from the last event id it got whenever a stream
    ends without the answer (each such stream must say ``retry``). The messages, and
    how many resumes it took."""
    messages: list[dict[str, Any]] = []
    for resumes in range(1, 100):
        events = resume(port, session, last_event_id)
        for event in events:
            if event.get("data"):
                assert event.get("id"), event
                last_event_id = event["id"]
                messages.append(json.loads(event["data"]))
        if messages and messages[-1].get("id") == 7:
            return messages, resumes
        assert any("retry" in event for event in events), f"ended with no answer: {events}"
    raise AssertionError(f"no answer after 99 resumes: {messages}")


def progress_of(messages: list[dict[str, Any]]) -> list[int]:
    return [m["params"]["progress"] for m in messages if m.get("method")]


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
    # Hung up after the first progress event: the next is a second away.
    *_, last = start_slow_call(a.port, session, "followed", steps=3, delay=1.0, progress=1)
    # Resumed on b while a still runs the call: b follows what a stores, to the answer.
    events = resume(b.port, session, last)
    messages = [json.loads(event["data"]) for event in events if event.get("data")]
    assert messages, "an empty stream"
    answer = messages[-1]
    assert answer.get("id") == 7, messages
    assert answer["result"]["content"][0]["text"] == "done followed"
    assert progress_of(messages) == [2, 3]
    assert all(event.get("id") for event in events if event.get("data"))


def test_a_resume_behind_another_replica_ends_after_the_replay_then_each_event_once(
    replicas: list[Replica],
) -> None:
    # A resume that replays stored events ends right after them (retry): a client that
    # loses a resumed stream midway resumes again from where it started that one (the
    # official SDK does), so what a held stream had delivered would come twice.
    a, b = replicas
    session = open_session(a.port)
    priming, *_ = start_slow_call(a.port, session, "behind", steps=60, delay=0.05, progress=2)
    # Resumed on b from the priming event: 1 and 2 are stored, so b is behind.
    first = resume(b.port, session, priming)
    replayed = [json.loads(event["data"]) for event in first if event.get("data")]
    assert progress_of(replayed)[:2] == [1, 2]
    assert all(m.get("method") for m in replayed), "followed to the answer"
    assert "retry" in first[-1], first
    messages, _ = resume_until_answered(b.port, session, first[-2]["id"])
    assert progress_of(replayed + messages) == list(range(1, 61))  # each once, in order
    assert messages[-1]["result"]["content"][0]["text"] == "done behind"


def test_a_resume_followed_while_the_runner_dies_ends_with_an_error_naming_it(
    replicas: list[Replica],
) -> None:
    a, b = replicas
    session = open_session(a.port)
    *_, last = start_slow_call(a.port, session, "cut", steps=600, delay=0.1, progress=1)
    a.kill()
    replicas[0] = a.respawn()
    messages, _ = resume_until_answered(b.port, session, last)
    answer = messages[-1]
    assert "stopped" in answer["error"]["message"], answer
    assert answer["error"]["data"]["replica"], answer
    assert progress_of(messages) == sorted(set(progress_of(messages)))
