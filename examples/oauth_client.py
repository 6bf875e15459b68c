"""Log in to a protected MCP server from a terminal, then call a tool.

    python examples/oauth_client.py http://127.0.0.1:8000/mcp

On the first 401 the client finds the server's authorization server, registers itself
(dynamic registration), prints the login URL and opens your browser; after you log in
the browser comes back to a listener on 127.0.0.1 and the call goes on. Tokens are kept
in ``~/.cache/trimcp-example-tokens.json`` (mode 0600), so the next run needs no login
until the refresh token runs out.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from trimcp import connect_http
from trimcp.auth import FileTokenStore, LoopbackBrowser, OAuthClient


async def main(url: str) -> None:
    auth = OAuthClient(
        interaction=LoopbackBrowser(),
        store=FileTokenStore(Path.home() / ".cache" / "trimcp-example-tokens.json"),
        client_name="trimcp example",
    )
    async with connect_http(url, auth=auth) as client:
        tools = [tool.name async for tool in client.iter_tools()]
        print("tools you may call:", tools)
        result = await client.call_tool("add_note", {"text": "hello"})
        print(*(getattr(block, "text", block) for block in result.content))


if __name__ == "__main__":
    trio.run(main, sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp")
