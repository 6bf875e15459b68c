"""Timeouts per request, progress callbacks, deadline resets and the hard maximum."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from tests.support import make_server, raw_client, session_pair
from trimcp.errors import REQUEST_TIMEOUT, McpError, RequestTimeout
from trimcp.session import RequestContext, SessionOptions


def progress_server(steps: int, step_time: float) -> Any:
    server = make_server()
    seen: dict[str, Any] = {}

    @server.request_handler("work")
    async def work(ctx: RequestContext) -> dict[str, Any]:
        try:
            for i in range(steps):
                await trio.sleep(step_time)
                await ctx.report_progress(i + 1, steps, f"step {i + 1}")
            return {"steps": steps}
        except trio.Cancelled:
            seen["cancelled_at"] = trio.current_time()
            raise

    server.seen = seen  # type: ignore[attr-defined]
    return server


async def test_timeout_raises_and_cancels_the_server_handler(autojump_clock: Any) -> None:
    server = progress_server(steps=1, step_time=100)
    async with session_pair(server) as (client, _server):
        start = trio.current_time()
        with pytest.raises(RequestTimeout) as info:
            await client.send_request("work", timeout=3)
        assert info.value.code == REQUEST_TIMEOUT
        assert trio.current_time() - start == pytest.approx(3)
        await trio.testing.wait_all_tasks_blocked()
        assert server.seen["cancelled_at"] == pytest.approx(start + 3)


async def test_progress_callbacks_receive_every_update(autojump_clock: Any) -> None:
    server = progress_server(steps=3, step_time=1)
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with session_pair(server) as (client, _server):
        result = await client.send_request("work", on_progress=on_progress)
    assert result == {"steps": 3}
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_progress_resets_the_deadline(autojump_clock: Any) -> None:
    # 5 steps of 2 s each: 10 s in all, with a 3 s timeout that each progress resets.
    server = progress_server(steps=5, step_time=2)
    async with session_pair(server) as (client, _server):
        result = await client.send_request(
            "work", timeout=3, on_progress=lambda *_: None, reset_timeout_on_progress=True
        )
    assert result == {"steps": 5}


async def test_without_reset_progress_does_not_extend_the_deadline(autojump_clock: Any) -> None:
    server = progress_server(steps=5, step_time=2)
    async with session_pair(server) as (client, _server):
        with pytest.raises(RequestTimeout):
            await client.send_request("work", timeout=3, on_progress=lambda *_: None)


async def test_hard_maximum_holds_despite_progress(autojump_clock: Any) -> None:
    server = progress_server(steps=100, step_time=2)
    options = SessionOptions(max_request_timeout=15)
    async with session_pair(server, client_options=options) as (client, _server):
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await client.send_request(
                "work", timeout=3, on_progress=lambda *_: None, reset_timeout_on_progress=True
            )
        assert trio.current_time() - start == pytest.approx(15)


async def test_session_default_timeout_applies(autojump_clock: Any) -> None:
    server = progress_server(steps=1, step_time=100)
    async with session_pair(server, client_options=SessionOptions(request_timeout=7)) as (
        client,
        _server,
    ):
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await client.send_request("work")
        assert trio.current_time() - start == pytest.approx(7)


async def test_progress_after_the_end_is_dropped(autojump_clock: Any) -> None:
    updates: list[float] = []
    async with raw_client(make_server()) as (peer, server_session):
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                await server_session.send_request(
                    "ping", on_progress=lambda p, t, m: updates.append(p)
                )

            nursery.start_soon(ask)
            request = await peer.receive()
            token = request["params"]["_meta"]["progressToken"]
            await peer.notify("notifications/progress", {"progressToken": token, "progress": 1})
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        await peer.notify("notifications/progress", {"progressToken": token, "progress": 2})
        await trio.testing.wait_all_tasks_blocked()
    assert updates == [1]


async def test_progress_must_increase(autojump_clock: Any) -> None:
    server = make_server()

    @server.request_handler("bad")
    async def bad(ctx: RequestContext) -> dict[str, Any]:
        await ctx.report_progress(5)
        await ctx.report_progress(5)
        return {}

    async with session_pair(server) as (client, _server):
        with pytest.raises(McpError, match="Internal error"):
            await client.send_request("bad", on_progress=lambda *_: None)


async def test_handler_timeout_answers_with_request_timeout(autojump_clock: Any) -> None:
    server = progress_server(steps=1, step_time=100)
    async with session_pair(server, server_options=SessionOptions(handler_timeout=2)) as (
        client,
        _server,
    ):
        with pytest.raises(McpError, match="work exceeded the handler timeout") as info:
            # No client timeout: only the server's handler timeout can end the call.
            await client.send_request("work", timeout=None)
        assert info.value.code == REQUEST_TIMEOUT
        assert server.seen["cancelled_at"] == 2  # virtual time: the handler timeout
