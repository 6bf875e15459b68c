"""Closing a session: the closer task's sequence, and the keepalive pinger that may ask
for it. Both run among a session's service tasks (see :mod:`trimcp.session.engine`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from trimcp.errors import McpError, RequestTimeout, SessionClosed
from trimcp.session import relay
from trimcp.session.outbound import Waiter

if TYPE_CHECKING:
    from trimcp.session.engine import Session

logger = logging.getLogger("trimcp.session")


async def keepalive(session: Session, interval: float) -> None:
    """Ping every ``interval`` seconds; close after ``keepalive_misses`` unanswered."""
    misses = 0
    while not session.closing:
        await trio.sleep(interval)
        try:
            await session.send_request("ping", timeout=interval)
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


async def close_when_asked(session: Session) -> None:
    """The closer task: runs :func:`shutdown` (shielded) once a close is asked for."""
    await session._run.close_requested.wait()
    with trio.CancelScope(shield=True):
        await shutdown(session)


async def shutdown(session: Session) -> None:
    """The close sequence of :meth:`Session.aclose` (each step bounded)."""
    options = session.options
    session.closing = True
    logger.debug("closing session: %s", session.close_reason)
    with trio.move_on_after(options.shutdown_grace):
        await session._run.handlers_idle.wait()
    for ctx in list(session._contexts.values()):
        ctx.cancel_scope.cancel()
    for relayed in list(session._relayed.values()):
        await relay.drop(relayed, "the session closed")
    with trio.move_on_after(options.cancel_notify_timeout):
        await session._run.handlers_idle.wait()
    session._connection.close()
    session._task_progress.clear()
    reason = session.close_reason or "session closed"
    for waiter in list(session._waiters.values()):
        if type(waiter) is Waiter and not waiter.done:
            waiter.fail(SessionClosed(f"Session closed before an answer arrived ({reason})"))
    await relay.close_target(session, reason)
    session._run.outbox.send_end.close()
    session._run.notes_send.close()
    with trio.move_on_after(options.flush_timeout):
        await session._run.outbox.done.wait()
    await session._close_transport()
    # Reader, writer, notifier and keepalive go now; handler stragglers are cancelled
    # by open_session when its body is done.
    session._run.services.cancel()
