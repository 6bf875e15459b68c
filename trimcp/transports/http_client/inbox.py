"""The bounded queue between the HTTP tasks that read from the server and the engine.

Many tasks produce (one per POST answer stream, the GET stream, the legacy SSE stream);
the session engine's reader is the only consumer. The queue is bounded: when the engine
falls behind, producers wait, stop reading their HTTP bodies, and TCP pushes back on the
server.
"""

from __future__ import annotations

import logging

import trio

from trimcp.session.transport import MessageTooLarge

logger = logging.getLogger("trimcp.http_client")

#: Default number of messages buffered for the engine.
DEFAULT_INBOX_SIZE = 64


class Inbox:
    """Messages (bytes) and oversize reports for :meth:`Transport.receive`."""

    def __init__(self, size: int = DEFAULT_INBOX_SIZE) -> None:
        self._send, self._receive = trio.open_memory_channel[bytes | MessageTooLarge](size)

    async def put(self, item: bytes | MessageTooLarge) -> bool:
        """Queue an item, waiting while the queue is full; False once the inbox is closed
        (the item is dropped). Cancellation: atomic, queued whole or not at all."""
        try:
            await self._send.send(item)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            logger.debug("dropped a message from the server: the transport is closed")
            return False
        return True

    async def get(self) -> bytes:
        """The next message. Raises MessageTooLarge for a dropped one and
        ``trio.EndOfChannel`` once closed and drained. Cancellation: safe."""
        item = await self._receive.receive()
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    def close(self) -> None:
        """No more messages: the consumer drains what is queued, then sees end-of-channel.

        Producers blocked in :meth:`put` are woken and drop their item.
        """
        self._send.close()

    def close_receiver(self) -> None:
        """The consumer is gone too: free everything queued."""
        self._receive.close()
