"""Logging to clients: per-session levels, ctx.log, and the bridge from Python's logging."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import trio
import trio.testing

from tests.server.helpers import ScriptedClient, call_tool, connect, wire
from trimcp.server import Context, Server
from trimcp.server.logging import LogBuffer, level_enabled, mcp_level
from trimcp.types import LoggingMessageNotificationParams


def messages(client: ScriptedClient) -> list[Any]:
    return [
        wire(params) for method, params in client.notifications if method == "notifications/message"
    ]


def build_app() -> Server:
    app = Server("logging-test")

    @app.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("d")
        await ctx.info({"step": 1}, logger="worker")
        await ctx.notice("n")
        await ctx.warning("w")
        await ctx.error("e")
        await ctx.log("emergency", "!")
        await ctx.info(object.__new__(Unprintable))
        return "ok"

    @app.tool()
    def stdlib(level: int, text: str) -> str:
        logging.getLogger("myapp.part").log(level, text)
        return "ok"

    return app


class Unprintable:
    def __str__(self) -> str:
        return "<unprintable>"


@pytest.fixture
def bridged() -> Iterator[tuple[Server, logging.Handler]]:
    app = build_app()
    handler = app.bridge_stdlib_logging("myapp")
    logger = logging.getLogger("myapp")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    yield app, handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


async def test_everything_is_sent_until_the_client_sets_a_level(autojump_clock: Any) -> None:
    recorder = ScriptedClient()
    async with connect(build_app(), recorder) as (client, _):
        await call_tool(client, "chatty")
        await trio.testing.wait_all_tasks_blocked()
        assert messages(recorder) == [
            {"level": "debug", "data": "d"},
            {"level": "info", "data": {"step": 1}, "logger": "worker"},
            {"level": "notice", "data": "n"},
            {"level": "warning", "data": "w"},
            {"level": "error", "data": "e"},
            {"level": "emergency", "data": "!"},
            {"level": "info", "data": "<unprintable>"},
        ]
        recorder.notifications.clear()
        await client.send_request("logging/setLevel", {"level": "warning"})
        await call_tool(client, "chatty")
        await trio.testing.wait_all_tasks_blocked()
        assert [m["level"] for m in messages(recorder)] == ["warning", "error", "emergency"]


async def test_levels_are_per_session(autojump_clock: Any) -> None:
    app = build_app()
    quiet, loud = ScriptedClient(), ScriptedClient()
    async with connect(app, quiet) as (quiet_client, _), connect(app, loud) as (loud_client, _):
        await quiet_client.send_request("logging/setLevel", {"level": "error"})
        await loud_client.send_request("logging/setLevel", {"level": "debug"})
        await call_tool(quiet_client, "chatty")
        await call_tool(loud_client, "chatty")
        await trio.testing.wait_all_tasks_blocked()
    assert [m["level"] for m in messages(quiet)] == ["error", "emergency"]
    assert len(messages(loud)) == 7


async def test_stdlib_records_reach_sessions_by_their_level(
    autojump_clock: Any, bridged: tuple[Server, logging.Handler]
) -> None:
    app, _ = bridged
    one, two = ScriptedClient(), ScriptedClient()
    async with connect(app, one) as (client_one, _), connect(app, two) as (client_two, _):
        await client_two.send_request("logging/setLevel", {"level": "warning"})
        await call_tool(client_one, "stdlib", {"level": logging.INFO, "text": "hello"})
        await call_tool(client_one, "stdlib", {"level": logging.ERROR, "text": "bad"})
        logging.getLogger("trimcp.something").error("never forwarded")
        logging.getLogger("other").error("not bridged")
        await trio.testing.wait_all_tasks_blocked()
    assert messages(one) == [
        {"level": "info", "data": "hello", "logger": "myapp.part"},
        {"level": "error", "data": "bad", "logger": "myapp.part"},
    ]
    assert messages(two) == [{"level": "error", "data": "bad", "logger": "myapp.part"}]


async def test_a_full_buffer_drops_the_oldest_records(autojump_clock: Any) -> None:
    app = Server("small", log_buffer=3)
    handler = app.bridge_stdlib_logging("burst")
    logger = logging.getLogger("burst")
    logger.setLevel(logging.INFO)
    recorder = ScriptedClient()
    try:
        async with connect(app, recorder) as (_, server):
            for n in range(10):  # no checkpoint: the session cannot send in between
                logger.info("record %d", n)
            await trio.testing.wait_all_tasks_blocked()
            assert [m["data"] for m in messages(recorder)] == ["record 7", "record 8", "record 9"]
            assert app._sessions.state(server).dropped_logs == 7
    finally:
        logger.removeHandler(handler)


async def test_records_logged_from_a_worker_thread_arrive(
    bridged: tuple[Server, logging.Handler],
) -> None:
    # No autojump clock: it would race the worker thread.
    app, _ = bridged
    arrived = trio.Event()

    class Waiting(ScriptedClient):
        async def handle_notification(self, session: Any, method: str, params: Any) -> None:
            await super().handle_notification(session, method, params)
            arrived.set()

    recorder = Waiting()
    async with connect(app, recorder):
        await trio.to_thread.run_sync(logging.getLogger("myapp").warning, "from a thread")
        with trio.fail_after(5):
            await arrived.wait()
    assert messages(recorder) == [{"level": "warning", "data": "from a thread", "logger": "myapp"}]


async def test_send_log_refuses_unknown_levels(autojump_clock: Any) -> None:
    app = build_app()
    async with connect(app) as (_, server):
        with pytest.raises(ValueError, match="Unknown logging level"):
            await app.send_log(server, "verbose", "x")  # type: ignore[arg-type]


def test_level_helpers() -> None:
    assert level_enabled(None, "debug")
    assert level_enabled("warning", "error")
    assert not level_enabled("warning", "notice")
    assert [mcp_level(n) for n in (5, 10, 20, 30, 40, 50, 60)] == [
        "debug",
        "debug",
        "info",
        "warning",
        "error",
        "critical",
        "critical",
    ]
    buffer = LogBuffer(2)
    record = LoggingMessageNotificationParams(level="info", data="x")
    for _ in range(5):
        buffer.push(record)
    records, position, dropped = buffer.since(0)
    assert (len(records), position, dropped) == (2, 5, 3)
    assert buffer.since(5) == ([], 5, 0)
    with pytest.raises(ValueError, match="room for at least one record"):
        LogBuffer(0)
