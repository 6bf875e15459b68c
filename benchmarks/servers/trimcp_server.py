"""Benchmark server on trimcp, over stdio or Streamable HTTP.

Tools (the same set as ``sdk_lowlevel_many.py``, so workloads are comparable):

- ``echo(text)`` returns ``text``;
- ``sleep(ms)`` sleeps ``ms`` milliseconds (the cancellation storm's victim);
- ``stats()`` returns JSON ``{"live", "started", "finished", "cancelled"}`` about every
  ``echo``/``sleep``/filler call so far: ``live`` handlers still running is the leak
  figure of the storm;
- with ``--tools N``, ``N`` filler tools ``tool_0 .. tool_{N-1}`` (each an echo), for the
  ``tools/list`` workloads; ``--page-size P`` paginates ``tools/list`` (P per page).

``--api lowlevel`` (default) uses :class:`trimcp.server.lowlevel.LowLevelServer`;
``--api app`` uses the ``trimcp.Server`` decorator framework. ``--http PORT`` serves
Streamable HTTP on 127.0.0.1 (``--json-response`` for JSON answers instead of SSE),
through ``trimcp.transports.http_server.serve_http`` with its default engine (``auto``:
trimcp's lean h11 server, as a user gets it; ``--engine hypercorn`` to compare).
``--check`` only reports whether the chosen combination is available.

Exit status 3 (with the reason on stderr) when the framework or the HTTP server is not
available in this checkout, so the benchmark suite can skip the row. Logging at WARNING,
like every benchmark server.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import logging
import sys
from typing import Any

import trio

EXIT_UNAVAILABLE = 3


class Stats:
    """Counts of tool handlers (``stats`` itself excluded); one instance per process."""

    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self.cancelled = 0

    def snapshot(self) -> str:
        return json.dumps(
            {
                "live": self.started - self.finished,
                "started": self.started,
                "finished": self.finished,
                "cancelled": self.cancelled,
            }
        )


STATS = Stats()


def _input_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


ECHO_SCHEMA = _input_schema({"text": {"type": "string"}}, ["text"])
SLEEP_SCHEMA = _input_schema({"ms": {"type": "number", "minimum": 0}}, ["ms"])


# ----------------------------------------------------------------------------- low level


def build_lowlevel(tools: int, page_size: int | None) -> Any:
    """A :class:`LowLevelServer` answering tools/list and tools/call for the tool set."""
    from trimcp.errors import INVALID_PARAMS, McpError
    from trimcp.protocol.pagination import paginate
    from trimcp.server.lowlevel import LowLevelServer
    from trimcp.session import RequestContext
    from trimcp.types import (
        CallToolResult,
        Implementation,
        ListToolsResult,
        ServerCapabilities,
        TextContent,
        Tool,
        ToolsCapability,
    )

    server = LowLevelServer(
        Implementation(name="trimcp-bench", version="1.0.0"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )
    table = [
        Tool(name="echo", description="Echo the text back.", input_schema=ECHO_SCHEMA),
        Tool(name="sleep", description="Sleep for ms milliseconds.", input_schema=SLEEP_SCHEMA),
        Tool(name="stats", description="Handler counts.", input_schema=_input_schema({}, [])),
    ]
    fillers = {f"tool_{i}" for i in range(tools)}
    table += [
        Tool(name=name, description=f"Filler tool {name}: echoes text.", input_schema=ECHO_SCHEMA)
        for name in sorted(fillers, key=lambda n: int(n[5:]))
    ]

    @server.request_handler("tools/list")
    async def list_tools(ctx: RequestContext) -> ListToolsResult:
        page, cursor = paginate(table, ctx.params.cursor, page_size, key=lambda t: t.name)
        return ListToolsResult(tools=page, next_cursor=cursor)

    def text(value: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=value)])

    @server.request_handler("tools/call")
    async def call_tool(ctx: RequestContext) -> CallToolResult:
        name = ctx.params.name
        arguments = ctx.params.arguments or {}
        if name == "stats":
            return text(STATS.snapshot())
        STATS.started += 1
        done = False
        try:
            if name == "sleep":
                await trio.sleep(float(arguments.get("ms", 0)) / 1000.0)
                done = True
                return text("slept")
            if name == "echo" or name in fillers:
                done = True
                return text(str(arguments.get("text", "")))
            done = True
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name}")
        finally:
            STATS.finished += 1
            if not done:
                STATS.cancelled += 1

    return server


# ----------------------------------------------------------------------------- framework


def build_app(tools: int, page_size: int | None) -> Any:
    """The same tools on the ``trimcp.Server`` decorator framework.

    Raises ``ImportError`` (with the reason) when the framework is not in this checkout.
    """
    import trimcp

    server_cls: Any = getattr(trimcp, "Server", None)
    if server_cls is None:
        # Until the framework is re-exported from the package root.
        try:
            from trimcp.server.app import Server as server_cls
        except ImportError as exc:
            raise ImportError(f"the trimcp.Server decorator framework is missing: {exc}") from exc
    kwargs: dict[str, Any] = {"version": "1.0.0"}
    if page_size is not None:
        if "page_size" not in inspect.signature(server_cls).parameters:
            raise ImportError("trimcp.Server takes no page_size: cannot paginate tools/list")
        kwargs["page_size"] = page_size
    app = server_cls("trimcp-bench-app", **kwargs)

    async def echo(text: str) -> str:
        """Echo the text back."""
        STATS.started += 1
        try:
            return text
        finally:
            STATS.finished += 1

    async def sleep(ms: float) -> str:
        """Sleep for ms milliseconds."""
        STATS.started += 1
        done = False
        try:
            await trio.sleep(ms / 1000.0)
            done = True
            return "slept"
        finally:
            STATS.finished += 1
            if not done:
                STATS.cancelled += 1

    async def stats() -> str:
        """Handler counts."""
        return STATS.snapshot()

    for tool in (echo, sleep, stats):
        app.add_tool(tool)

    async def filler(text: str) -> str:
        STATS.started += 1
        STATS.finished += 1
        return text

    for i in range(tools):
        app.add_tool(filler, name=f"tool_{i}", description=f"Filler tool tool_{i}: echoes text.")
    return app


# ----------------------------------------------------------------------------- serving


def http_server_module() -> Any:
    """``trimcp.transports.http_server`` when it exposes ``serve_http``; else ImportError."""
    module = importlib.import_module("trimcp.transports.http_server")
    if not hasattr(module, "serve_http"):
        raise ImportError("trimcp.transports.http_server does not expose serve_http yet")
    return module


async def serve_http(handler: Any, port: int, json_response: bool, engine: str = "auto") -> None:
    module = http_server_module()
    from trimcp.transports.http_server.config import HttpServerConfig

    # Room for the idle-session workload (1,000 sessions plus warm-up) and no reaping
    # during a run; every other limit stays at its default.
    config = HttpServerConfig(json_response=json_response, max_sessions=4096)
    await module.serve_http(handler, host="127.0.0.1", port=port, config=config, engine=engine)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=("lowlevel", "app"), default="lowlevel")
    parser.add_argument("--tools", type=int, default=0, help="filler tools to register")
    parser.add_argument("--page-size", type=int, default=None, help="paginate tools/list")
    parser.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve Streamable HTTP (with --check: check HTTP support)",
    )
    parser.add_argument("--json-response", action="store_true", help="JSON answers over HTTP")
    parser.add_argument(
        "--engine",
        choices=("auto", "hypercorn", "lean"),
        default="auto",
        help="serve_http's HTTP engine (default: auto, the lean h11 server)",
    )
    parser.add_argument("--check", action="store_true", help="only check availability")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = _parse(sys.argv[1:] if argv is None else argv)
    try:
        if opts.api == "app":
            handler = build_app(opts.tools, opts.page_size)
        else:
            handler = build_lowlevel(opts.tools, opts.page_size)
        if opts.http is not None:
            http_server_module()
    except ImportError as exc:
        print(f"trimcp_server: unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    if opts.check:
        return 0
    logging.basicConfig(level=logging.WARNING)
    if opts.http is not None:
        trio.run(serve_http, handler, opts.http, opts.json_response, opts.engine)
    else:
        if hasattr(handler, "serve_stdio"):  # the framework also delivers notifications
            trio.run(handler.serve_stdio)
        else:
            from trimcp.transports.stdio import serve_stdio

            trio.run(serve_stdio, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
