"""A 2025-11-25 session over raw HTTP straight to one replica (``http.client``): what the
replica tests that resume streams (``GET`` with ``Last-Event-ID``) send and read."""

from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterator, Mapping

VERSION = "2025-11-25"
HEADERS = {"mcp-protocol-version": VERSION}


@contextlib.contextmanager
def post(
    port: int, message: Mapping[str, object], session: str | None
) -> Iterator[http.client.HTTPResponse]:
    """POST ``message`` (in ``session``); the response, read as the caller likes."""
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


def open_session(port: int, capabilities: Mapping[str, object] | None = None) -> str:
    """Initialize a session (the client declaring ``capabilities``, none by default)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": dict(capabilities or {}),
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    with post(port, initialize, None) as response:
        response.read()
        session = response.getheader("mcp-session-id")
        assert response.status == 200
    assert session
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    with post(port, initialized, session) as response:
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
    with post(port, call, session) as response:
        assert response.status == 200
        events = read_events(response, 1 + progress)
    assert len(events) == 1 + progress
    assert all("id" in event for event in events)
    return [event["id"] for event in events]


def open_resume(
    port: int, session: str, last_event_id: str
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """Send ``GET`` with ``Last-Event-ID``; the connection (the caller closes it) and the
    response, whatever its status."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {
        **HEADERS,
        "accept": "text/event-stream",
        "mcp-session-id": session,
        "last-event-id": last_event_id,
    }
    try:
        connection.request("GET", "/mcp", headers=headers)
        return connection, connection.getresponse()
    except BaseException:
        connection.close()
        raise


def resume(port: int, session: str, last_event_id: str) -> list[dict[str, str]]:
    """Resume and read the stream to its end (it must be a 200 stream)."""
    connection, response = open_resume(port, session, last_event_id)
    try:
        assert response.status == 200
        return read_events(response)
    finally:
        connection.close()
