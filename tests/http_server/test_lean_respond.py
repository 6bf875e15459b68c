"""The lean engine's one-step answer (``scope[RESPOND]``): the same bytes on the wire as the
two ASGI messages of ``respond()``, whatever the request, the headers or the server's state
(memory streams, autojump clock; no test asserts a time)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio

from tests.http_server.test_lean_engine import App, lean_connection, request
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
