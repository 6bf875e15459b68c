"""An in-memory transport pair: two sessions in one process, e.g. for tests or embedding."""

from __future__ import annotations

from collections.abc import Sequence

import trio

from trimcp.session.transport import Outgoing


class MemoryTransport:
    """One end of a connected pair made by :func:`memory_transport_pair`.

    Messages are bytes, exactly as on a real wire, so everything the codecs do is exercised.
    """

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel

    async def receive(self) -> bytes:
        """The next message; ``trio.EndOfChannel`` once the peer closed. Cancellation: safe."""
        return await self._receive_channel.receive()

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Hand messages to the peer; waits while its buffer is full (backpressure)."""
        for message in messages:
            await self._send_channel.send(message.data)

    async def aclose(self) -> None:
        """Close both directions; the peer's ``receive`` then ends with ``EndOfChannel``."""
        self._send_channel.close()
        self._receive_channel.close()

    def send_raw_nowait(self, data: bytes) -> None:
        """Test hook: inject one message as the peer would see it (raises ``WouldBlock``)."""
        self._send_channel.send_nowait(data)


def memory_transport_pair(max_buffered: int = 64) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports; each direction buffers at most ``max_buffered`` messages."""
    a_send, b_receive = trio.open_memory_channel[bytes](max_buffered)
    b_send, a_receive = trio.open_memory_channel[bytes](max_buffered)
    return MemoryTransport(a_send, a_receive), MemoryTransport(b_send, b_receive)
