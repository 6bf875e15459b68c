"""A trimcp.Server whose tools hold, exit or interrupt, each as a task-capable tool and as a
plain one, plus probe tools that say how a tool's handler ended
(tests/session/test_call_lifecycle.py).

``python -m tests.peers.lifecycle_server stdio`` serves it over stdio;
``python -m tests.peers.lifecycle_server http`` over Streamable HTTP (the lean engine) on a
free loopback port, printed as the first line of stdout. Either era, as the client asks.

The probes are the side channel: ``started(key)`` answers once the handler called with
``key`` runs; ``following(key)`` once, besides, the client follows the task that handler
runs as (the server has seen a ``tasks/get`` for it; at once for a plain call);
``ended(key)`` once the handler's ``finally`` block ran, with how it ended and the id of
the task it ran as (empty for a plain call). Nothing here sleeps: a held handler waits until
it is cancelled, and the test bounds every wait on its side.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any

import trio

from trimcp import Context, Server
from trimcp.server.middleware import Call, Next
from trimcp.server.tasks import TaskContext, TaskOptions
from trimcp.session import SessionOptions
from trimcp.transports.http_server import HttpServerConfig, serve_http

#: Short graces, so that a server stopped by a real Ctrl-C exits at once.
SESSION_OPTIONS = SessionOptions(shutdown_grace=0.1)
TASK_OPTIONS = TaskOptions(shutdown_grace=0.0, poll_interval=0.1)

#: The tools the test calls, by ending; each exists as ``NAME_task`` (task_support
#: "optional") and ``NAME_plain`` (never a task).
ENDINGS = ("hold", "system_exit", "keyboard_interrupt", "spin")


class Journal:
    """What the handlers did, by the key each was called with (this process only)."""

    def __init__(self) -> None:
        self._started: dict[str, trio.Event] = {}
        self._ended: dict[str, trio.Event] = {}
        self._how: dict[str, str] = {}
        self._task: dict[str, str] = {}
        self._polled: dict[str, trio.Event] = {}  # by task id

    def _event(self, events: dict[str, trio.Event], key: str) -> trio.Event:
        return events.setdefault(key, trio.Event())

    def start(self, key: str, ctx: Context) -> None:
        self._task[key] = ctx.task_id if isinstance(ctx, TaskContext) else ""
        self._event(self._started, key).set()

    def end(self, key: str, how: str) -> None:
        self._how.setdefault(key, how)
        self._event(self._ended, key).set()

    def poll(self, task_id: str) -> None:
        self._event(self._polled, task_id).set()

    async def wait_started(self, key: str) -> None:
        await self._event(self._started, key).wait()

    async def wait_following(self, key: str) -> None:
        await self.wait_started(key)
        task_id = self._task[key]
        if task_id:
            await self._event(self._polled, task_id).wait()

    async def wait_ended(self, key: str) -> str:
        await self._event(self._ended, key).wait()
        return json.dumps({"how": self._how[key], "task": self._task.get(key, "")})


def _spin() -> None:
    """Python work between checkpoints, so that a SIGINT lands in the tool's own code."""
    total = 0
    for i in range(20_000):
        total += i


def build_server() -> Server:
    journal = Journal()

    async def note_polls(call: Call, call_next: Next) -> Any:
        if call.method == "tasks/get":
            params = call.params
            task_id = params.get("taskId") if isinstance(params, dict) else params.task_id
            journal.poll(str(task_id))
        return await call_next(call)

    server = Server("lifecycle", task_options=TASK_OPTIONS, middleware=[note_polls])

    async def hold(key: str, ctx: Context) -> str:
        journal.start(key, ctx)
        how = "returned"
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            how = "cancelled"
            raise
        finally:
            journal.end(key, how)
        return "unreachable"

    async def system_exit(key: str, ctx: Context) -> str:
        journal.start(key, ctx)
        try:
            raise SystemExit(2)  # what argparse does with bad arguments
        finally:
            journal.end(key, "raised SystemExit")

    async def keyboard_interrupt(key: str, ctx: Context) -> str:
        journal.start(key, ctx)
        try:
            raise KeyboardInterrupt
        finally:
            journal.end(key, "raised KeyboardInterrupt")

    async def spin(key: str, ctx: Context) -> str:
        journal.start(key, ctx)
        while True:
            _spin()
            await trio.lowlevel.checkpoint()

    for body in (hold, system_exit, keyboard_interrupt, spin):
        server.add_tool(body, name=f"{body.__name__}_task", task_support="optional")
        server.add_tool(body, name=f"{body.__name__}_plain")

    @server.tool()
    async def started(key: str) -> str:
        """Answers once the handler called with ``key`` runs."""
        await journal.wait_started(key)
        return "started"

    @server.tool()
    async def following(key: str) -> str:
        """Answers once the handler called with ``key`` runs and, if it runs as a task, the
        client has polled that task (``tasks/get``): the client follows it."""
        await journal.wait_following(key)
        return "following"

    @server.tool()
    async def ended(key: str) -> str:
        """Answers once the handler called with ``key`` ended: how, and its task's id."""
        return await journal.wait_ended(key)

    @server.tool()
    async def pid() -> int:
        """This server's process id (for the real Ctrl-C)."""
        return os.getpid()

    return server


async def serve_over_http() -> None:
    config = HttpServerConfig(session_options=SESSION_OPTIONS)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            functools.partial(serve_http, build_server(), port=0, config=config)
        )
        print(port, flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        trio.run(serve_over_http)
    else:
        trio.run(functools.partial(build_server().serve_stdio, options=SESSION_OPTIONS))
