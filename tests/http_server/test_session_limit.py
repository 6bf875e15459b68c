"""``max_sessions`` under a flood of half-open sessions (``initialize`` and nothing more).

Was: 50 clients that only sent ``initialize`` filled ``max_sessions`` and every legitimate
client got 503. Half-open sessions (no ``notifications/initialized`` yet) are now the
first to go when the limit is reached, oldest first; established sessions are never evicted.
"""

from __future__ import annotations

import trio

from tests.http_server.helpers import init_request, running_app, tool_call
from trimcp.transports.http_server import HttpServerConfig


async def test_half_open_sessions_make_room_for_a_real_client(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app(HttpServerConfig(max_sessions=5)) as (app, client):
        half_open = []
        for _ in range(5):  # a flood: initialize, then silence
            reply = await client.post(init_request(), version=None)
            assert reply.status == 200
            half_open.append(reply.headers["mcp-session-id"])
        session_id = await client.initialize()  # a real client still gets in
        reply = await client.post(tool_call(1, "echo", {"text": "hi"}), session_id=session_id)
        assert reply.status == 200
        # The oldest half-open session made room: it is gone (404), the newest are not.
        assert (await client.post(tool_call(2, "echo"), session_id=half_open[0])).status == 404
        assert len(app.manager) == 5


async def test_established_sessions_are_never_evicted(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(max_sessions=3)) as (_app, client):
        sessions = [await client.initialize() for _ in range(3)]
        assert (await client.post(init_request(), version=None)).status == 503
        for i, session_id in enumerate(sessions):
            reply = await client.post(tool_call(i, "echo", {"text": "x"}), session_id=session_id)
            assert reply.status == 200
