"""The lean engine's one-step answer (``scope[RESPOND]``): the same bytes on the wire as the
two ASGI messages of ``respond()``, whatever the request, the headers or the server's state;
and what the app keeps per kept head (memory streams, autojump clock; no test asserts a
time)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import trio

from tests.http_server.helpers import tool_call
from tests.http_server.test_lean_engine import (
    MCP,
    App,
    Wire,
    initialize,
    lean_connection,
    mcp_app,
    request,
)
from trimcp.transports.http_server.asgi import BODY, RESPOND, respond
from trimcp.transports.http_server.lean import _ServerState

_DATE = re.compile(rb"date: [^\r]*\r\n")

# Per path: the status and headers the app answers with (x-id differs between paths, so
# a head kept for one must never answer the other).
ANSWERS: dict[str, tuple[int, tuple[tuple[bytes, bytes], ...]]] = {
    "/a": (200, ((b"x-id", b"a"), (b"content-type", b"application/json"))),
    "/b": (200, ((b"x-id", b"b"), (b"content-type", b"application/json"))),
    "/created": (201, ((b"x-id", b"a"),)),
    "/empty": (204, ()),
    "/close": (200, ((b"connection", b"close"),)),
    "/stop": (200, ((b"x-id", b"a"),)),  # the server starts stopping first
}


def answering(one_step: bool, state: _ServerState) -> App:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope["path"]
        status, headers = ANSWERS[path]
        if path == "/stop":
            state.terminate()
        body = b"" if status == 204 else b'{"echo": "%s"}' % path.encode()
        if scope.get(BODY) is None and scope["method"] == "POST":
            await receive()  # (a body still arriving: read it)
        if one_step:
            await scope[RESPOND](status, body, headers)
        else:
            await respond(send, status, body, list(headers))

    return app


async def transcript(one_step: bool, requests: list[bytes]) -> bytes:
    """Everything the server writes for ``requests`` (sent at once, then end of input),
    without the Date lines."""
    state = _ServerState()
    out = b""
    async with lean_connection(answering(one_step, state), state=state) as (client, _):
        await client.send_all(b"".join(requests))
        await client.send_eof()
        while data := await client.receive_some(65536):
            out += data
    return _DATE.sub(b"", out)


CASES = {
    "kept heads, two of them": [request("GET", p) for p in ("/a", "/a", "/b", "/a", "/b")],
    "a body with the head": [request("POST", "/a", b"{}"), request("POST", "/b", b"[]")],
    "other statuses": [request("GET", p) for p in ("/created", "/a", "/empty", "/a")],
    "HEAD": [request("HEAD", "/a"), request("GET", "/a")],
    "HTTP/1.0": [request("GET", "/a", version="1.0")],
    "the client closes": [request("GET", "/a", headers=[("connection", "close")])],
    "the app closes": [request("GET", "/a"), request("GET", "/close")],
    "shutdown": [request("GET", "/a"), request("GET", "/stop")],
}


@pytest.mark.parametrize("requests", CASES.values(), ids=CASES.keys())
async def test_a_one_step_answer_writes_what_the_two_messages_write(
    autojump_clock: trio.abc.Clock, requests: list[bytes]
) -> None:
    two_messages = await transcript(False, requests)
    assert two_messages.startswith(b"HTTP/1.1 ")
    assert await transcript(True, requests) == two_messages


async def test_a_body_still_arriving_ends_the_connection_as_with_two_messages(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Answered before the rest of its body came: the answer says the connection closes."""
    heads = []
    for one_step in (False, True):
        state = _ServerState()

        async def app(scope: dict[str, Any], receive: Any, send: Any, one: bool = one_step) -> None:
            if one:
                await scope[RESPOND](200, b"early", ((b"x-id", b"a"),))
            else:
                await respond(send, 200, b"early", [(b"x-id", b"a")])

        async with lean_connection(app, state=state) as (client, _):
            await client.send_all(request("POST", "/a", b"0123456789")[:-5])  # half the body
            out = b""
            while data := await client.receive_some(65536):
                out += data
            heads.append(_DATE.sub(b"", out))
    assert b"connection: close" in heads[0]
    assert heads[1] == heads[0]


# --- a kept head's checks ------------------------------------------------------------------


def same_head_post(request_id: int, session_id: str, headers: list[tuple[str, str]]) -> bytes:
    """A tools/call whose head is the same, byte for byte, for every one-digit id."""
    headers = [*headers, ("mcp-session-id", session_id), ("mcp-protocol-version", "2025-11-25")]
    body = json.dumps(tool_call(request_id, "echo", {"text": f"t{request_id}"})).encode()
    return request("POST", body=body, headers=headers)


REFUSED_HEADS = {
    "content type": ([("content-type", "text/plain"), MCP[1]], None, 415),
    "accept": ([MCP[0], ("accept", "text/html")], None, 406),
    "session id form": (MCP, "not a session id", 404),
}


@pytest.mark.parametrize(
    ("headers", "session_id", "status"), REFUSED_HEADS.values(), ids=REFUSED_HEADS.keys()
)
async def test_a_kept_head_is_refused_each_time(
    autojump_clock: trio.abc.Clock,
    headers: list[tuple[str, str]],
    session_id: str | None,
    status: int,
) -> None:
    # The app keeps what a head passed in the engine's memo for it: a head refused is
    # refused again, however often it comes (fails with the memo's mark set before the
    # checks: the second request is answered).
    async with mcp_app(json_response=True) as app:
        real_id = await initialize(app)
        async with lean_connection(app) as (client, _):
            wire = Wire(client)
            for i in range(1, 4):
                await client.send_all(same_head_post(i, session_id or real_id, headers))
                assert (await wire.response()).status == status
            await client.aclose()


async def test_a_kept_head_still_finds_its_session_each_time(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Its checks are kept, not its session: once the session ended, the same head gets 404.
    async with mcp_app(json_response=True) as app:
        session_id = await initialize(app)
        async with lean_connection(app) as (client, _):
            wire = Wire(client)
            for i in range(1, 3):
                await client.send_all(same_head_post(i, session_id, MCP))
                answer = await wire.response()
                assert answer.status == 200
                assert f'"t{i}"'.encode() in answer.body
            entry = app.manager.get(session_id, None, "streamable")
            assert entry is not None
            app.manager.end(entry, "ended by the test")
            await client.send_all(same_head_post(3, session_id, MCP))
            assert (await wire.response()).status == 404
            await client.aclose()
