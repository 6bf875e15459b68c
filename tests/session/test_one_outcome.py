"""One handler outcome, one answer: both eras, over stdio and over HTTP, answer alike.

The same trimcp.Server (tests/peers/outcome_server.py) runs as a real stdio subprocess
and behind a real loopback HTTP server; a client in each era calls every tool. Each tool
ends its own way (a result, a tool error, an McpError, a plain exception, SystemExit,
KeyboardInterrupt, GeneratorExit raised by the tool's code, the server's handler
timeout), and every path must give the same answer: they all go through
trimcp.session.outcome.run_handler. The client's own timeout is off, so a timeout
answer can only come from the server.

Real clock (a subprocess and a socket cannot run on a virtual one): the handler timeout
is short and every wait is bounded.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import trio

from tests.peers.outcome_server import ENDINGS, build_server
from trimcp.client import Client, connect_http, connect_stdio
from trimcp.client.stateless import Mode
from trimcp.errors import McpError
from trimcp.session import SessionOptions
from trimcp.transports.http_server import HttpServerConfig, serve_http

HANDLER_TIMEOUT = 1.0
BOUND = 60.0

Connect = Callable[[Mode], AbstractAsyncContextManager[Client]]


@asynccontextmanager
async def over_stdio(mode: Mode) -> AsyncIterator[Client]:
    argv = [sys.executable, "-m", "tests.peers.outcome_server", str(HANDLER_TIMEOUT)]
    async with connect_stdio(argv, mode=mode) as client:
        yield client


@asynccontextmanager
async def over_http(mode: Mode) -> AsyncIterator[Client]:
    config = HttpServerConfig(session_options=SessionOptions(handler_timeout=HANDLER_TIMEOUT))
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve_http(
                build_server(), port=0, config=config, task_status=task_status
            )
        )
        url = f"http://127.0.0.1:{port}/mcp"
        async with connect_http(url, mode=mode) as client:
            yield client
        nursery.cancel_scope.cancel()


async def answers(client: Client) -> dict[str, tuple[Any, ...]]:
    """What each tool's call answers, in a form every path can be compared by."""
    seen: dict[str, tuple[Any, ...]] = {}
    for name in ENDINGS:
        try:
            result = await client.call_tool(name, timeout=None)
        except McpError as exc:  # also SessionClosed: the server is gone
            seen[name] = ("error", exc.code, exc.message, exc.data)
        else:
            texts = [getattr(item, "text", None) for item in result.content]
            seen[name] = ("result", bool(result.is_error), texts)
    return seen


PATHS: dict[str, tuple[Connect, Mode, str]] = {
    "session era over stdio": (over_stdio, "legacy", "2025-11-25"),
    "session era over HTTP": (over_http, "legacy", "2025-11-25"),
    "2026 over stdio": (over_stdio, "auto", "2026-07-28"),
    "2026 over HTTP": (over_http, "auto", "2026-07-28"),
}


async def test_every_path_answers_every_outcome_alike() -> None:
    by_path: dict[str, dict[str, tuple[Any, ...]]] = {}
    with trio.fail_after(BOUND):
        for path, (connect, mode, version) in PATHS.items():
            async with connect(mode) as client:
                assert client.protocol_version == version, path
                by_path[path] = await answers(client)

    internal = ("error", -32603, "Internal error", None)
    expected = {
        "keyboard_interrupt": internal,
        "system_exit": internal,
        "generator_exit": internal,
        "tool_error": ("result", True, ["no such city; pass a city name such as 'Paris'"]),
        "mcp_error": ("error", -32042, "the backend refused", {"why": "quota"}),
        "plain_error": ("result", True, ["Tool 'plain_error' failed: ValueError: bad value"]),
        "too_slow": ("error", -32001, "tools/call exceeded the handler timeout", None),
        "fine": ("result", False, ["ok"]),
    }
    # "fine" comes last: the server is still serving after all the rest.
    assert by_path == dict.fromkeys(PATHS, expected)
