"""Resting HTTP sessions: idle sessions keep only their state and wake for any work.

An idle session's tasks end ``rest_after`` seconds after its last activity. What the
client and the server see must not change: answers, server notifications on the GET
stream, per-session server state (log level, subscriptions), idle reaping and shutdown.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import trio
import trio.testing

from tests.http_server.helpers import WAIT, AsgiClient, running_app
from trimcp.server import Context, Server
from trimcp.transports.http_server import HttpServerConfig, McpHttpApp
from trimcp.transports.http_server.transport import HttpSessionTransport

GET_HEADERS = [("accept", "text/event-stream")]
CONFIG = HttpServerConfig(rest_after=0.5)


async def settle() -> None:
    await trio.sleep(2)
    await trio.testing.wait_all_tasks_blocked()


def session_of(app: McpHttpApp, session_id: str) -> Any:
    entry = app.manager.get(session_id, None, "streamable")
    assert entry is not None
    return entry.session


async def test_an_idle_session_rests_and_answers_its_next_call(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app(CONFIG) as (app, client):
        session_id = await client.initialize()
        await settle()
        session = session_of(app, session_id)
        assert session.resting
        for request_id in range(1, 4):
            answer = await client.call(session_id, request_id, "echo", {"text": f"hi {request_id}"})
            assert answer["result"]["content"][0]["text"] == f"hi {request_id}"
            await settle()
            assert session.resting


async def test_a_session_rests_only_after_rest_after_since_its_last_call(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Calls taken without the reader (Session.receive_now) count as activity: a session
    # called every 0.3 s never rests, and rests 0.5 s after its last call.
    async with running_app(CONFIG) as (app, client):
        session_id = await client.initialize()
        await client.call(session_id, 1, "echo", {"text": "warm"})
        session = session_of(app, session_id)
        for request_id in range(2, 8):
            await trio.sleep(0.3)
            assert not session.resting
            await client.call(session_id, request_id, "echo", {"text": "hi"})
        await trio.sleep(0.4)
        await trio.testing.wait_all_tasks_blocked()
        assert not session.resting
        await trio.sleep(0.2)
        await trio.testing.wait_all_tasks_blocked()
        assert session.resting


async def test_a_busy_session_does_not_wake_its_reader_every_quiet_time(
    autojump_clock: trio.abc.Clock, monkeypatch: Any
) -> None:
    # Calls taken by receive_now move the reader's quiet-time deadline on: while calls
    # come (here every 0.1 s for 5 s, rest_after 0.5 s) the reader waits in one receive.
    # Fails before: it woke every 0.5 s to find the session busy (10 receives).
    receives = 0
    receive = HttpSessionTransport.receive

    async def counted(self: HttpSessionTransport) -> Any:
        nonlocal receives
        receives += 1
        return await receive(self)

    async with running_app(CONFIG) as (app, client):
        session_id = await client.initialize()
        await client.call(session_id, 1, "echo", {"text": "warm"})
        session = session_of(app, session_id)
        monkeypatch.setattr(HttpSessionTransport, "receive", counted)
        for request_id in range(2, 52):
            await trio.sleep(0.1)
            await client.call(session_id, request_id, "echo", {"text": "hi"})
        assert receives <= 1
        assert not session.resting
        await trio.sleep(0.6)
        await trio.testing.wait_all_tasks_blocked()
        assert session.resting  # still 0.5 s after the last call


async def test_sessions_never_rest_when_resting_is_off(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(rest_after=None)) as (app, client):
        session_id = await client.initialize()
        await settle()
        assert not session_of(app, session_id).resting


async def test_a_resting_session_is_reaped_when_idle_and_closes(
    autojump_clock: trio.abc.Clock,
) -> None:
    config = HttpServerConfig(rest_after=0.5, idle_timeout=60)
    async with running_app(config) as (app, client):
        session_id = await client.initialize()
        await settle()
        session = session_of(app, session_id)
        assert session.resting
        await trio.sleep(30)
        assert app.manager.get(session_id, None, "streamable") is not None  # not yet
        await trio.sleep(40)
        await trio.testing.wait_all_tasks_blocked()
        assert session.closed
        assert app.manager.get(session_id, None, "streamable") is None
        reply = await client.post(
            {"jsonrpc": "2.0", "id": 5, "method": "ping"}, session_id=session_id
        )
        assert reply.status == 404


async def test_a_busy_session_is_not_reaped(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(rest_after=0.5, idle_timeout=60)
    async with running_app(config) as (app, client):
        session_id = await client.initialize()
        for request_id in range(1, 8):  # one call every 20 s: never 60 s without a request
            await trio.sleep(20)
            answer = await client.call(session_id, request_id, "echo", {"text": "x"})
            assert answer["result"]["content"][0]["text"] == "x"
        assert not session_of(app, session_id).closed


async def test_shutdown_closes_resting_sessions(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(CONFIG) as (app, client):
        ids = [await client.initialize() for _ in range(5)]
        await settle()
        sessions = [session_of(app, session_id) for session_id in ids]
        assert all(session.resting for session in sessions)
    assert all(session.closed for session in sessions)
    assert app.manager.alive == 0


def framework_server() -> Server:
    server = Server("resting")

    @server.tool()
    async def shout(ctx: Context) -> str:
        """Logs at two levels."""
        await ctx.info("quiet")
        await ctx.error("loud")
        return "done"

    @server.resource("memo://one")
    def memo() -> str:
        return "one"

    return server


async def open_get(client: AsgiClient, session_id: str) -> Any:
    get = client.start("GET", headers=[*GET_HEADERS, ("mcp-session-id", session_id)])
    await get.wait_started()
    return get


async def test_framework_notifications_reach_a_resting_session_on_its_get_stream(
    autojump_clock: trio.abc.Clock,
) -> None:
    server = framework_server()
    async with running_app(CONFIG, server) as (app, client):
        session_id = await client.initialize()
        subscribe = await client.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "resources/subscribe",
                "params": {"uri": "memo://one"},
            },
            session_id=session_id,
        )
        assert subscribe.status == 200
        get = await open_get(client, session_id)
        await settle()
        session = session_of(app, session_id)
        assert session.resting  # an open GET stream alone does not keep it awake

        @server.tool()
        def added() -> str:
            return "new"

        with trio.fail_after(WAIT):
            assert (await get.next_message())["method"] == "notifications/tools/list_changed"
        await settle()
        assert session.resting
        await server.notify_resource_updated("memo://one")  # kept its subscription
        with trio.fail_after(WAIT):
            updated = await get.next_message()
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"]["uri"] == "memo://one"
        get.disconnect()


async def test_a_resting_session_keeps_its_log_level(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(CONFIG, framework_server()) as (app, client):
        session_id = await client.initialize()
        level = await client.post(
            {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "error"}},
            session_id=session_id,
        )
        assert level.status == 200
        await settle()
        assert session_of(app, session_id).resting
        reply = await client.post(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "shout", "arguments": {}},
            },
            session_id=session_id,
        )
        logs = [
            m["params"]["data"]
            for m in reply.messages()
            if m.get("method") == "notifications/message"
        ]
        assert logs == ["loud"]


async def test_a_resting_session_holds_less_than_2_5_kib(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The bound issue 31 sets for an idle session (measured as RSS by the benchmark suite's
    # http-idle); here the Python allocations alone, which are exact. 2,935 B before the
    # protocol core sealed its empty tables at rest, sessions shared their client's info
    # and capabilities, and the transport dropped its empty tables and set.
    # The baseline is taken in the same run: what the 100 handshakes leave behind once their
    # sessions are deleted (caches, interned strings, the libraries' own bookkeeping) is not
    # held by a session, so a new trio/attrs/h11 that caches more cannot flip the bound;
    # what each live resting session holds must stay under 2.5 KiB.
    async with running_app(HttpServerConfig(rest_after=0.5, max_sessions=1000)) as (app, client):
        for _ in range(10):  # warm caches (ids, interned strings, code paths)
            await client.initialize()
        await settle()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            count = 100
            ids = [await client.initialize() for _ in range(count)]
            await settle()
            gc.collect()
            assert all(session_of(app, sid).resting for sid in ids)
            held = tracemalloc.get_traced_memory()[0] - before
            for sid in ids:
                reply = await client.request("DELETE", headers=[("mcp-session-id", sid)])
                assert reply.status in (200, 204), reply.status
            await settle()
            gc.collect()
            left = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        per_session = (held - left) / count
        report = f"{per_session:.0f} B per resting session ({held=} B, {left=} B after delete)"
        assert 0 < per_session < 2560, report
