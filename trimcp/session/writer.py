"""The session's writer: one task drains the bounded outbox into the transport.

Everything a session sends goes through its outbox (:func:`queue`), in order, and the
writer task (:func:`write_loop`) writes what is queued in one transport call. Two fast
paths skip the hop to the writer when nothing is queued before the message (so order is
kept): a final reply written from its handler's task (:func:`reply_directly`), and a
message a transport can write without waiting (:func:`write_now`). Only one write is under
way at a time (``Run.write_busy``; the writer waits for ``Run.write_free``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from trimcp.session.resting import WINDING_DOWN, Run
from trimcp.session.transport import Outgoing

if TYPE_CHECKING:
    from trimcp.session.engine import Session

logger = logging.getLogger("trimcp.session")

_PEER_GONE = (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError)
#: Messages the writer takes from the outbox for one transport write.
_WRITE_BATCH = 512


async def queue(run: Run, message: Outgoing) -> None:
    """Queue a message for the writer; drops it quietly once the peer is gone."""
    try:
        # No scheduler pass when there is room (the common case): only a full outbox
        # makes us wait.
        run.outbox_send.send_nowait(message)
    except trio.WouldBlock:
        try:
            await run.outbox_send.send(message)
        except _PEER_GONE:
            logger.debug("dropped an outgoing message: the session is closed")
    except _PEER_GONE:
        logger.debug("dropped an outgoing message: the session is closed")


async def write_loop(session: Session) -> None:
    """The writer task: drains the outbox into the transport, coalescing what is queued."""
    receive = session._run.outbox_recv
    try:
        async for first in receive:
            run = session._run
            while run.write_busy:  # a direct reply is being written
                await run.write_free.wait()
            run.write_busy = True
            try:
                batch = [first]
                while len(batch) < _WRITE_BATCH:
                    try:
                        batch.append(receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await session._transport.send(batch)
            finally:
                _release(run)
    except _PEER_GONE:
        session.request_close("the peer stopped reading")
    finally:
        # Senders must not wait forever on a queue nobody drains any more (unless the
        # session is only going to rest: the next run drains it).
        if session._phase != WINDING_DOWN:
            receive.close()
        session._run.writer_done.set()


async def reply_directly(session: Session, message: Outgoing) -> bool:
    """Fast path for a final reply: write it from this task when nothing is queued.

    Saves the hop to the writer task (a quarter of the scheduling work of a sequential
    call). Only when the outbox is empty and no write is under way, so order is kept;
    and only for replies, which are written outside the handler's cancel scope, so a
    write is never cut in half by a handler being cancelled.
    """
    run = session._run
    if run.write_busy or session.closing:
        return False
    stats = run.outbox_send.statistics()
    # The writer must be parked in receive(): a message handed straight to a waiting
    # writer leaves the buffer empty but is not written yet, and must go out first.
    if stats.current_buffer_used or not stats.tasks_waiting_receive:
        return False
    run.write_busy = True
    try:
        await session._transport.send([message])
    except _PEER_GONE:
        session.request_close("the peer stopped reading")
    finally:
        _release(run)
    return True


def write_now(session: Session, message: Outgoing) -> bool:
    """Write ``message`` at once when the transport can and nothing is queued before it
    (saves the hop to the writer task; order kept as in :func:`reply_directly`)."""
    send_now = session._send_now
    if send_now is None or session._run.write_busy or session.closing:
        return False
    stats = session._run.outbox_send.statistics()
    if stats.current_buffer_used or not stats.tasks_waiting_receive:
        return False
    return send_now(message)


def _release(run: Run) -> None:
    run.write_busy = False
    run.write_free.set()
    run.write_free = trio.Event()
