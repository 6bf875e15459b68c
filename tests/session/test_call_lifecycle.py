"""A call is the caller's call, whatever shape the server gives it (docs/concurrency.md).

The same trimcp.Server (tests/peers/lifecycle_server.py) runs as a real subprocess, over
stdio and over Streamable HTTP (the lean engine); a trimcp client in each era calls a
task-capable tool (``task_support="optional"``: at 2026-07-28 the server runs the call as a
task, which the client follows) and a plain one, and ends the call each way:

- the caller cancels (its cancel scope, once the handler runs and the client follows the
  task the server made of the call; a caller cancelled before the answer that names the
  task arrived: tests/client/test_late_task_answer.py);
- the call's ``timeout=`` passes;
- the tool raises ``SystemExit`` (argparse in a tool) or ``KeyboardInterrupt``.

Each cell checks, through the server's probe tools (the side channel): the handler's
``finally`` ran and it saw ``trio.Cancelled`` (or raised), the client got the right outcome,
the server answers the next call, and at 2026 the task's status (``tasks/get``) is
``cancelled`` or ``failed``. ``call_tool_as_task`` keeps its promise (a cancelled wait leaves
the task running), a task that raises fails in both eras, and a real Ctrl-C to the server
process still stops it.

Real clock (subprocesses and sockets): every wait is bounded by ``fail_after`` and the
probes wait on events in the server; nothing sleeps and no time is asserted.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count
from typing import Any, Literal

import pytest
import trio

from tests.support import http_server_url
from trimcp.client import Client, connect_http, connect_stdio
from trimcp.client.stateless import Mode
from trimcp.errors import INTERNAL_ERROR, McpError, RequestTimeout, SessionClosed
from trimcp.types import TextContent

PEER = "tests.peers.lifecycle_server"
BOUND = 30.0
#: The ``timeout=`` of the timed-out calls (the one real wait of these tests).
TIMEOUT = 0.5

Transport = Literal["stdio", "http"]
Shape = Literal["task", "plain"]
ERAS: dict[Mode, str] = {"legacy": "2025-11-25", "auto": "2026-07-28"}

_keys = count()


@asynccontextmanager
async def connected(transport: Transport, mode: Mode) -> AsyncIterator[Client]:
    """A client in ``mode`` connected to a fresh server subprocess over ``transport``."""
    argv = [sys.executable, "-m", PEER, transport]
    if transport == "stdio":
        async with connect_stdio(argv, mode=mode) as client:
            assert client.protocol_version == ERAS[mode]
            yield client
        return
    async with http_server_url(argv, dict(os.environ)) as url, connect_http(url, mode=mode) as c:
        assert c.protocol_version == ERAS[mode]
        yield c


def text_of(result: Any) -> str:
    item = result.content[0]
    assert isinstance(item, TextContent)
    return item.text


async def ended(client: Client, key: str) -> dict[str, str]:
    """How the handler called with ``key`` ended (waits for its ``finally`` in the server)."""
    report: dict[str, str] = json.loads(
        text_of(await client.call_tool("ended", {"key": key}, timeout=None))
    )
    return report


async def cancel_once_under_way(client: Client, tool: str, key: str) -> None:
    """Call ``tool`` and cancel the caller's scope once its handler runs and, if the server
    made a task of the call, the client follows that task."""
    caller = trio.CancelScope()

    async def call() -> None:
        with caller:
            await client.call_tool(tool, {"key": key})
            raise AssertionError(f"{tool} returned")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        await client.call_tool("following", {"key": key}, timeout=None)
        caller.cancel()
    assert caller.cancelled_caught


async def task_status(client: Client, task_id: str) -> str:
    """The task's status now, from a fresh ``tasks/get``."""
    handle = await client.get_task(task_id)
    return (await handle.refresh()).status


def expected_timeout(tool: str) -> str:
    """What the plain path raises when ``timeout=TIMEOUT`` passes."""
    return (
        f"tools/call {tool!r} got no answer within {TIMEOUT:g}s (the timeout given to this "
        "call); the server was told to cancel it"
    )


Ending = Literal["cancel", "timeout", "system_exit", "keyboard_interrupt"]


@pytest.mark.parametrize("ending", ["cancel", "timeout", "system_exit", "keyboard_interrupt"])
@pytest.mark.parametrize("shape", ["task", "plain"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_call_ends_as_the_caller_says_whatever_its_shape(
    mode: Mode, transport: Transport, shape: Shape, ending: Ending
) -> None:
    key = f"{ending}-{next(_keys)}"
    with trio.fail_after(BOUND):
        async with connected(transport, mode) as client:
            if ending == "cancel":
                await cancel_once_under_way(client, f"hold_{shape}", key)
                how, status = "cancelled", "cancelled"
            elif ending == "timeout":
                tool = f"hold_{shape}"
                with pytest.raises(RequestTimeout) as timed_out:
                    await client.call_tool(tool, {"key": key}, timeout=TIMEOUT)
                assert timed_out.value.message == expected_timeout(tool)
                how, status = "cancelled", "cancelled"
            else:
                with pytest.raises(McpError) as raised:
                    await client.call_tool(f"{ending}_{shape}", {"key": key})
                assert raised.value.code == INTERNAL_ERROR
                assert raised.value.message == "Internal error"
                how = "raised SystemExit" if ending == "system_exit" else "raised KeyboardInterrupt"
                status = "failed"
            # The server goes on: it answers the probe, and the handler's finally ran.
            report = await ended(client, key)
            assert report["how"] == how
            if mode == "auto" and shape == "task":
                assert report["task"], "the server should have run the call as a task"
                assert await task_status(client, report["task"]) == status
            else:
                assert report["task"] == ""
            assert text_of(await client.call_tool("pid")).isdigit()


@pytest.mark.parametrize("ending", ["system_exit", "keyboard_interrupt"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_task_that_raises_fails_and_the_server_goes_on(
    mode: Mode, transport: Transport, ending: Ending
) -> None:
    key = f"as-task-{ending}-{next(_keys)}"
    with trio.fail_after(BOUND):
        async with connected(transport, mode) as client:
            handle = await client.call_tool_as_task(f"{ending}_task", {"key": key})
            with pytest.raises(McpError) as raised:
                await handle.result()
            assert (raised.value.code, raised.value.message) == (INTERNAL_ERROR, "Internal error")
            report = await ended(client, key)
            assert report["task"] == handle.task_id
            assert await task_status(client, handle.task_id) == "failed"
            assert text_of(await client.call_tool("pid")).isdigit()


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_call_tool_as_task_lets_the_task_outlive_its_waiter(
    mode: Mode, transport: Transport
) -> None:
    key = f"outlive-{next(_keys)}"
    with trio.fail_after(BOUND):
        async with connected(transport, mode) as client:
            handle = await client.call_tool_as_task("hold_task", {"key": key})
            await client.call_tool("started", {"key": key}, timeout=None)
            with trio.CancelScope() as waiting:
                waiting.cancel()
                await handle.result()
            # Nothing told the server: the task goes on until it is cancelled by request.
            assert await task_status(client, handle.task_id) == "working"
            await handle.cancel()
            assert (await ended(client, key))["how"] == "cancelled"
            assert await task_status(client, handle.task_id) == "cancelled"


@pytest.mark.parametrize("shape", ["task", "plain"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_real_ctrl_c_still_stops_the_server(mode: Mode, shape: Shape) -> None:
    """SIGINT while a handler runs Python code: Trio delivers ``KeyboardInterrupt`` to the
    server's main task (handlers and tasks run KI-protected), and the server stops. Were
    it raised in the handler, the mapping would answer it as the call's error instead."""
    key = f"ctrl-c-{next(_keys)}"
    with trio.fail_after(BOUND):
        async with connected("stdio", mode) as client:
            pid = int(text_of(await client.call_tool("pid")))
            outcome: list[BaseException] = []

            async def call() -> None:
                try:
                    await client.call_tool(f"spin_{shape}", {"key": key}, timeout=None)
                except McpError as exc:
                    outcome.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                await client.call_tool("started", {"key": key}, timeout=None)
                os.kill(pid, signal.SIGINT)
            [ended_with] = outcome
            assert isinstance(ended_with, SessionClosed), ended_with
            with pytest.raises(SessionClosed):
                await client.call_tool("pid")
