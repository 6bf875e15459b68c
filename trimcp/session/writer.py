"""The one writer: an :class:`Outbox` drained into a transport by one task.

Sessions (:mod:`trimcp.session.engine`) and 2026-07-28 message streams
(:mod:`trimcp.session.stateless_stream`) both send through an outbox: everything goes in
order through the bounded queue (:meth:`Outbox.queue`), and the writer task
(:meth:`Outbox.write_loop`) writes what is queued in one transport call. Two fast paths
skip the hop to the writer when nothing is queued before the message (so order is kept):
a final reply written from its handler's task (:meth:`Outbox.reply_directly`), and a
message a transport can write without waiting (:meth:`Outbox.write_now`). Only one write
is under way at a time (``busy``; the writer waits for it to end).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from trimcp.session.transport import Outgoing, Transport

logger = logging.getLogger("trimcp.session")

_PEER_GONE = (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError)
#: Messages the writer takes from the outbox for one transport write.
_WRITE_BATCH = 512


class Outbox:
    """A bounded queue of outgoing messages, the transport it drains into, and whose
    turn it is to write.

    ``on_peer_gone`` is called (once per failed write) when the transport refuses a write
    because the peer is gone; the writer then ends. ``keep_queue`` is asked when the
    writer ends: False (or None) closes the queue, so senders fail instead of waiting on
    a queue nobody drains; True keeps it for a later outbox made with ``carry`` (a session
    going to rest). ``send_now``: the transport's immediate write, if it has one.
    """

    __slots__ = (
        "_free",
        "_keep_queue",
        "_on_peer_gone",
        "_parked",
        "_send_now",
        "_sent",
        "_taken",
        "busy",
        "done",
        "receive_end",
        "send_end",
        "transport",
    )

    def __init__(
        self,
        transport: Transport,
        size: int,
        *,
        on_peer_gone: Callable[[int], None],
        keep_queue: Callable[[], bool] | None = None,
        send_now: Callable[[Outgoing], bool] | None = None,
        carry: Outbox | None = None,
    ) -> None:
        # Whether nothing waits in the queue for the writer, counted here instead of asked
        # of the channel per reply (its statistics() builds an object: six calls): every
        # message sent through this outbox counts in _sent before it is handed over (and
        # out again if it was not), and the writer counts in _taken what it takes. Equal
        # while the writer is parked in receive: nothing is queued or handed to it.
        # Conservative while a send is under way (_sent ahead): the caller then queues.
        if carry is None:
            self.send_end, self.receive_end = trio.open_memory_channel[Outgoing](size)
            self._sent = self._taken = 0
        else:  # the queue of an outbox whose writer ended while messages waited
            self.send_end, self.receive_end = carry.send_end, carry.receive_end
            self._sent, self._taken = carry._sent, carry._taken
        #: The writer task waits in the queue's receive (see _sent).
        self._parked = False
        self.transport = transport
        self._on_peer_gone = on_peer_gone
        self._keep_queue = keep_queue
        self._send_now = send_now
        # One write at a time: the writer task, or a task writing directly. A flag and
        # an event, not a trio.StrictFIFOLock: every reply takes it, and a trio lock
        # registers a parking-lot breaker per acquire (measured: +2 us of server CPU per
        # pipelined call, about 7%).
        self.busy = False
        # Set when the write under way ends; made only when the writer waits for it (most
        # writes have nobody waiting: an event per write cost more than the flag).
        self._free: trio.Event | None = None
        #: Set when the writer task has ended.
        self.done = trio.Event()

    def send_nowait(self, message: Outgoing) -> None:
        """Queue ``message`` without waiting, as the queue's ``send_nowait`` (raises
        ``trio.WouldBlock`` when full, ``trio.ClosedResourceError`` or
        ``trio.BrokenResourceError`` when closed). Every message goes in through this
        outbox (here, :meth:`send` or :meth:`queue`), never the queue directly: the
        outbox counts them (see ``_sent``)."""
        self._sent += 1
        try:
            self.send_end.send_nowait(message)
        except BaseException:
            self._sent -= 1
            raise

    async def send(self, message: Outgoing) -> None:
        """Queue ``message``, waiting while the queue is full, as the queue's ``send``
        (raises as it does once closed). Cancellation: atomic (queued whole or not at
        all)."""
        self._sent += 1
        try:
            await self.send_end.send(message)
        except BaseException:
            self._sent -= 1
            raise

    def queue_nowait(self, message: Outgoing) -> bool:
        """:meth:`queue` when the outbox has room (no scheduler pass, no ``await``);
        False when it is full (then :meth:`queue` waits for room)."""
        # (send_nowait, inline: every stateless answer comes through here)
        self._sent += 1
        try:
            self.send_end.send_nowait(message)
        except trio.WouldBlock:
            self._sent -= 1
            return False
        except _PEER_GONE:
            self._sent -= 1
            logger.debug("dropped an outgoing message: the peer is gone")
        except BaseException:
            self._sent -= 1
            raise
        return True

    async def queue(self, message: Outgoing) -> None:
        """Queue a message for the writer; drops it quietly once the peer is gone.

        Cancellation: atomic (queued whole or not at all); waits only while the queue is
        full.
        """
        try:
            # No scheduler pass when there is room (the common case): only a full outbox
            # makes us wait.
            self.send_nowait(message)
        except trio.WouldBlock:
            try:
                await self.send(message)
            except _PEER_GONE:
                logger.debug("dropped an outgoing message: the peer is gone")
        except _PEER_GONE:
            logger.debug("dropped an outgoing message: the peer is gone")

    async def write_loop(self) -> None:
        """The writer task: drains the queue into the transport, coalescing what is queued.

        Ends when the queue is closed and drained, or when the peer is gone. Cancellation:
        a write is abandoned where it stands (the transport decides what that leaves).
        """
        receive = self.receive_end
        batch: list[Outgoing] = []
        try:
            while True:
                self._parked = True
                try:
                    first = await receive.receive()
                except trio.EndOfChannel:
                    break
                finally:
                    self._parked = False
                self._taken += 1
                while self.busy:  # a direct write is under way
                    free = self._free
                    if free is None:
                        free = self._free = trio.Event()
                    await free.wait()
                self.busy = True
                batch = [first]
                try:
                    while len(batch) < _WRITE_BATCH:
                        try:
                            batch.append(receive.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                        self._taken += 1
                    await self.transport.send(batch)
                finally:
                    self._release()
        except _PEER_GONE:
            self._on_peer_gone(len(batch))
        finally:
            keep = self._keep_queue
            if keep is None or not keep():
                receive.close()
            self.done.set()

    async def reply_directly(self, message: Outgoing) -> bool:
        """Write ``message`` from this task when nothing is queued; False: queue it.

        Saves the hop to the writer task (a quarter of the scheduling work of a sequential
        call). Only when the queue is empty and no write is under way, so order is kept;
        and only for replies, which are written outside the handler's cancel scope, so a
        write is never cut in half by a handler being cancelled.
        """
        # The writer must be parked in receive() with nothing queued: a message handed
        # straight to a waiting writer leaves the buffer empty but is not written yet, and
        # must go out first (it counts in _sent, not yet in _taken).
        if self.busy or not self._parked or self._sent != self._taken:
            return False
        self.busy = True
        try:
            await self.transport.send([message])
        except _PEER_GONE:
            self._on_peer_gone(1)
        finally:
            # (_release, inlined: once per reply)
            self.busy = False
            free = self._free
            if free is not None:
                self._free = None
                free.set()
        return True

    def write_now(self, message: Outgoing) -> bool:
        """Write ``message`` at once when the transport can and nothing is queued before it
        (saves the hop to the writer task; order kept as in :meth:`reply_directly`)."""
        send_now = self._send_now
        if send_now is None or self.busy or not self._parked or self._sent != self._taken:
            return False
        return send_now(message)

    def _release(self) -> None:
        self.busy = False
        free = self._free
        if free is not None:
            self._free = None
            free.set()
