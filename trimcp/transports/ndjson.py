"""Newline-delimited JSON over a pair of Trio byte streams (what stdio carries)."""

from __future__ import annotations

from collections.abc import Sequence

import trio

from trimcp.protocol.framing import DEFAULT_MAX_LINE_BYTES, EOF, NEED_DATA, LineFramer, LineTooLong
from trimcp.transports.base import MessageTooLarge, Outgoing

#: Bytes asked for per read: large enough that one read holds many pipelined messages.
READ_SIZE = 65536


class NdjsonTransport:
    """One JSON-RPC message per line, UTF-8, over ``receive_stream`` / ``send_stream``.

    Lines longer than ``max_message_bytes`` are skipped with bounded memory and reported as
    :class:`MessageTooLarge`; reading goes on at the next line. Messages queued together
    are written with one ``send_all``.
    """

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        *,
        max_message_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._framer = LineFramer(max_message_bytes)
        self.max_message_bytes = max_message_bytes

    async def receive(self) -> bytes:
        """The next line. Cancellation: safe, no bytes are lost."""
        framer = self._framer
        while True:
            event = framer.next_event()
            if type(event) is bytes:
                return event
            if event is NEED_DATA:
                framer.receive_data(bytes(await self._receive_stream.receive_some(READ_SIZE)))
            elif event is EOF:
                raise trio.EndOfChannel
            else:
                assert isinstance(event, LineTooLong)
                raise MessageTooLarge(self.max_message_bytes, event.dropped)

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Write the messages as lines with one ``send_all``."""
        if len(messages) == 1:
            payload = messages[0].data + b"\n"
        else:
            payload = b"\n".join([message.data for message in messages]) + b"\n"
        await self._send_stream.send_all(payload)

    async def aclose(self) -> None:
        """Close both streams (the peer sees end of input)."""
        try:
            await self._send_stream.aclose()
        finally:
            await self._receive_stream.aclose()
