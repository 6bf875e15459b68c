"""Newline-delimited JSON over a pair of Trio byte streams (what stdio carries)."""

from __future__ import annotations

import errno
import os
import select
import stat
from collections.abc import Sequence
from typing import Any

import trio

from trimcp.protocol.framing import DEFAULT_MAX_LINE_BYTES, EOF, NEED_DATA, LineFramer, LineTooLong
from trimcp.transports.base import MessageTooLarge, Outgoing

#: Bytes asked for per read: large enough that one read holds many pipelined messages.
READ_SIZE = 65536
#: Reads served without waiting between two real schedule points (fairness: a peer that
#: always has input ready must not keep the other tasks from running).
_READS_PER_YIELD = 16

#: Trio's pipe stream (Unix): read and written here with direct syscalls.
_FdStream: type | None = getattr(trio.lowlevel, "FdStream", None)


class NdjsonTransport:
    """One JSON-RPC message per line, UTF-8, over ``receive_stream`` / ``send_stream``.

    Lines longer than ``max_message_bytes`` are skipped with bounded memory and reported as
    :class:`MessageTooLarge`; reading goes on at the next line. Messages queued together
    are written with one ``send_all``.

    Pipes (Trio's ``FdStream``, what stdio uses on both sides) are read and written with
    direct syscalls, waiting through Trio only when the kernel would block: a message
    that is already there, or fits in the pipe, costs no trip through the scheduler (a
    real schedule point is still taken every few reads).
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
        self._direct_in = _FdStream is not None and isinstance(receive_stream, _FdStream)
        self._direct_out = _FdStream is not None and isinstance(send_stream, _FdStream)
        # A pipe writes up to PIPE_BUF bytes whole or not at all (POSIX): send_now relies
        # on it, so only for a pipe.
        self._atomic_out = self._direct_out and _is_pipe(send_stream)
        self._reads = 0

    async def receive(self) -> bytes:
        """The next line. Cancellation: safe, no bytes are lost."""
        framer = self._framer
        while True:
            event = framer.next_event()
            if type(event) is bytes:
                return event
            if event is NEED_DATA:
                if self._direct_in:
                    framer.receive_data(await self._read_pipe())
                else:
                    framer.receive_data(bytes(await self._receive_stream.receive_some(READ_SIZE)))
            elif event is EOF:
                raise trio.EndOfChannel
            else:
                assert isinstance(event, LineTooLong)
                raise MessageTooLarge(self.max_message_bytes, event.dropped)

    async def _read_pipe(self) -> bytes:
        """Up to READ_SIZE bytes from the pipe (b"" at its end), waiting only when none
        are there. Cancellation: safe, nothing is read by a cancelled call."""
        self._reads += 1
        if self._reads % _READS_PER_YIELD:
            await trio.lowlevel.checkpoint_if_cancelled()
        else:
            await trio.lowlevel.checkpoint()
        stream: Any = self._receive_stream  # an FdStream
        while True:
            fd = stream.fileno()  # -1 once closed: os.read then fails with EBADF
            try:
                return os.read(fd, READ_SIZE)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
            except OSError as exc:
                raise _stream_error(exc) from exc

    def _out_fd(self) -> int:
        stream: Any = self._send_stream  # an FdStream
        fd: int = stream.fileno()  # -1 once closed: os.write then fails with EBADF
        return fd

    def send_now(self, message: Outgoing) -> bool:
        """Write one message (as a line) at once when the pipe takes it whole without
        waiting; else write nothing and return False (see ``ImmediateTransport``)."""
        if not self._atomic_out:
            return False
        payload = message.data + b"\n"
        if len(payload) > select.PIPE_BUF:
            return False
        try:
            written = os.write(self._out_fd(), payload)
        except OSError:  # full (BlockingIOError), or broken: the ordinary path says which
            return False
        return written == len(payload)  # always, for a pipe (else the peer sees a cut line)

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Write the messages as lines with one ``send_all`` (on a pipe: one ``write``
        when it all fits)."""
        if len(messages) == 1:
            payload = messages[0].data + b"\n"
        else:
            payload = b"\n".join([message.data for message in messages]) + b"\n"
        if self._direct_out:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                written = os.write(self._out_fd(), payload)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                raise _stream_error(exc) from exc
            if written == len(payload):
                return
            payload = payload[written:]
        await self._send_stream.send_all(payload)

    async def aclose(self) -> None:
        """Close both streams (the peer sees end of input)."""
        try:
            await self._send_stream.aclose()
        finally:
            await self._receive_stream.aclose()


def _stream_error(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    """What Trio's own pipe stream raises for ``exc`` (closed here, or broken there)."""
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the pipe was already closed")
    return trio.BrokenResourceError(f"the pipe is broken: {exc}")


def _is_pipe(stream: Any) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):
        return False
