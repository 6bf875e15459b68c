"""The lean engine's long-lived SSE responses: the head goes out at once, and a response
the engine ends says so (memory streams, autojump clock; no test asserts a time)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from tests.http_server.helpers import init_request, tool_call
from tests.http_server.test_lean_engine import (
    MCP,
    WAIT,
    Wire,
    lean_connection,
    mcp_app,
    request,
)
from trimcp.protocol.framing import NEED_DATA
from trimcp.protocol.sse import SSEDecoder, SSEEvent


def post(message: dict[str, Any], session_id: str | None, version: str) -> bytes:
    headers = list(MCP)
    if session_id is not None:
        headers += [("mcp-session-id", session_id), ("mcp-protocol-version", version)]
    return request("POST", body=json.dumps(message).encode(), headers=headers)


async def open_session(app: Any, version: str) -> str:
    async with lean_connection(app) as (client, _):
        wire = Wire(client)
        await client.send_all(post(init_request(version), None, version))
        answer = await wire.response()
        session_id = answer.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await client.send_all(post(note, session_id, version))
        assert (await wire.response()).status == 202
        await client.aclose()
    return session_id


def get(session_id: str, version: str, last_event_id: str | None = None) -> bytes:
    headers = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", session_id),
        ("mcp-protocol-version", version),
    ]
    if last_event_id is not None:
        headers.append(("last-event-id", last_event_id))
    return request("GET", headers=headers)


async def read_head(client: trio.abc.Stream) -> tuple[bytes, bytes]:
    """The response head (bounded wait: it must come without anything to send)."""
    data = b""
    with trio.fail_after(WAIT):
        while b"\r\n\r\n" not in data:
            chunk = await client.receive_some(65536)
            assert chunk, "the connection closed before the response head"
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


async def next_message(client: trio.abc.Stream, decoder: SSEDecoder) -> Any:
    with trio.fail_after(WAIT):
        while True:
            event = decoder.next_event()
            if isinstance(event, SSEEvent):
                if event.data:
                    return json.loads(event.data)
                continue
            assert event is NEED_DATA
            data = await client.receive_some(65536)
            assert data, "the stream ended"
            # Chunked framing: keep only the chunk payloads (small chunks, one per read).
            decoder.receive_data(_unchunk(bytes(data)))  # (never empty: b"" would mean EOF)


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        out += data[:size]
        data = data[size + 2 :]
    return out


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
async def test_a_get_stream_without_priming_sends_its_head_at_once(
    autojump_clock: trio.abc.Clock, version: str
) -> None:
    async with mcp_app() as app:
        session_id = await open_session(app, version)
        async with lean_connection(app) as (listener, _), lean_connection(app) as (caller, _):
            await listener.send_all(get(session_id, version))
            head, rest = await read_head(listener)
            assert head.startswith(b"HTTP/1.1 200 ")
            assert b"transfer-encoding: chunked" in head
            # A notification sent later still reaches the stream.
            await caller.send_all(post(tool_call(1, "notify", {"n": 1}), session_id, version))
            assert (await Wire(caller).response()).status == 200
            decoder = SSEDecoder()
            if rest:
                decoder.receive_data(_unchunk(rest))
            message = await next_message(listener, decoder)
            assert message["method"] == "notifications/message"
            await listener.aclose()
            await caller.aclose()


async def test_a_resumed_stream_with_nothing_new_sends_its_head_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    version = "2025-11-25"
    async with mcp_app() as app:
        session_id = await open_session(app, version)
        async with lean_connection(app) as (listener, _):
            await listener.send_all(get(session_id, version))
            head, rest = await read_head(listener)  # (the priming event comes with it)
            decoder = SSEDecoder()
            decoder.receive_data(_unchunk(rest))
            priming = decoder.next_event()
            assert isinstance(priming, SSEEvent)
            assert priming.id
            await listener.aclose()
        async with lean_connection(app) as (listener, _):
            await listener.send_all(get(session_id, version, last_event_id=priming.id))
            head, _ = await read_head(listener)
            assert head.startswith(b"HTTP/1.1 200 ")
            await listener.aclose()


async def _finished_post_stream(app: Any, session_id: str, version: str) -> list[str]:
    """The event ids of a POST stream that is over (its one call answered)."""
    async with lean_connection(app) as (client, _):
        await client.send_all(post(tool_call(7, "echo", {"text": "x"}), session_id, version))
        answer = await Wire(client).response()
        await client.aclose()
    decoder = SSEDecoder()
    decoder.receive_data(answer.body)
    ids = []
    while isinstance(event := decoder.next_event(), SSEEvent):
        assert event.id
        ids.append(event.id)
    return ids


@pytest.mark.parametrize("after", ["priming", "answer"])
async def test_resuming_a_finished_stream_keeps_the_connection_usable(
    autojump_clock: trio.abc.Clock, after: str
) -> None:
    version = "2025-11-25"
    async with mcp_app() as app:
        session_id = await open_session(app, version)
        priming, answered = await _finished_post_stream(app, session_id, version)
        last = priming if after == "priming" else answered
        async with lean_connection(app) as (client, _):
            wire = Wire(client)
            await client.send_all(get(session_id, version, last_event_id=last))
            resumed = await wire.response("GET")
            assert resumed.status == 200
            assert (b'"id":7' in resumed.body) == (after == "priming")
            if resumed.headers.get("connection") == "close":
                assert await wire.eof() == b""
            else:  # kept alive: the next request on it is answered
                await client.send_all(
                    post(tool_call(8, "echo", {"text": "y"}), session_id, version)
                )
                assert (await wire.response()).status == 200
            await client.aclose()


async def test_resuming_a_finished_stream_after_evictions_elsewhere_warns_nothing(
    autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture
) -> None:
    from trimcp.transports.http_server import HttpServerConfig, InMemoryEventStore

    version = "2025-11-25"
    config: Any = {"event_store_factory": lambda _: InMemoryEventStore(max_events=4)}
    async with mcp_app(**config) as app:
        assert isinstance(app.config, HttpServerConfig)
        session_id = await open_session(app, version)
        _, answered = await _finished_post_stream(app, session_id, version)
        for _ in range(3):  # later streams evict the first one's events
            await _finished_post_stream(app, session_id, version)
        async with lean_connection(app) as (client, _):
            await client.send_all(get(session_id, version, last_event_id=answered))
            assert (await Wire(client).response("GET")).status == 200
            await client.aclose()
    assert "evicted" not in caplog.text
