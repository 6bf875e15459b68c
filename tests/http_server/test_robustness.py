"""ROBUSTNESS 15 and 16: clients that do not read, and clients that go away mid-request."""

from __future__ import annotations

import trio
import trio.testing

from tests.http_server.helpers import (
    ServerLog,
    make_server,
    running_app,
    tool_call,
)
from trimcp.transports.http_server import HttpServerConfig, InMemoryEventStore

GET = [("accept", "text/event-stream")]


async def test_a_client_that_never_reads_its_get_stream_costs_bounded_memory(
    autojump_clock: trio.abc.Clock,
) -> None:
    stores: list[InMemoryEventStore] = []

    def store_factory(session_id: str) -> InMemoryEventStore:
        stores.append(InMemoryEventStore(max_events=500, max_bytes=256 * 1024))
        return stores[-1]

    config = HttpServerConfig(
        stream_max_bytes=64 * 1024, backlog_size=32, event_store_factory=store_factory
    )
    async with running_app(config) as (app, client):
        stuck = await client.initialize()
        other = await client.initialize()
        get = client.start("GET", headers=[*GET, ("mcp-session-id", stuck)], blocking=True)
        await get.wait_started()
        flood = await client.post(
            tool_call(1, "notify", {"n": 10_000}), session_id=stuck, wait=False
        )
        # Meanwhile the other session is served with no added delay (no virtual time passes).
        start = trio.current_time()
        for i in range(20):
            answer = await client.call(other, i, "echo", {"text": str(i)})
            assert answer["result"]["content"][0]["text"] == str(i)
        assert trio.current_time() == start
        await flood.wait_finished()
        assert flood.messages()[-1]["result"]["content"][0]["text"] == "notified"
        entry = app.manager.get(stuck, None, "streamable")
        assert entry is not None
        transport = entry.transport
        # the GET response was dropped when its queue filled; nothing else grew without bound
        assert transport.standalone.sink is None
        assert len(transport._backlog or ()) <= 32
        events, size = stores[0].size
        assert events <= 500
        assert size <= 256 * 1024
        assert transport.dropped > 9_000
        # the stuck response holds at most its bound, and ends once the client reads
        assert sum(len(c) for c in get.chunks) == 0
        get.unblock()
        await get.wait_finished()
        assert len(get.body) <= 64 * 1024 + 1024


async def test_a_slow_post_reader_is_cut_and_can_resume(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(stream_max_messages=10)
    async with running_app(config) as (_, client):
        session_id = await client.initialize()
        post = await client.post(
            tool_call(1, "progress", {"n": 50}, meta={"progressToken": 1}),
            session_id=session_id,
            wait=False,
            blocking=True,
        )
        await post.wait_started()
        await trio.testing.wait_all_tasks_blocked()
        post.unblock()
        await post.wait_finished()
        seen = post.events
        got = [e for e in seen if e.data]
        assert len(got) < 51  # cut short: the answer did not fit
        resume = await client.request(
            "GET",
            headers=[*GET, ("mcp-session-id", session_id), ("last-event-id", seen[-1].id or "")],
        )
        rest = resume.messages()
        progress = [m["params"]["progress"] for m in [*post.messages(), *rest] if "method" in m]
        assert progress == list(range(1, 51))  # nothing lost, nothing twice
        assert rest[-1]["id"] == 1


async def test_disconnect_mid_request_keeps_the_handler_and_the_server_going(
    autojump_clock: trio.abc.Clock,
) -> None:
    log = ServerLog()
    async with running_app(server=make_server(log)) as (app, client):
        session_id = await client.initialize()
        post = await client.post(tool_call(5, "slow"), session_id=session_id, wait=False)
        priming = await post.next_event()
        post.disconnect()
        # The POST is released at once (its task and connection), the handler goes on.
        await post.wait_returned()
        await trio.testing.wait_all_tasks_blocked()
        assert log.started == [5]
        assert log.cancelled == []
        assert log.finished == []
        # the server keeps serving this session and others
        assert (await client.call(session_id, 6, "echo", {"text": "x"}))["result"]
        log.release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert log.finished == [5]
        # the answer was kept: the client can pick it up by resuming
        resume = await client.request(
            "GET",
            headers=[*GET, ("mcp-session-id", session_id), ("last-event-id", priming.id or "")],
        )
        assert resume.messages()[-1]["result"]["content"][0]["text"] == "slow done"
        assert len(app.manager) == 1


async def test_get_disconnect_detaches_the_stream(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (app, client):
        session_id = await client.initialize()
        get = client.start("GET", headers=[*GET, ("mcp-session-id", session_id)])
        await get.wait_started()
        get.disconnect()
        await get.wait_returned()
        entry = app.manager.get(session_id, None, "streamable")
        assert entry is not None
        assert entry.active == 0
        assert entry.transport.standalone.sink is None
        await client.call(session_id, 1, "notify", {"n": 2})
        assert len(entry.transport._backlog or ()) == 2


async def test_abrupt_cancellation_of_the_manager_closes_sessions_within_bounds(
    autojump_clock: trio.abc.Clock,
) -> None:
    from tests.http_server.helpers import AsgiClient
    from trimcp.transports.http_server import create_asgi_app

    log = ServerLog()
    app = create_asgi_app(make_server(log))
    async with trio.open_nursery() as outer:
        async with trio.open_nursery() as nursery:
            await nursery.start(app.run)
            client = AsgiClient(app, outer)
            session_id = await client.initialize()
            post = await client.post(tool_call(1, "slow"), session_id=session_id, wait=False)
            await post.wait_started()
            start = trio.current_time()
            nursery.cancel_scope.cancel()
        assert trio.current_time() - start <= app.config.session_options.close_bound
        assert log.cancelled == [1]
        await post.wait_finished()
        assert app.manager.alive == 0
