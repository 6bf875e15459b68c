"""``call_tool`` following a task the server made of it (2026-07-28): the caller's timeout
and cancel scope reach the work (trimcp.client.tasks.TaskHandle.follow).

A trimcp.Server serves a 2026 stream in memory (``serve_stream``, the stdio path); a tool
declared ``task_support="optional"`` runs as a task because trimcp's client declares the
tasks extension. The autojump clock runs, so the deadlines below are exact in Trio time.
The same rows across processes, both eras, stdio and HTTP: tests/session/test_call_lifecycle.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count
from typing import Any

import pytest
import trio
import trio.testing

import trimcp
from tests.client.held_tasks import HoldingTools, task_status
from tests.server.helpers import text_of
from trimcp.client import Client, connect_transport
from trimcp.errors import RequestTimeout
from trimcp.server.middleware import Call, Next
from trimcp.server.tasks import TaskContext
from trimcp.session import SessionOptions
from trimcp.transports.memory import memory_transport_pair

OPTIONS = SessionOptions(request_timeout=60, max_request_timeout=20, cancel_notify_timeout=1)


class Tools(HoldingTools):
    """A server with a held tool and a busy one, and what their handlers did."""

    def __init__(self, **server_kwargs: Any) -> None:
        super().__init__("follow", **server_kwargs)

        @self.app.tool(task_support="optional")
        async def busy(ctx: trimcp.Context, seconds: float = 3) -> str:
            """Reports a new status message every ``seconds``, forever."""
            assert isinstance(ctx, TaskContext)
            self.task_ids.append(ctx.task_id)
            for step in count():
                await ctx.set_status_message(f"step {step}")
                await trio.sleep(seconds)
            return "unreachable"

        @self.app.tool(task_support="optional")
        async def quick(seconds: float) -> str:
            await trio.sleep(seconds)
            return f"slept {seconds:g}"


@asynccontextmanager
async def modern(tools: Tools) -> AsyncIterator[Client]:
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(tools.app.serve_stream, server_end)
        async with connect_transport(client_end, mode="auto", options=OPTIONS) as client:
            assert client.protocol_version == "2026-07-28"
            yield client
        nursery.cancel_scope.cancel()


async def test_the_timeout_bounds_the_whole_call_and_cancels_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as client:
        start = trio.current_time()
        with pytest.raises(RequestTimeout) as timed_out:
            await client.call_tool("hold", timeout=5)
        assert trio.current_time() - start == pytest.approx(5)
        assert timed_out.value.message == (
            "tools/call 'hold' got no answer within 5s (the timeout given to this call); "
            "the server was told to cancel it"
        )
        await tools.ended.wait()
        assert tools.how == ["cancelled"]
        assert await task_status(client, tools.task_ids[0]) == "cancelled"


async def test_the_session_default_timeout_applies_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as client:
        start = trio.current_time()
        with pytest.raises(RequestTimeout, match="the default request timeout"):
            await client.call_tool("hold")
        assert trio.current_time() - start == pytest.approx(OPTIONS.request_timeout)
        await tools.ended.wait()


async def test_a_task_ending_in_time_is_the_calls_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with modern(Tools()) as client:
        result = await client.call_tool("quick", {"seconds": 3}, timeout=5)
        assert text_of(result) == "slept 3"
        unbounded = await client.call_tool("quick", {"seconds": 1000}, timeout=None)
        assert text_of(unbounded) == "slept 1000"


async def test_status_changes_push_the_deadline_out_within_the_hard_maximum(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as client:
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await client.call_tool("busy", timeout=5, reset_timeout_on_progress=True)
        # A new status message every 3 s keeps restarting 5 s; max_request_timeout ends it.
        assert trio.current_time() - start == pytest.approx(OPTIONS.max_request_timeout)
        assert await task_status(client, tools.task_ids[0]) == "cancelled"
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await client.call_tool("busy", timeout=5)
        assert trio.current_time() - start == pytest.approx(5)  # not asked: no restart


async def test_cancelling_the_caller_cancels_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as client:
        with trio.move_on_after(2) as caller:
            await client.call_tool("hold")
        assert caller.cancelled_caught
        await tools.ended.wait()
        assert tools.how == ["cancelled"]
        assert await task_status(client, tools.task_ids[0]) == "cancelled"


async def test_telling_the_server_is_bounded_when_it_does_not_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def deaf_to_cancel(call: Call, call_next: Next) -> Any:
        if call.method == "tasks/cancel":
            await trio.sleep_forever()
        return await call_next(call)

    tools = Tools(middleware=[deaf_to_cancel])
    async with modern(tools) as client:
        start = trio.current_time()
        with trio.move_on_after(2):
            await client.call_tool("hold")
        # Shielded, then bounded by cancel_notify_timeout: the caller waits that long more.
        assert trio.current_time() - start == pytest.approx(2 + OPTIONS.cancel_notify_timeout)


async def test_call_tool_as_task_leaves_the_task_running_when_its_waiter_goes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tools = Tools()
    async with modern(tools) as client:
        handle = await client.call_tool_as_task("hold")
        with trio.move_on_after(2):
            await handle.result()
        assert await task_status(client, handle.task_id) == "working"
        assert not tools.ended.is_set()
        await handle.cancel()
        await tools.ended.wait()
        assert tools.how == ["cancelled"]
