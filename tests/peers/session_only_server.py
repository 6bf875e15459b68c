"""A trimcp server that speaks only the session era over stdio (it refuses
``server/discover`` as a 2025 server does): the stand-in for a session-era backend.
Tool ``echo(text)``."""

from __future__ import annotations

import trio

import trimcp
from trimcp.session import serve_session
from trimcp.transports.stdio import open_stdio_server_transport

app = trimcp.Server("session-only", version="1.0.0")


@app.tool()
def echo(text: str) -> str:
    return text


async def main() -> None:
    async with open_stdio_server_transport() as transport:
        await serve_session(transport, app)


if __name__ == "__main__":
    trio.run(main)
