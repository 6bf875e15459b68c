"""A ``trimcp.Server`` over stdio with the tools the official SDK's peer client drives.

``echo(text)``, ``add(a, b)`` (structured, with a generated output schema), ``slow(seconds)``
(reports progress when it starts; writes ``started/cancelled <id>`` to ``$TRIMCP_PEER_LOG``),
``progress(steps)``, a resource and a ``greet`` prompt. Run by ``test_sdk_interop.py``.
"""

from __future__ import annotations

import os

import attrs
import trio

from trimcp.server import Context, Server

app = Server("trimcp-framework-peer", "1.0.0")


@attrs.frozen
class Sum:
    sum: float


def _log(line: str) -> None:
    path = os.environ.get("TRIMCP_PEER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(line + "\n")


@app.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool()
def add(a: float, b: float) -> Sum:
    """Add two numbers."""
    return Sum(a + b)


@app.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep, reporting the start through progress."""
    _log(f"started {ctx.request_id}")
    await ctx.report_progress(0, 1, "started")
    try:
        await trio.sleep(seconds)
    except trio.Cancelled:
        _log(f"cancelled {ctx.request_id}")
        raise
    return "done"


@app.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress in steps."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"{steps} steps"


@app.resource("memo://hello", mime_type="text/plain")
def hello() -> str:
    return "hello from a trimcp resource"


@app.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    app.run()
