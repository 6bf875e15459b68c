"""Resting sessions (engine): an idle session's tasks end and come back when there is work.

The owner here plays the HTTP session manager: it runs ``run_awake`` in its nursery when
the session asks (the waker) and calls ``wake()`` before feeding the transport.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from tests.support import RawPeer, make_server
from trimcp.errors import SessionClosed
from trimcp.protocol.lifecycle import Role
from trimcp.session import RequestContext, Session, SessionOptions
from trimcp.session.engine import resting_session
from trimcp.transports.memory import MemoryTransport, memory_transport_pair
from trimcp.types import ServerCapabilities, ToolsCapability

REST_AFTER = 0.5


class RestableTransport(MemoryTransport):
    """A memory transport that can tell when it holds no input (so its session may rest)."""

    def __init__(self, inner: MemoryTransport) -> None:
        super().__init__(inner._send_channel, inner._receive_channel)
        self.rests = 0
        self.on_can_rest: Any = None

    def can_rest(self) -> bool:
        if self.on_can_rest is not None:
            hook, self.on_can_rest = self.on_can_rest, None
            hook()
        return not self._receive_channel.statistics().current_buffer_used

    def rest(self) -> None:
        self.rests += 1


class Host:
    """Owns the session's nursery, like the HTTP session manager."""

    def __init__(self, nursery: trio.Nursery, peer: RawPeer, transport: RestableTransport):
        self.nursery = nursery
        self.peer = peer
        self.transport = transport
        self.runs = 0
        self.results: list[bool] = []
        self.session: Session

    def waker(self, session: Session) -> None:
        self.nursery.start_soon(self.run)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.runs += 1
        self.results.append(await self.session.run_awake(task_status=task_status))

    async def post(self, message: Any) -> None:
        """What an HTTP POST does: wake the session, then feed its transport."""
        self.session.wake()
        await self.peer.send(message)

    async def settle(self) -> None:
        """Let the session go quiet for longer than rest_after."""
        await trio.sleep(REST_AFTER * 2)
        await trio.testing.wait_all_tasks_blocked()


@asynccontextmanager
async def resting_host(
    handler: Any = None, *, rest_after: float = REST_AFTER, options: SessionOptions | None = None
) -> AsyncIterator[Host]:
    peer_end, server_end = memory_transport_pair()
    transport = RestableTransport(server_end)
    async with trio.open_nursery() as nursery:
        host = Host(nursery, RawPeer(peer_end), transport)
        host.session = resting_session(
            transport,
            role=Role.SERVER,
            handler=handler or make_server(),
            waker=host.waker,
            rest_after=rest_after,
            options=options,
        )
        await nursery.start(host.run)
        await host.peer.initialize()
        yield host
        host.session.request_close("test over")
        with trio.fail_after(30):
            await host.session.wait_closed()


def slow_server(release: trio.Event, started: list[Any]) -> Any:
    server = make_server()

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> Any:
        started.append(ctx.request_id)
        await release.wait()
        return {"content": [{"type": "text", "text": "done"}]}

    return server


async def test_an_idle_session_rests_with_no_tasks_and_answers_after_a_wake(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with resting_host() as host:
        await host.settle()
        assert host.session.resting
        assert host.results == [True]
        assert host.transport.rests == 1
        assert not host.nursery.child_tasks  # nothing of the session runs
        await host.post({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        assert await host.peer.receive() == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert not host.session.resting
        await host.settle()
        assert host.session.resting
        assert host.results == [True, True]


async def test_a_running_handler_keeps_the_session_awake_until_it_answers(
    autojump_clock: trio.abc.Clock,
) -> None:
    release = trio.Event()
    started: list[Any] = []
    async with resting_host(slow_server(release, started)) as host:
        await host.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {}},
            }
        )
        await trio.sleep(REST_AFTER * 10)
        assert started == [1]
        assert not host.session.resting
        release.set()
        reply = await host.peer.receive()
        assert reply["id"] == 1
        assert reply["result"]["content"][0]["text"] == "done"
        await host.settle()
        assert host.session.resting


async def test_a_request_of_ours_awaiting_an_answer_keeps_the_session_awake(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with resting_host() as host:
        await host.settle()
        assert host.session.resting
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host.session.send_request, "ping")  # wakes it
            request = await host.peer.receive()
            assert request["method"] == "ping"
            await trio.sleep(REST_AFTER * 10)
            assert not host.session.resting
            await host.post({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        await host.settle()
        assert host.session.resting


async def test_a_notification_sent_to_a_resting_session_wakes_it_and_goes_out(
    autojump_clock: trio.abc.Clock,
) -> None:
    server = make_server(
        capabilities=ServerCapabilities(tools=ToolsCapability(list_changed=True), logging={})
    )
    async with resting_host(server) as host:
        await host.settle()
        assert host.session.resting
        await host.session.send_notification(
            "notifications/message", {"level": "info", "data": "hello"}
        )
        note = await host.peer.receive()
        assert note["method"] == "notifications/message"
        assert note["params"]["data"] == "hello"


async def test_closing_a_resting_session_closes_its_transport(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with resting_host() as host:
        await host.settle()
        host.session.request_close("bye")
        with trio.fail_after(30):
            await host.session.wait_closed()
        await trio.testing.wait_all_tasks_blocked()
        assert host.results == [True, False]
        with pytest.raises((trio.EndOfChannel, trio.ClosedResourceError)):
            await host.peer.receive()
        with pytest.raises(SessionClosed):
            await host.session.send_request("ping")


async def test_input_arriving_while_the_tasks_end_is_not_lost(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with resting_host() as host:

        def post_during_rest() -> None:
            # Runs inside the reader's decision to rest, so the feed lands while the
            # session's tasks are ending.
            async def post() -> None:
                await host.post({"jsonrpc": "2.0", "id": 9, "method": "ping"})

            host.nursery.start_soon(post)

        host.transport.on_can_rest = post_during_rest
        assert await host.peer.receive() == {"jsonrpc": "2.0", "id": 9, "result": {}}
        assert host.runs == 1  # the same run went on: woken while winding down
        await host.settle()
        assert host.session.resting


async def test_cancelling_the_owner_closes_an_awake_session(
    autojump_clock: trio.abc.Clock,
) -> None:
    peer_end, server_end = memory_transport_pair()
    transport = RestableTransport(server_end)
    with trio.CancelScope() as outer:
        async with trio.open_nursery() as nursery:
            host = Host(nursery, RawPeer(peer_end), transport)
            host.session = resting_session(
                transport,
                role=Role.SERVER,
                handler=make_server(),
                waker=host.waker,
                rest_after=REST_AFTER,
            )
            await nursery.start(host.run)
            await host.peer.initialize()
            outer.cancel()
    assert host.session.closed


async def test_sessions_that_cannot_rest_stay_awake(autojump_clock: trio.abc.Clock) -> None:
    class Attending:
        """A handler with its own session task but no can_rest: it must not be paused."""

        def __init__(self) -> None:
            self.inner = make_server()

        async def handle_request(self, ctx: RequestContext) -> Any:
            return await self.inner.handle_request(ctx)

        async def handle_notification(self, session: Session, method: str, params: Any) -> None:
            await self.inner.handle_notification(session, method, params)

        async def attend_session(
            self, session: Session, *, task_status: trio.TaskStatus[None]
        ) -> None:
            task_status.started()
            await trio.sleep_forever()

    async with resting_host(Attending()) as host:
        await host.settle()
        assert not host.session.resting
    async with resting_host(options=SessionOptions(keepalive_interval=100.0)) as host:
        await host.settle()
        assert not host.session.resting


def framework_server() -> Any:
    from trimcp.server import Server

    server = Server("resting")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def test_a_list_change_while_the_tasks_end_still_reaches_the_client(
    autojump_clock: trio.abc.Clock,
) -> None:
    server = framework_server()
    async with resting_host(server) as host:

        def change_during_rest() -> None:
            # Runs inside the reader's decision to rest; the change lands as the tasks end.
            async def change() -> None:
                server.add_tool(lambda: "new", name="added")

            host.nursery.start_soon(change)

        host.transport.on_can_rest = change_during_rest
        with trio.fail_after(30):
            note = await host.peer.receive()
        assert note["method"] == "notifications/tools/list_changed"
        await host.settle()
        assert host.session.resting


async def test_a_list_change_reaches_a_resting_client(autojump_clock: trio.abc.Clock) -> None:
    server = framework_server()
    async with resting_host(server) as host:
        await host.settle()
        assert host.session.resting
        server.add_tool(lambda: "new", name="added")
        with trio.fail_after(30):
            note = await host.peer.receive()
        assert note["method"] == "notifications/tools/list_changed"


def _engine_bytes() -> int:
    """What trimcp/session/ allocated and still holds (the allocation site's file)."""
    engine = tracemalloc.Filter(True, "*/trimcp/session/*")
    snapshot = tracemalloc.take_snapshot().filter_traces([engine])
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def test_a_resting_session_keeps_little_of_the_engines_own(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The engine's share of an idle session (the HTTP test bounds the whole): a resting
    # session keeps the Session, its Resting and its protocol core's object; its tables,
    # close state and run are shared or made again on waking. Exact Python allocations,
    # counted by the file that made them, after one warm-up session.
    count = 50
    async with AsyncExitStack() as stack:
        warm = await stack.enter_async_context(resting_host())
        await warm.settle()
        gc.collect()
        tracemalloc.start()
        try:
            before = _engine_bytes()
            hosts = [await stack.enter_async_context(resting_host()) for _ in range(count)]
            await hosts[-1].settle()
            gc.collect()
            assert all(host.session.resting for host in hosts)
            per_session = (_engine_bytes() - before) / count
        finally:
            tracemalloc.stop()
    assert 0 < per_session <= 512, f"{per_session:.0f} B of engine state per resting session"
