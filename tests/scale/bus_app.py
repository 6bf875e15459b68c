"""The server every replica of the bus tests runs (``trimcp run`` on this file).

``ask`` elicits a name (the answer may reach another replica: relayed); ``ask_marked``
and ``ask_in_task`` (which may run as a task) ask the same after leaving ``<tag>.asked``
(the pid of the replica asking), so a test knows which replica an input round reached;
``touch`` tells
the subscribers of ``bus://N`` that it changed; ``grow`` adds a tool (a list change);
``hold`` waits until cancelled and leaves ``<tag>.started`` / ``<tag>.cancelled`` in the
directory ``$BUS_MARKS`` (the test reads them: which replica saw the cancel does not
matter, only that the one running the call did); ``whoami`` names the process. A
``roots/list_changed`` notification makes the replica it reaches list the client's roots
(a server request on the GET stream) and leave a mark.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import attrs
import trio

import trimcp
from trimcp.session import Session

app = trimcp.Server("bus-replica", version="1.0.0")
MARKS = Path(os.environ.get("BUS_MARKS", "."))


def _mark(name: str, text: str | None = None) -> None:
    """Leave ``MARKS/name`` holding ``text`` (by default this process's pid). Written aside
    and renamed into place: the tests poll for it from another process, and must never
    read it half-written."""
    aside = MARKS / f".{name}.{os.getpid()}.{uuid.uuid4().hex}"
    aside.write_text(str(os.getpid()) if text is None else text)
    os.replace(aside, MARKS / name)


@attrs.frozen
class Name:
    name: str


@app.tool()
async def ask(*, ctx: trimcp.Context) -> str:
    """Ask the client for a name and greet it (with the pid of the replica that asked)."""
    return await _greet(ctx)


@app.tool()
async def ask_marked(tag: str, *, ctx: trimcp.Context) -> str:
    """``ask``, leaving ``<tag>.asked`` first."""
    _mark(f"{tag}.asked")
    return await _greet(ctx)


@app.tool(task_support="optional")
async def ask_in_task(tag: str, *, ctx: trimcp.Context) -> str:
    """``ask_marked``, as a task when the client asks for one (or the server chooses)."""
    _mark(f"{tag}.asked")
    return await _greet(ctx)


async def _greet(ctx: trimcp.Context) -> str:
    answer = await ctx.elicit("Your name?", Name)
    if answer.data is None:
        return f"declined {os.getpid()}"
    return f"hello {answer.data.name} {os.getpid()}"


@app.tool()
async def summarize(text: str, *, ctx: trimcp.Context) -> str:
    """Ask the client's model to summarize ``text`` (sampling)."""
    result = await ctx.sample(f"Summarize: {text}", max_tokens=20)
    return f"{result.model} {os.getpid()}"


@app.tool()
async def touch(n: int) -> str:
    """Say that ``bus://{n}`` changed."""
    await app.notify_resource_updated(f"bus://{n}")
    return str(os.getpid())


@app.tool()
def grow(name: str) -> str:
    """Register a tool ``name`` on this replica (its clients hear tools/list_changed)."""
    app.add_tool(lambda: name, name=name, description="grown")
    return str(os.getpid())


@app.tool()
async def hold(tag: str) -> str:
    """Wait (at most a minute) until cancelled; marks say what happened."""
    _mark(f"{tag}.started")
    try:
        await trio.sleep(60)
    except trio.Cancelled:
        _mark(f"{tag}.cancelled")
        raise
    return "not cancelled"


@app.notification_handler("notifications/roots/list_changed")
async def roots_changed(session: Session, params: object) -> None:
    """List the client's roots again (a server request not tied to any client request: it
    goes on the session's GET stream, wherever that is open); leave a mark with the count."""
    result = await session.send_request("roots/list", timeout=20)
    _mark(f"roots-{uuid.uuid4().hex}", f"{os.getpid()} {len(result.roots)}")


@app.tool()
async def chatter(*, ctx: trimcp.Context) -> str:
    """Log once below and once above ``error`` (the client's level decides what it hears)."""
    await ctx.log("info", f"quiet {os.getpid()}")
    await ctx.log("error", f"loud {os.getpid()}")
    return str(os.getpid())


@app.tool()
def whoami() -> str:
    """The process id of the replica that ran this call."""
    return str(os.getpid())


@app.resource("bus://{n}", mime_type="text/plain")
def item(n: str) -> str:
    """One item."""
    return f"item {n}"
