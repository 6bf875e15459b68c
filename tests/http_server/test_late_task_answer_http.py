"""Streamable HTTP at 2026-07-28: a caller cancelled while the answer naming the task the
server made of its ``tools/call`` is on the wire leaves no task running.

Cancelling a 2026 request closes its POST: the server takes the client leaving as the
cancel. But the server may have written the answer already, so closing would throw away
the one message naming the task. The client half-closes instead (the server still sees it
leave) and reads what is already on its way, for a bounded time; a task it finds there is
cancelled. The interleaving is chosen, not hoped for: the client talks to the trimcp HTTP
server (loopback) through :class:`Relay`, a TCP relay that holds the server's
answer back until the test has cancelled the caller and the client has stopped sending
(and under hypercorn, which takes the half-close as a disconnect too).

Real clock (sockets): every wait is bounded by ``fail_after``; nothing sleeps and no time
is asserted. The same rule in memory, deterministic to the scheduling point:
tests/client/test_late_task_answer.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from tests.client.held_tasks import HoldingTools, task_status
from trimcp.client import Client, connect_http
from trimcp.transports.http_server import serve_http
from trimcp.transports.http_server.serve import Engine

BOUND = 10.0
_GONE = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class Relay:
    """A loopback TCP relay to ``port``. Once :meth:`arm` is called, the next chunk from the
    server that carries a task answer is held until :attr:`release` is set. Notes when a
    client stops sending (half-close or close) while an answer is held."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.armed = False
        self.held = trio.Event()
        self.release = trio.Event()
        self.client_stopped = trio.Event()

    def arm(self) -> None:
        self.armed = True

    async def serve(self, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, client: trio.SocketStream) -> None:
        server = await trio.open_tcp_stream("127.0.0.1", self.port)
        holding = trio.Event()
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(self._up, client, server, holding)
            await self._down(server, client, holding)
            nursery.cancel_scope.cancel()

    async def _up(
        self, client: trio.SocketStream, server: trio.SocketStream, holding: trio.Event
    ) -> None:
        try:
            while data := await client.receive_some(65536):
                await server.send_all(data)
            await server.send_eof()
        except _GONE:
            pass
        if holding.is_set():
            self.client_stopped.set()

    async def _down(
        self, server: trio.SocketStream, client: trio.SocketStream, holding: trio.Event
    ) -> None:
        try:
            while data := await server.receive_some(65536):
                if self.armed and b'"resultType":"task"' in data:
                    self.armed = False
                    holding.set()
                    self.held.set()
                    await self.release.wait()
                await client.send_all(data)
            await client.send_eof()
        except _GONE:
            pass


class Tools(HoldingTools):
    def __init__(self) -> None:
        super().__init__("late-http")


@asynccontextmanager
async def relayed(tools: Tools, engine: Engine) -> AsyncIterator[tuple[Client, Relay]]:
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve_http(
                tools.app, port=0, engine=engine, task_status=task_status
            )
        )
        relay = Relay(port)
        relay_port: int = await nursery.start(relay.serve)
        async with connect_http(f"http://127.0.0.1:{relay_port}/mcp", mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            yield client, relay
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("engine", ["lean", "hypercorn"])
async def test_a_caller_cancelled_with_the_task_answer_on_the_wire_cancels_the_task(
    engine: Engine,
) -> None:
    tools = Tools()
    with trio.fail_after(BOUND):
        async with relayed(tools, engine) as (client, relay):
            relay.arm()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "hold")
                await relay.held.wait()  # the server made the task and wrote its answer
                assert tools.task_ids
                nursery.cancel_scope.cancel()
            await relay.client_stopped.wait()  # the client has left the POST
            relay.release.set()  # the answer reaches the client now, late
            await tools.ended.wait()
            assert tools.how == ["cancelled"]
            assert await task_status(client, tools.task_ids[0]) == "cancelled"
