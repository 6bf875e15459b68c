"""A server's lifespan: what it opens once before serving and closes once after.

    @asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[Pool]:
        async with open_pool() as pool:
            yield pool

    app = Server("db", lifespan=lifespan)

    @app.tool()
    async def query(sql: str, ctx: Context) -> list[dict]:
        return await ctx.lifespan.fetch(sql)

The lifespan is entered once per serving loop of a process, in that loop's nursery:
``Server.run`` and ``trimcp run`` (any transport), ``serve_http`` and the ASGI app's own
lifespan, ``serve_websocket``, ``Server.serve_stdio``/``serve_session``. Everything that
asks for it while it runs shares the one value (it is reference-counted): N sessions,
every transport of the process, a mounted server (see :mod:`trimcp.server.mount`). The
first entry owns it; it is closed when that entry ends, after the sessions it served.

Failure: an exception while the lifespan starts stops serving with
:class:`LifespanFailed`, one exception naming the server and the cause (never an
exception group); ``Server.run`` prints it as one line and exits with status 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import trio

#: ``lifespan(server)`` returns an async context manager; what it yields is the value
#: handlers see as ``ctx.lifespan``.
Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]


class LifespanFailed(Exception):
    """The lifespan of a server raised while starting, so the server does not serve."""


class LifespanNotRunning(RuntimeError):
    """``ctx.lifespan`` was read while the server's lifespan was not running."""


class _Running:
    __slots__ = ("error", "started", "users", "value")

    def __init__(self) -> None:
        self.started = trio.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.users = 0


class LifespanRunner:
    """Enters one lifespan at most once at a time, however many loops ask for it."""

    def __init__(self, label: str, lifespan: Lifespan | None, argument: Any) -> None:
        self._label = label
        self._lifespan = lifespan
        self._argument = argument
        self._running: _Running | None = None
        #: Other runners entered with this one (mounted servers' lifespans).
        self.children: list[LifespanRunner] = []

    @property
    def running(self) -> bool:
        running = self._running
        return running is not None and running.started.is_set() and running.error is None

    @property
    def value(self) -> Any:
        """What the lifespan yielded. Raises :class:`LifespanNotRunning` when not running."""
        running = self._running
        if running is None or not running.started.is_set() or running.error is not None:
            raise LifespanNotRunning(
                f"the lifespan of {self._label} is not running: serve the server with "
                "app.run(), `trimcp run` or a serve_* function, or wrap your own serving "
                "code in `async with app.open_lifespan():`"
            )
        return running.value

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[Any]:
        """Enter the lifespan (and the children's), or share it when it already runs.

        Raises :class:`LifespanFailed` when it fails to start. Cancellation: a lifespan
        being entered is cancelled with the caller; a shared one is left running.
        """
        running = self._running
        if running is not None:
            await running.started.wait()
            if running.error is not None:
                raise LifespanFailed(f"the lifespan of {self._label} failed") from running.error
            running.users += 1
            try:
                yield running.value
            finally:
                running.users -= 1
            return
        running = self._running = _Running()
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    for child in self.children:
                        await stack.enter_async_context(child.open())
                    if self._lifespan is not None:
                        running.value = await stack.enter_async_context(
                            self._lifespan(self._argument)
                        )
                except LifespanFailed as exc:
                    running.error = exc
                    raise
                except Exception as exc:
                    running.error = exc
                    raise LifespanFailed(
                        f"the lifespan of {self._label} failed while starting: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                finally:
                    running.started.set()
                running.users = 1
                yield running.value
        finally:
            self._running = None
