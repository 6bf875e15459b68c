"""Benchmark server: the official SDK's high-level ``MCPServer`` (v1's FastMCP) serving
``echo`` over stdio.

Run: ``python benchmarks/servers/sdk_highlevel.py``. Logging at WARNING, like every
benchmark server (``MCPServer`` configures the root logger itself from ``log_level``).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk-highlevel", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


if __name__ == "__main__":
    server.run("stdio")
