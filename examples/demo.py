"""The demo: a trimcp client launches the demo server over stdio and talks to it.

Prints a transcript of what it does: the handshake, listing, a structured tool call, a call
with progress that the client cancels on a deadline (the server's handler is cancelled
too), a resource read and a prompt.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

import trimcp

SERVER = Path(__file__).with_name("demo_server.py")


def say(text: str) -> None:
    print(text, flush=True)


async def main() -> None:
    async with trimcp.connect_stdio([sys.executable, str(SERVER)]) as client:
        info = client.server_info
        say(f"connected to {info.name} {info.version} (protocol {client.protocol_version})")
        say(f"  instructions: {client.instructions}")

        tools = await client.list_tools()
        say("tools:")
        for tool in tools.tools:
            say(f"  - {tool.name}: {tool.description}")

        result = await client.call_tool("add", {"a": 2, "b": 40})
        say(f"add(2, 40) -> {result.structured_content}")

        def show(progress: float, total: float | None, message: str | None) -> None:
            say(f"  progress {progress:g}/{total:g}: {message}")

        say("count_slowly(to=10), cancelled after 2.5 s:")
        with trio.move_on_after(2.5) as deadline:
            await client.call_tool("count_slowly", {"to": 10}, on_progress=show)
        if deadline.cancelled_caught:
            say("  cancelled: the server was sent notifications/cancelled")

        contents = await client.read_resource("demo://greeting")
        say(f"read demo://greeting -> {contents.contents[0].text!r}")

        prompt = await client.get_prompt("review", {"code": "print('hi')"})
        say(f"prompt 'review' -> {prompt.messages[0].content.text.splitlines()[0]!r}")
    say("closed the session; the server process has exited")


if __name__ == "__main__":
    trio.run(main)
