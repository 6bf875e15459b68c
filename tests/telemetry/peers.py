"""Tracing peers for the interop tests, one script with three roles.

``python tests/telemetry/peers.py sdk-server``: an official-SDK (mcp 2.x) MCPServer over
stdio whose tool ``trace_id`` returns the trace id current in its handler (the SDK
extracts it from ``_meta``).

``python tests/telemetry/peers.py trimcp-server``: the same tool on a trimcp.Server with
``ServerTracing``.

``python tests/telemetry/peers.py sdk-client -- SERVER ARGV``: the official SDK client,
with a tracer provider configured, calls ``trace_id`` inside a root span and prints
``{"root": <its trace id>, "seen": <what the server saw>}`` as JSON.
"""

from __future__ import annotations

import json
import os
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider


def current_trace_id() -> str:
    return format(trace.get_current_span().get_span_context().trace_id, "032x")


def sdk_server() -> None:
    from mcp.server.mcpserver import MCPServer

    trace.set_tracer_provider(TracerProvider())
    server = MCPServer("sdk-trace-peer")

    @server.tool()
    def trace_id() -> str:
        """The trace id current in this handler."""
        return current_trace_id()

    server.run("stdio")


def trimcp_server() -> None:
    from trimcp import Server
    from trimcp.telemetry import ServerTracing

    trace.set_tracer_provider(TracerProvider())
    app = Server("trimcp-trace-peer", middleware=[ServerTracing()])

    @app.tool()
    def trace_id() -> str:
        """The trace id current in this handler."""
        return current_trace_id()

    app.run()


def sdk_client(server_argv: list[str]) -> None:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    trace.set_tracer_provider(TracerProvider())
    tracer = trace.get_tracer("peer")

    async def run() -> None:
        params = StdioServerParameters(
            command=server_argv[0], args=server_argv[1:], env=dict(os.environ)
        )
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                with tracer.start_as_current_span("root") as root:
                    result = await s.call_tool("trace_id", {})
                    root_id = format(root.get_span_context().trace_id, "032x")
        print(json.dumps({"root": root_id, "seen": result.content[0].text}))  # type: ignore[union-attr]

    anyio.run(run)


if __name__ == "__main__":
    role = sys.argv[1]
    if role == "sdk-server":
        sdk_server()
    elif role == "trimcp-server":
        trimcp_server()
    else:
        sdk_client(sys.argv[sys.argv.index("--") + 1 :])
