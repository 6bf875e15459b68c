"""An official-SDK (mcp 2.x) MCP server over HTTP, served by uvicorn: an interop peer.

Run: ``python tests/http_client/sdk_http_server.py MODE`` with MODE one of ``stateful``
(Streamable HTTP, SSE answers, sessions), ``stateless``, ``json`` (stateful, JSON
answers) or ``sse`` (the 2024-11-05 HTTP+SSE transport, event stream at ``/sse``).
It binds 127.0.0.1 on a free port and prints the port on the first line of stdout.
The Streamable HTTP endpoint is ``/mcp``.

Tools: ``echo(text)``, ``add(a, b)``, ``progress(steps)`` (reports each step).
"""

from __future__ import annotations

import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-http-peer", version="0.1.0", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report ``steps`` progress notifications, then return "done"."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps)
    return "done"


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stateful"
    if mode == "sse":
        app = server.sse_app()
    else:
        app = server.streamable_http_app(
            stateless_http=mode == "stateless", json_response=mode == "json"
        )
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only when the
    # listening socket says it is TCP; without it every keep-alive answer stalls ~40 ms.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
