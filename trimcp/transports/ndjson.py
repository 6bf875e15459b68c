"""Newline-delimited JSON over a pair of Trio byte streams (what stdio carries)."""

from __future__ import annotations

import os
import select
import stat
from collections.abc import Sequence
from typing import Any

import trio

from trimcp._fastio import FastReceive, FastSend
from trimcp.protocol.framing import DEFAULT_MAX_LINE_BYTES, EOF, NEED_DATA, LineFramer, LineTooLong
from trimcp.session.transport import MessageTooLarge, Outgoing

#: Bytes asked for per read: large enough that one read holds many pipelined messages.
READ_SIZE = 65536


class NdjsonTransport:
    """One JSON-RPC message per line, UTF-8, over ``receive_stream`` / ``send_stream``.

    Lines longer than ``max_message_bytes`` are skipped with bounded memory and reported as
    :class:`MessageTooLarge`; reading goes on at the next line. Messages queued together
    are written with one ``send_all``.

    Pipes (Trio's ``FdStream``, what stdio uses on both sides) are read and written with
    direct syscalls on POSIX (:mod:`trimcp._fastio`, whose checkpoint policy
    applies): a message that is already there, or fits in the pipe, costs no trip
    through the scheduler.
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
        self._in = FastReceive(receive_stream)
        self._out = FastSend(send_stream)
        # A pipe writes up to PIPE_BUF bytes whole or not at all (POSIX): send_now relies
        # on it, so only for a pipe.
        self._atomic_out = self._out.direct and _is_pipe(send_stream)

    async def receive(self) -> bytes:
        """The next line. Cancellation: safe, no bytes are lost."""
        framer = self._framer
        while True:
            event = framer.next_event()
            if type(event) is bytes:
                return event
            if event is NEED_DATA:
                framer.receive_data(bytes(await self._in.receive_some(READ_SIZE)))
            elif event is EOF:
                raise trio.EndOfChannel
            else:
                assert isinstance(event, LineTooLong)
                raise MessageTooLarge(self.max_message_bytes, event.dropped)

    async def receive_many(self) -> list[bytes]:
        """The lines already buffered, at least one (read as :meth:`receive` when none is):
        a pipelined reader makes one call per read, not one per message. Raises as
        :meth:`receive`. Cancellation: safe, no bytes are lost."""
        framer = self._framer
        lines = framer.next_lines()
        if lines:
            return lines
        first = await self.receive()  # reads (the rest of that read follows it)
        return [first, *framer.next_lines()]

    def send_now(self, message: Outgoing) -> bool:
        """Write one message (as a line) at once when the pipe takes it whole without
        waiting; else write nothing and return False (see ``ImmediateTransport``)."""
        if not self._atomic_out:
            return False
        payload = message.data + b"\n"
        if len(payload) > select.PIPE_BUF:
            return False
        try:
            written = self._out.send_now(payload)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False  # the ordinary path says which
        return written == len(payload)  # all or nothing, for a pipe (no cut line)

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Write the messages as lines with one ``send_all`` (on a pipe: one ``write``
        when it all fits). Cancellation: a cancelled call writes nothing; cancelled while
        the pipe is full, part of a line may have been written."""
        if len(messages) == 1:
            payload = messages[0].data + b"\n"
        else:
            payload = b"\n".join([message.data for message in messages]) + b"\n"
        await self._out.send_all(payload)

    async def aclose(self) -> None:
        """Close both streams (the peer sees end of input)."""
        try:
            await self._send_stream.aclose()
        finally:
            await self._receive_stream.aclose()


def _is_pipe(stream: Any) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):
        return False
