"""Session lifecycle over Streamable HTTP: initialize, session ids, requests, DELETE, reaping."""

from __future__ import annotations

import string

import pytest
import trio
import trio.testing

from tests.http_server.helpers import (
    WAIT,
    ServerLog,
    init_request,
    make_server,
    running_app,
    tool_call,
)
from trimcp.transports.http_server import HttpServerConfig
from trimcp.transports.http_server.manager import unclosed


async def test_initialize_creates_a_session_with_a_random_visible_id(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (app, client):
        reply = await client.post(init_request(), version=None)
        assert reply.status == 200
        assert reply.headers["content-type"] == "text/event-stream"
        session_id = reply.headers["mcp-session-id"]
        assert len(session_id) >= 22  # >= 128 bits in URL-safe base64
        assert set(session_id) <= set(string.ascii_letters + string.digits + "-_")
        [answer] = reply.messages()
        assert answer["id"] == 0
        assert answer["result"]["protocolVersion"] == "2025-11-25"
        assert len(app.manager) == 1


async def test_session_ids_are_unique(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        ids = {await client.initialize() for _ in range(50)}
        assert len(ids) == 50


async def test_a_tool_call_is_answered_on_its_post_stream(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        answer = await client.call(session_id, 1, "echo", {"text": "hi"})
        assert answer == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": [{"type": "text", "text": "hi"}]},
        }


async def test_2025_11_25_streams_start_with_a_priming_event(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        reply = await client.post(tool_call(1, "echo", {"text": "x"}), session_id=session_id)
        first, second = reply.events
        assert first.id is not None
        assert first.data == ""
        assert first.retry_ms == 1000
        assert second.id is not None
        assert second.id != first.id


async def test_older_versions_get_no_priming_event(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize("2025-06-18")
        reply = await client.post(
            tool_call(1, "echo", {"text": "x"}), session_id=session_id, version="2025-06-18"
        )
        [event] = reply.events
        assert event.data
        assert event.id is not None


async def test_notification_only_post_gets_202_without_body(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        reply = await client.post(
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            session_id=session_id,
        )
        assert reply.status == 202
        assert reply.body == b""


async def test_delete_ends_the_session_at_once(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (app, client):
        session_id = await client.initialize()
        reply = await client.request("DELETE", headers=[("mcp-session-id", session_id)])
        assert reply.status == 204
        assert len(app.manager) == 0
        again = await client.post(tool_call(1, "echo"), session_id=session_id)
        assert again.status == 404
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.alive == 0


async def test_delete_unknown_or_missing_session(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        missing = await client.request("DELETE")
        assert missing.status == 400
        unknown = await client.request("DELETE", headers=[("mcp-session-id", "nope")])
        assert unknown.status == 404


async def test_idle_sessions_are_reaped(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(idle_timeout=60)
    async with running_app(config) as (app, client):
        session_id = await client.initialize()
        await trio.sleep(50)
        assert (await client.call(session_id, 1, "echo"))["result"]  # activity resets the clock
        await trio.sleep(50)
        assert len(app.manager) == 1
        await trio.sleep(20)
        assert len(app.manager) == 0
        assert (await client.post(tool_call(2, "echo"), session_id=session_id)).status == 404


async def test_a_session_with_an_open_stream_is_not_idle(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(idle_timeout=60)
    async with running_app(config) as (app, client):
        session_id = await client.initialize()
        get = client.start(
            "GET", headers=[("accept", "text/event-stream"), ("mcp-session-id", session_id)]
        )
        await get.wait_started()
        await trio.sleep(600)
        assert len(app.manager) == 1
        get.disconnect()
        await trio.sleep(61)
        assert len(app.manager) == 0


async def test_failed_initialize_leaves_no_session(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (app, client):
        bad = init_request()
        del bad["params"]["clientInfo"]
        reply = await client.post(bad, version=None)
        assert reply.status == 200
        [answer] = reply.messages()
        assert answer["error"]["code"] == -32602
        await trio.sleep(1)
        assert len(app.manager) == 0


async def test_requests_before_initialized_notification_work(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The server is operating once it sent the initialize result.
    async with running_app() as (_, client):
        reply = await client.post(init_request(), version=None)
        session_id = reply.headers["mcp-session-id"]
        answer = await client.call(session_id, 1, "echo", {"text": "early"})
        assert answer["result"]["content"][0]["text"] == "early"


async def test_second_initialize_in_a_session_is_an_error(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        reply = await client.post(init_request(request_id=5), session_id=session_id)
        [answer] = reply.messages()
        assert answer["id"] == 5
        assert answer["error"]["code"] == -32600


async def test_shutdown_closes_every_session_and_ends_streams(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (app, client):
        session_ids = [await client.initialize() for _ in range(3)]
        gets = [
            client.start("GET", headers=[("accept", "text/event-stream"), ("mcp-session-id", s)])
            for s in session_ids
        ]
        slow = await client.post(tool_call(1, "slow"), session_id=session_ids[0], wait=False)
        for get in gets:
            await get.wait_started()
        await slow.wait_started()
        start = trio.current_time()
        with trio.fail_after(60):
            await app.shutdown()
        bound = app.config.shutdown_bound
        assert trio.current_time() - start <= bound
        assert app.manager.alive == 0
        for exchange in [*gets, slow]:
            await exchange.wait_finished()


def test_the_shutdown_warning_counts_sessions_in_words() -> None:
    # Before: "1 sessions did not close within the shutdown bound".
    assert unclosed(1, 10) == "1 session did not close within the shutdown bound (10 s): cancelled"
    assert unclosed(3, 2.5).startswith("3 sessions did not close within the shutdown bound (2.5 s)")


@pytest.mark.parametrize(
    ("json_response", "resumable"), [(True, True), (False, True), (False, False)]
)
async def test_a_post_whose_session_closes_under_it_ends(
    autojump_clock: trio.abc.Clock, json_response: bool, resumable: bool
) -> None:
    # Was: a JSON-mode POST (or an SSE one without an event store) waited for ever once
    # its session closed while its handler ran: closing ended only the streams the
    # store names.
    log = ServerLog()
    config = (
        HttpServerConfig(json_response=json_response)
        if resumable
        else HttpServerConfig(json_response=json_response, event_store_factory=None)
    )
    async with running_app(config, make_server(log)) as (_app, client):
        session_id = await client.initialize()
        post = await client.post(tool_call(7, "slow"), session_id=session_id, wait=False)
        await trio.testing.wait_all_tasks_blocked()
        assert log.started == [7]
        log.sessions[0].request_close("closed by the test")
        with trio.fail_after(WAIT):
            await post.wait_returned()
        assert log.cancelled == [7]
        answers = [post.json()] if json_response else post.messages()
        assert not any("result" in answer for answer in answers)
