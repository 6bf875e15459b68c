"""A caller that leaves while the request that creates a task is in flight leaves no task
running (2026-07-28; docs/concurrency.md, "A call the server runs as a task").

The caller never learns the task's id, so it cannot cancel it itself: whichever way the
cancel races the answer, someone must.

- The ``CreateTaskResult`` crosses the caller's cancel on the wire: the client takes the late
  answer and sends ``tasks/cancel`` (the session keeps a small bounded table of the calls
  that may still be answered with a task).
- The cancel reaches the server before the answer is handed over: the server cancels the
  task it made of the request (its answer will never be sent).

A trimcp.Server serves a 2026 stream in memory (``serve_stream``, the stdio path). The
client's end of the wire is :class:`Gate`, which holds the server's answer back until the
test has cancelled the caller: the interleaving is chosen, not hoped for. The same over
Streamable HTTP on loopback: tests/http_server/test_late_task_answer_http.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from tests.client.held_tasks import HoldingTools, task_status
from trimcp.client import Client, connect_transport
from trimcp.errors import RequestTimeout
from trimcp.server.middleware import Call, Next
from trimcp.session import SessionOptions
from trimcp.session.transport import Outgoing
from trimcp.transports.memory import MemoryTransport, memory_transport_pair

OPTIONS = SessionOptions(request_timeout=60, cancel_notify_timeout=1)


class Gate:
    """The client's end of the wire: once :meth:`arm` is called, the next answer from the
    server (a message with a ``result``) is held until :attr:`release` is set. Records the
    methods the client sends."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.armed = False
        self.held = trio.Event()
        self.release = trio.Event()
        self.sent: list[str] = []

    def arm(self) -> None:
        self.armed = True
        self.held = trio.Event()
        self.release = trio.Event()

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        if self.armed and b'"result"' in data:
            self.armed = False
            self.held.set()
            await self.release.wait()
        return data

    async def send(self, messages: Sequence[Outgoing]) -> None:
        for message in messages:
            self.sent.append(json.loads(message.data).get("method", "(answer)"))
        await self.inner.send(messages)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Tools(HoldingTools):
    """A server with a tool that runs as a task and waits forever, and a plain tool."""

    def __init__(self, **server_kwargs: Any) -> None:
        super().__init__("late", **server_kwargs)
        self.plain_started = trio.Event()
        self.finish_plain = trio.Event()

        @self.app.tool()
        async def plain() -> str:
            self.plain_started.set()
            await self.finish_plain.wait()
            return "done"


@asynccontextmanager
async def modern(tools: Tools) -> AsyncIterator[tuple[Client, Gate]]:
    client_end, server_end = memory_transport_pair()
    gate = Gate(client_end)
    async with trio.open_nursery() as nursery:
        await nursery.start(tools.app.serve_stream, server_end)
        async with connect_transport(gate, mode="auto", options=OPTIONS) as client:
            assert client.protocol_version == "2026-07-28"
            yield client, gate
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_a_task_answer_crossing_the_callers_cancel_is_cancelled(
    how: str, autojump_clock: trio.testing.MockClock
) -> None:
    tools = Tools()
    async with modern(tools) as (client, gate):
        gate.arm()
        caller = trio.CancelScope()
        ended: list[str] = []

        async def call() -> None:
            with caller:
                try:
                    await client.call_tool("hold", timeout=5 if how == "timeout" else 60)
                except RequestTimeout:
                    ended.append("timeout")
            if caller.cancelled_caught:
                ended.append("cancel")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await gate.held.wait()  # the server made the task; its answer is on the wire
            assert tools.task_ids
            if how == "cancel":
                caller.cancel()
        # The call ended (cancelled, or its timeout passed while the answer was held).
        assert ended == [how]
        await trio.testing.wait_all_tasks_blocked()
        assert "notifications/cancelled" in gate.sent
        gate.release.set()  # now the CreateTaskResult arrives, late
        await trio.testing.wait_all_tasks_blocked()
        assert gate.sent.count("tasks/cancel") == 1
        assert tools.how == ["cancelled"]
        assert await task_status(client, tools.task_ids[0]) == "cancelled"
        assert client.session.late_answers == 0


async def test_a_cancel_reaching_the_server_before_the_task_answer_cancels_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    made = trio.Event()

    async def slow_to_answer(call: Call, call_next: Next) -> Any:
        result = await call_next(call)
        if call.method == "tools/call":
            made.set()
            await trio.sleep_forever()  # the caller's cancel reaches the request here
        return result

    tools = Tools(middleware=[slow_to_answer])
    async with modern(tools) as (client, _gate):
        with trio.move_on_after(10) as caller:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "hold")
                await made.wait()
                nursery.cancel_scope.cancel()
        assert not caller.cancelled_caught
        await trio.testing.wait_all_tasks_blocked()
        assert tools.how == ["cancelled"]
        assert await task_status(client, tools.task_ids[0]) == "cancelled"


async def test_a_late_plain_answer_is_dropped(autojump_clock: trio.testing.MockClock) -> None:
    """A guard: only a task answer is acted on; a late result is dropped as before."""
    tools = Tools()
    async with modern(tools) as (client, gate):
        gate.arm()
        with trio.CancelScope() as caller:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "plain")
                await tools.plain_started.wait()
                tools.finish_plain.set()  # it answers; the answer is held on the wire
                await gate.held.wait()
                caller.cancel()
        await trio.testing.wait_all_tasks_blocked()
        gate.release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert "tasks/cancel" not in gate.sent
        assert client.session.late_answers == 0
        tools.finish_plain = trio.Event()
        tools.finish_plain.set()
        assert not (await client.call_tool("plain")).is_error  # the session goes on


async def test_call_tool_as_task_cancelled_while_creating_cancels_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Nobody can ever reach a task whose id its caller never got: it is cancelled too."""
    tools = Tools()
    async with modern(tools) as (client, gate):
        gate.arm()
        with trio.CancelScope() as caller:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool_as_task, "hold")
                await gate.held.wait()
                caller.cancel()
        await trio.testing.wait_all_tasks_blocked()
        gate.release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert tools.how == ["cancelled"]
        assert await task_status(client, tools.task_ids[0]) == "cancelled"
        # Once its handle is returned, the task is the caller's: a cancelled wait leaves it.
        handle = await client.call_tool_as_task("hold")
        with trio.move_on_after(2):
            await handle.result()
        assert await task_status(client, handle.task_id) == "working"
        await handle.cancel()


async def test_the_late_answer_table_is_bounded_in_count_and_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from trimcp.session.late import LATE_ANSWER_SECONDS, MAX_LATE_ANSWERS

    tools = Tools()
    async with modern(tools) as (client, _gate):
        for _ in range(MAX_LATE_ANSWERS + 5):
            with trio.CancelScope() as caller:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "plain")
                    await tools.plain_started.wait()
                    tools.plain_started = trio.Event()
                    caller.cancel()
        assert client.session.late_answers == MAX_LATE_ANSWERS
        autojump_clock.jump(LATE_ANSWER_SECONDS)
        assert client.session.late_answers == 0
