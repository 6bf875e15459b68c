"""The server every replica of the scale tests runs (``trimcp run`` on this file).

``echo`` is what the benchmarks call; ``whoami`` names the process that answered (to
see the balancer spread a session's requests); ``slow`` reports progress ``steps``
times, ``delay`` seconds apart, and answers ``done <tag>`` (the kill tests count these);
``job`` may run as a task: it sleeps ``seconds`` and answers ``job <tag> done``. Both
leave ``<tag>.pid`` (the pid of the replica running them) in the directory
``$SCALE_MARKS`` when it is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import trio

import trimcp

app = trimcp.Server("scale-replica", version="1.0.0")
MARKS = os.environ.get("SCALE_MARKS")


def _mark(tag: str) -> None:
    # Written aside and renamed into place: the tests poll for the file from another
    # process, and must never read it half-written (empty).
    if MARKS:
        final = Path(MARKS) / f"{tag}.pid"
        aside = final.with_name(f".{final.name}.{os.getpid()}")
        aside.write_text(str(os.getpid()))
        os.replace(aside, final)


@app.tool()
def echo(text: str) -> str:
    """Answer ``text`` (the load generator's call)."""
    return text


@app.tool()
def whoami() -> str:
    """The process id of the replica that ran this call."""
    return str(os.getpid())


@app.tool()
async def slow(tag: str, steps: int = 5, delay: float = 0.1, *, ctx: trimcp.Context) -> str:
    """Report progress ``steps`` times, then answer ``done <tag>``."""
    _mark(tag)
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        await trio.sleep(delay)
    return f"done {tag}"


@app.tool(task_support="optional")
async def job(tag: str, seconds: float = 0.0) -> str:
    """Mark which replica runs it, sleep ``seconds``, answer ``job <tag> done``."""
    _mark(tag)
    await trio.sleep(seconds)
    return f"job {tag} done"


@app.resource("scale://info", mime_type="text/plain")
def info() -> str:
    """A static resource."""
    return "replicated"


@app.prompt()
def greet(name: str) -> str:
    """A one-line prompt."""
    return f"Hello, {name}!"
