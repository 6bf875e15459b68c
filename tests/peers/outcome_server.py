"""A trimcp.Server whose tools end in every way a handler can (tests/session/test_one_outcome.py).

``python -m tests.peers.outcome_server SECONDS`` serves it over stdio (either era, as the
first request asks) with a handler timeout of SECONDS.
"""

from __future__ import annotations

import functools
import sys

import trio

from trimcp import Server
from trimcp.errors import McpError
from trimcp.server.tools import ToolError
from trimcp.session import SessionOptions

#: The tools, by what they end with.
ENDINGS = (
    "keyboard_interrupt",
    "system_exit",
    "generator_exit",
    "tool_error",
    "mcp_error",
    "plain_error",
    "too_slow",
    "fine",
)


def build_server() -> Server:
    server = Server("outcomes")

    @server.tool()
    async def keyboard_interrupt() -> str:
        raise KeyboardInterrupt

    @server.tool()
    async def system_exit() -> str:
        raise SystemExit(2)  # what argparse does with bad arguments

    @server.tool()
    async def generator_exit() -> str:
        raise GeneratorExit

    @server.tool()
    async def tool_error() -> str:
        raise ToolError("no such city; pass a city name such as 'Paris'")

    @server.tool()
    async def mcp_error() -> str:
        raise McpError(-32042, "the backend refused", {"why": "quota"})

    @server.tool()
    async def plain_error() -> str:
        raise ValueError("bad value")

    @server.tool()
    async def too_slow() -> str:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    @server.tool()
    async def fine() -> str:
        return "ok"

    return server


if __name__ == "__main__":
    options = SessionOptions(handler_timeout=float(sys.argv[1]))
    trio.run(functools.partial(build_server().serve_stdio, options=options))
