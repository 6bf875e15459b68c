"""The server lifespan: entered once per serving loop, shared by every session, its value
on ``ctx.lifespan``; a failing lifespan stops serving with one clear error; per-session
state on ``ctx.session_state``."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

import trimcp
import trimcp.lowlevel
from tests.server.helpers import call_tool, connect, text_of
from trimcp._groups import unwrap_single_exception
from trimcp.server import Context, Server
from trimcp.server.lifespan import LifespanFailed
from trimcp.transports.http_server import serve_http
from trimcp.transports.memory import memory_transport_pair
from trimcp.transports.websocket import serve_websocket


class Counter:
    def __init__(self) -> None:
        self.entered = 0
        self.exited = 0


def counted_app(counter: Counter, *, fail: bool = False) -> Server:
    @asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[dict[str, Any]]:
        counter.entered += 1
        await trio.lowlevel.checkpoint()  # a real lifespan awaits (opens a pool...)
        if fail:
            raise ConnectionRefusedError("database at 127.0.0.1:5432 refused")
        try:
            yield {"pool": f"pool of {app.info.name}"}
        finally:
            counter.exited += 1

    app = Server("life", lifespan=lifespan)

    @app.tool()
    async def pool(ctx: Context) -> str:
        return str(ctx.lifespan["pool"])

    @app.tool()
    async def visit(ctx: Context) -> int:
        state = ctx.session_state
        state["visits"] = state.get("visits", 0) + 1
        return int(state["visits"])

    return app


async def test_entered_once_across_concurrent_sessions(autojump_clock: Any) -> None:
    counter = Counter()
    app = counted_app(counter)
    async with app.open_lifespan() as value:
        assert value == {"pool": "pool of life"}
        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(_one_call, app)
        assert counter.entered == 1
        assert counter.exited == 0
    assert (counter.entered, counter.exited) == (1, 1)
    with pytest.raises(trimcp.server.lifespan.LifespanNotRunning, match="not running"):
        _ = app.lifespan_value


async def _one_call(app: Server) -> None:
    async with connect(app) as (client, _):
        assert text_of(await call_tool(client, "pool")) == "pool of life"


async def test_serve_session_enters_it_when_nothing_else_did(autojump_clock: Any) -> None:
    counter = Counter()
    app = counted_app(counter)
    async with connect(app) as (client, _):
        assert counter.entered == 1
        assert text_of(await call_tool(client, "pool")) == "pool of life"
    assert counter.exited == 1


async def test_connect_memory_enters_it(autojump_clock: Any) -> None:
    counter = Counter()
    app = counted_app(counter)
    async with trimcp.connect_memory(app) as client:
        result = await client.call_tool("pool")
        assert text_of(result) == "pool of life"
    assert (counter.entered, counter.exited) == (1, 1)


async def test_lifespan_not_running_is_a_clear_tool_error(autojump_clock: Any) -> None:
    app = counted_app(Counter())
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        # The engine's serve_session does not know about lifespans: nothing entered it.
        await nursery.start(functools.partial(trimcp.lowlevel.serve_session, server_end, app))
        async with trimcp.connect_transport(client_end) as client:
            result = await client.call_tool("pool")
        nursery.cancel_scope.cancel()
    assert result.is_error is True
    assert "lifespan of server 'life' is not running" in text_of(result)


async def test_session_state_is_per_session(autojump_clock: Any) -> None:
    app = counted_app(Counter())
    async with app.open_lifespan(), connect(app) as (first, _), connect(app) as (second, _):
        assert text_of(await call_tool(first, "visit")) == "1"
        assert text_of(await call_tool(first, "visit")) == "2"
        assert text_of(await call_tool(second, "visit")) == "1"


async def test_entered_once_for_every_http_session() -> None:
    counter = Counter()
    app = counted_app(counter)
    stop = trio.Event()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                functools.partial(serve_http, app, port=0, shutdown_trigger=stop.wait)
            )
            for _ in range(3):
                async with trimcp.connect_http(f"http://127.0.0.1:{port}/mcp") as client:
                    assert text_of(await client.call_tool("pool")) == "pool of life"
            assert (counter.entered, counter.exited) == (1, 0)
            stop.set()
    assert (counter.entered, counter.exited) == (1, 1)


async def test_entered_once_for_every_websocket_connection() -> None:
    counter = Counter()
    app = counted_app(counter)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(functools.partial(serve_websocket, app, port=0))
            for _ in range(3):
                async with trimcp.connect_websocket(f"ws://127.0.0.1:{port}/mcp") as client:
                    assert text_of(await client.call_tool("pool")) == "pool of life"
            assert (counter.entered, counter.exited) == (1, 0)
            nursery.cancel_scope.cancel()
    assert (counter.entered, counter.exited) == (1, 1)


async def test_a_failing_lifespan_stops_serving_with_one_clear_error() -> None:
    counter = Counter()
    app = counted_app(counter, fail=True)
    with trio.fail_after(30), pytest.raises(LifespanFailed) as info:
        async with unwrap_single_exception():  # serve_http's own nursery wraps it
            await serve_http(app, port=0)
    message = str(info.value)
    assert "lifespan of server 'life' failed while starting" in message
    assert "ConnectionRefusedError: database at 127.0.0.1:5432 refused" in message
    assert isinstance(info.value.__cause__, ConnectionRefusedError)
    # Concurrent users of a failed lifespan fail the same way.
    async with trio.open_nursery() as nursery:
        errors: list[BaseException] = []

        async def enter() -> None:
            try:
                async with app.open_lifespan():
                    pass
            except LifespanFailed as exc:
                errors.append(exc)

        nursery.start_soon(enter)
        nursery.start_soon(enter)
    assert len(errors) == 2
