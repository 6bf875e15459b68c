"""Progress during a task (2025-11-25): the ``progressToken`` of the task-augmented request
stays valid until the task reaches a terminal status, though the request itself was answered
at once with ``CreateTaskResult``. Checked on the wire (a raw client), end to end with
trimcp's client (``call_tool_as_task(on_progress=...)``), and after the end (nothing)."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

import trimcp
from tests.support import RawPeer, raw_client
from tests.tasks.helpers import serve
from trimcp.client import Client
from trimcp.protocol.lifecycle import Role
from trimcp.server.tasks import TaskOptions
from trimcp.session import open_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import RELATED_TASK_META_KEY

#: What the tools saw of their own end (name -> events).
seen: dict[str, list[str]] = {}


def progress_app() -> trimcp.Server:
    app = trimcp.Server("progress", task_options=TaskOptions(poll_interval=5))

    @app.tool(task_support="optional")
    async def count(steps: int, ctx: trimcp.Context) -> str:
        """Count to ``steps``, one a second, reporting progress."""
        for step in range(1, steps + 1):
            await trio.sleep(1)
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted to {steps}"

    @app.tool(task_support="optional")
    async def eager(ctx: trimcp.Context) -> str:
        """Report progress at once (perhaps before the handle is sent), then later."""
        for step in range(1, 4):
            await ctx.report_progress(step, 6)
        await trio.sleep(1)
        for step in range(4, 7):
            await ctx.report_progress(step, 6)
        return "eager"

    @app.tool(task_support="optional")
    async def stubborn(ctx: trimcp.Context) -> str:
        """Report progress, then keep reporting after being cancelled (shielded)."""
        await ctx.report_progress(1, 10)
        try:
            await trio.sleep(3600)
        finally:
            with trio.CancelScope(shield=True):
                await ctx.report_progress(2, 10, "after the end")
                seen.setdefault("stubborn", []).append("reported after the end")
        return "never"

    return app


async def test_the_server_sends_task_progress_with_the_original_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = progress_app()
    async with app.tasks.open(), raw_client(app) as (peer, _):
        call = {
            "name": "count",
            "arguments": {"steps": 3},
            "task": {"ttl": 60_000},
            "_meta": {"progressToken": "p-1"},
        }
        created = await peer.request(1, "tools/call", call)
        task_id = created["result"]["task"]["taskId"]
        got: list[dict[str, Any]] = []
        while len(got) < 3:
            message = await peer.receive()
            if message.get("method") == "notifications/progress":
                got.append(message["params"])
        assert [(p["progressToken"], p["progress"], p["total"]) for p in got] == [
            ("p-1", 1, 3),
            ("p-1", 2, 3),
            ("p-1", 3, 3),
        ]
        assert all(p["_meta"][RELATED_TASK_META_KEY] == {"taskId": task_id} for p in got)


async def test_no_task_progress_after_the_terminal_status(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen.clear()
    app = progress_app()
    async with app.tasks.open(), raw_client(app) as (peer, _):
        call = {"name": "stubborn", "task": {}, "_meta": {"progressToken": 7}}
        task_id = (await peer.request(1, "tools/call", call))["result"]["task"]["taskId"]
        first = await peer.receive()
        assert first["method"] == "notifications/progress"
        assert first["params"]["progress"] == 1
        await peer.send(
            {"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel", "params": {"taskId": task_id}}
        )
        after: list[dict[str, Any]] = []
        while not after or after[-1].get("id") != 2:
            after.append(await peer.receive())
        assert after[-1]["result"]["status"] == "cancelled"
        await trio.testing.wait_all_tasks_blocked()
        assert seen["stubborn"] == ["reported after the end"]
        after += peer.receive_nowait_all()
        assert [m for m in after if m.get("method") == "notifications/progress"] == []
        assert [m["params"]["status"] for m in after if "status" in m.get("params", {})] == [
            "cancelled"
        ]


async def test_call_tool_as_task_delivers_progress_to_its_callback(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = progress_app()
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with serve(app) as client:
        handle = await client.call_tool_as_task("count", {"steps": 3}, on_progress=on_progress)
        result = await handle.result()
        assert result.content[0].text == "counted to 3"  # type: ignore[union-attr]
        assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_progress_reaches_the_callback_while_nobody_waits_on_the_handle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = progress_app()
    updates: list[float] = []
    global_updates: list[trimcp.client.Progress] = []

    async with serve(app, on_progress=global_updates.append) as client:
        handle = await client.call_tool_as_task(
            "count", {"steps": 4}, on_progress=lambda p, t, m: updates.append(p)
        )
        await trio.sleep(2.5)  # the caller does something else
        assert updates == [1, 2]
        await trio.sleep(10)
        assert updates == [1, 2, 3, 4]
        assert [u.progress for u in global_updates] == [1, 2, 3, 4]
        assert {(u.method, u.target) for u in global_updates} == {("tools/call", "count")}
        assert (await handle.wait()).status == "completed"


async def test_progress_before_and_after_the_handle_arrives_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = progress_app()
    updates: list[float] = []

    async def slow_callback(progress: float, total: float | None, message: str | None) -> None:
        await trio.sleep(0.1)  # the caller is still busy with the first when more come
        updates.append(progress)

    async with serve(app) as client:
        handle = await client.call_tool_as_task("eager", on_progress=slow_callback)
        assert (await handle.result()).content[0].text == "eager"  # type: ignore[union-attr]
        await trio.sleep(1)
        assert updates == [1, 2, 3, 4, 5, 6]


async def test_no_progress_callback_after_the_task_ended(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = progress_app()
    updates: list[float] = []
    async with serve(app) as client:
        handle = await client.call_tool_as_task(
            "stubborn", on_progress=lambda p, t, m: updates.append(p)
        )
        await trio.sleep(1)
        assert updates == [1]
        await handle.cancel()
        await trio.sleep(1)
        assert updates == [1]
        assert client.session.followed_tasks == 0


async def test_progress_sent_before_the_handle_is_not_lost_or_reordered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A raw server reports progress before answering CreateTaskResult, then after it.
    client = Client(mode="2025-11-25")
    client_end, server_end = memory_transport_pair()
    peer = RawPeer(server_end)
    updates: list[float] = []

    async def slow_callback(progress: float, total: float | None, message: str | None) -> None:
        await trio.sleep(0.1)  # still in the first update when the answer comes
        updates.append(progress)

    async def server() -> None:
        init = await peer.receive()
        caps: dict[str, Any] = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": caps,
            "serverInfo": {"name": "raw", "version": "0"},
        }
        await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": result})
        await peer.receive()  # notifications/initialized
        call = await peer.receive()
        assert call["method"] == "tools/call"
        token = call["params"]["_meta"]["progressToken"]
        for value in (1, 2, 3):
            await peer.notify("notifications/progress", {"progressToken": token, "progress": value})
        task = {
            "taskId": "t1",
            "status": "working",
            "createdAt": "2025-11-25T10:00:00Z",
            "lastUpdatedAt": "2025-11-25T10:00:00Z",
            "ttl": None,
        }
        await peer.send({"jsonrpc": "2.0", "id": call["id"], "result": {"task": task}})
        for value in (4, 5):
            await peer.notify("notifications/progress", {"progressToken": token, "progress": value})
        await peer.notify("notifications/tasks/status", {**task, "status": "completed"})
        await peer.notify("notifications/progress", {"progressToken": token, "progress": 6})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server)
        async with open_session(client_end, role=Role.CLIENT, handler=client) as own:
            await client.attach(own)
            handle = await client.call_tool_as_task("slow", on_progress=slow_callback)
            await trio.sleep(5)
            assert handle.done  # the status notification
            assert updates == [1, 2, 3, 4, 5]  # not 6: after the terminal status


async def test_many_tasks_with_progress_leave_nothing_followed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # 300 concurrent tasks, each reporting 3 steps: every update reaches its own callback,
    # and once they have ended neither the core nor the engine keeps anything for them.
    app = progress_app()
    updates: dict[str, list[float]] = {}

    async with serve(app) as client:

        async def one(index: int) -> None:
            seen = updates.setdefault(str(index), [])
            handle = await client.call_tool_as_task(
                "count", {"steps": 3}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert (await handle.wait()).status == "completed"

        async with trio.open_nursery() as nursery:
            for index in range(300):
                nursery.start_soon(one, index)
        await trio.testing.wait_all_tasks_blocked()
        assert all(seen == [1, 2, 3] for seen in updates.values())
        assert len(updates) == 300
        assert client.session.followed_tasks == 0
