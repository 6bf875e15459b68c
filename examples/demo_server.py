"""The demo server: a small trimcp.Server with a tool, a resource, a prompt.

Run it on its own with ``python examples/demo_server.py`` (it speaks MCP on stdio), or let
``examples/demo.py`` launch it and talk to it.
"""

from __future__ import annotations

import trio

from trimcp import Context, Server

app = Server("demo", version="1.0.0", instructions="A tiny server that shows trimcp off.")


@app.tool()
async def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@app.tool()
async def count_slowly(to: int, *, ctx: Context) -> str:
    """Count to ``to``, one step a second, reporting progress as it goes."""
    for step in range(1, to + 1):
        await trio.sleep(1)
        await ctx.report_progress(step, to, f"counted {step}")
    return f"counted to {to}"


@app.resource("demo://greeting", mime_type="text/plain")
def greeting() -> str:
    """A friendly text resource."""
    return "Hello from trimcp!"


@app.prompt()
def review(code: str) -> str:
    """Ask for a code review."""
    return f"Please review this code:\n\n{code}"


if __name__ == "__main__":
    app.run()
