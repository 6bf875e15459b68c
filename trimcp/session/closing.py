"""Closing a session: its :class:`Closer` (the close state and the close sequence), and the
keepalive pinger that may ask for it. Both run among a session's service tasks (see
:mod:`trimcp.session.engine`).

The closer owns whether a close was asked for, whether it is under way or done, why, and the
event waiters sleep on. It reaches its session through :class:`CloseHost`: the session's
options and transport, and the two steps only the session can take (cancel what the peer
asked of us, fail what we asked of the peer). A session makes its closer when a close is
asked for or awaited, and an open, idle session holds none.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import trio

from trimcp.errors import McpError, RequestTimeout, SessionClosed

if TYPE_CHECKING:
    from trimcp.session.options import SessionOptions
    from trimcp.session.run import Run
    from trimcp.session.transport import Transport

logger = logging.getLogger("trimcp.session")


class CloseHost(Protocol):
    """What the close sequence needs of its session (the engine's ``Session``)."""

    @property
    def options(self) -> SessionOptions: ...

    @property
    def transport(self) -> Transport: ...

    async def cancel_inbound(self, reason: str) -> None:
        """Cancel every handler, and every request of the peer passed on elsewhere."""
        ...

    async def fail_outbound(self, reason: str) -> None:
        """The connection refuses new messages; every request of ours awaiting an answer
        fails (each bounded by ``cancel_notify_timeout``)."""
        ...


class Closer:
    """One session's close: asked for (``wanted``), under way (``closing``), done
    (``closed``), why (``reason``), and the signal its waiters sleep on.

    The fields only ever go from False to True, and are written by these methods alone.
    """

    __slots__ = ("_signal", "closed", "closing", "reason", "wanted")

    def __init__(self) -> None:
        self.wanted = False
        self.closing = False
        self.closed = False
        #: Why the session closed (for logs and errors); set by the first :meth:`ask`.
        self.reason: str | None = None
        self._signal: trio.Event | None = None  # made when someone waits

    def ask(self, reason: str) -> bool:
        """Ask for the close; True the first time (the caller then starts it)."""
        if self.wanted:
            return False
        self.reason = reason
        self.wanted = True
        return True

    def signal(self) -> trio.Event:
        """The event set once the session has closed."""
        event = self._signal
        if event is None:
            event = self._signal = trio.Event()
            if self.closed:
                event.set()
        return event

    def unwatched(self) -> bool:
        """Drop the signal if nobody waits on it; True: this closer then holds nothing
        (no close asked for, no signal), so a resting session can drop it too."""
        event = self._signal
        if event is not None and not event.statistics().tasks_waiting:
            self._signal = None  # a later waiter makes a new one
        return not self.wanted and self._signal is None

    async def run(self, host: CloseHost, run: Run) -> None:
        """The closer task: runs :meth:`shutdown` (shielded) once a close is asked for."""
        await run.close_requested.wait()
        with trio.CancelScope(shield=True):
            await self.shutdown(host, run)

    async def shutdown(self, host: CloseHost, run: Run) -> None:
        """The close sequence of ``Session.aclose`` (each step bounded)."""
        options = host.options
        self.closing = True
        logger.debug("closing session: %s", self.reason)
        with trio.move_on_after(options.shutdown_grace):
            await run.handlers_idle.wait()
        await host.cancel_inbound("the session closed")
        with trio.move_on_after(options.cancel_notify_timeout):
            await run.handlers_idle.wait()
        await host.fail_outbound(self.reason or "session closed")
        run.outbox.send_end.close()
        run.notes_send.close()
        with trio.move_on_after(options.flush_timeout):
            await run.outbox.done.wait()
        await self.close_transport(host)
        # Reader, writer, notifier and keepalive go now; handler stragglers are cancelled
        # by open_session when its body is done.
        run.services.cancel()

    async def close_quietly(self, host: CloseHost, reason: str) -> None:
        """Close a session that has nothing under way and no tasks (bounded)."""
        self.ask(reason)
        self.closing = True
        await host.fail_outbound(reason)
        await self.close_transport(host)

    async def close_transport(self, host: CloseHost) -> None:
        """The last step of every close: the transport (bounded), then closed."""
        with trio.move_on_after(host.options.close_timeout):
            await host.transport.aclose()
        self.closed = True
        if self._signal is not None:
            self._signal.set()


class Pinged(Protocol):
    """What the keepalive pinger needs of its session."""

    @property
    def options(self) -> SessionOptions: ...

    @property
    def closing(self) -> bool: ...

    async def ping(self, *, timeout: float | None = ...) -> None: ...

    def request_close(self, reason: str = ...) -> None: ...


async def keepalive(session: Pinged, interval: float) -> None:
    """Ping every ``interval`` seconds; close after ``keepalive_misses`` unanswered."""
    misses = 0
    while not session.closing:
        await trio.sleep(interval)
        try:
            await session.ping(timeout=interval)
            misses = 0
        except RequestTimeout:
            misses += 1
            if misses >= session.options.keepalive_misses:
                session.request_close(f"{misses} keepalive pings got no answer")
                return
        except SessionClosed:
            return
        except McpError:
            misses = 0  # any answer proves the peer is alive
