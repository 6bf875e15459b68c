"""A small trimcp.Server for the CLI tests (`trimcp run tests/cli/app_server.py`)."""

from __future__ import annotations

from trimcp import Context, Server

app = Server("cli-test-app", version="3.1")


@app.tool()
async def greet(name: str, excited: bool = False, *, ctx: Context) -> str:
    """Greet someone by name."""
    await ctx.report_progress(1, 2, "warming up")
    return f"Hello, {name}{'!' if excited else '.'}"


@app.tool()
async def total(numbers: list[float]) -> float:
    """Add up numbers."""
    return sum(numbers)


@app.resource("memo://today", mime_type="text/plain")
def today() -> str:
    """Today's memo."""
    return "buy milk"


@app.resource("memo://{day}")
def memo(day: str) -> str:
    """The memo of a day."""
    return f"nothing on {day}"


@app.prompt()
def summarize(topic: str, style: str = "short") -> str:
    """Ask for a summary."""
    return f"Summarize {topic} in a {style} way."


# Not run under `trimcp run`, which imports this file under another name.
if __name__ == "__main__":
    raise SystemExit("run me with: trimcp run tests/cli/app_server.py")
