"""Reading and writing a Trio stream's socket or pipe with direct syscalls (POSIX only).

Trio's ``receive_some``/``send_all`` take two checkpoints and a conflict check around
each ``recv``/``send``: for a small message, a fifth of what the hot paths (the stdio
transport's pipes, the lean HTTP server's connections, the Redis client's connections)
spend per message. :class:`FastReceive` and :class:`FastSend` call ``os.read`` and
``os.write`` on the stream's descriptor instead and ask Trio only to wait when the kernel
would block. They do so only on POSIX, and only for the two stream types whose
descriptor they know (``trio.SocketStream`` and Trio's ``FdStream``); anything else, or
any other platform (on Windows ``os.read`` does not take a socket, so every connection
would look closed), goes through the stream's own methods unchanged.

Checkpoint policy, the same for every user:

- Every call is a cancel point before it touches the descriptor: a cancelled call reads
  or writes nothing, as with Trio's own streams.
- A call is a schedule point when it waits for the kernel (through Trio). When it does
  not, every ``FAIR_EVERY``-th call on the same object is a schedule point all the same:
  a peer that always has input ready, or a writer the kernel never makes wait, must not
  keep the other tasks from running for long, but a schedule point per message is what
  made Trio's streams slow here.
- :meth:`FastSend.send_now` and :meth:`FastReceive.receive_nowait` are the exceptions:
  they never wait and are no checkpoint, for callers that cannot await or that take
  their checkpoints elsewhere (they write or read at once or not at all).

Errors are Trio's: ``trio.ClosedResourceError`` once the stream was closed here (a
closed stream's ``fileno()`` is -1, so the call fails instead of touching a file that
reused the number), ``trio.BrokenResourceError`` when the peer is gone.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

#: Whether direct syscalls are used at all (a test turns it off to run the fallback).
POSIX = os.name == "posix"
#: A schedule point at least every this many calls that did not wait (see the policy).
FAIR_EVERY: Final = 16

#: Trio's pipe stream (Unix only).
_FdStream: type | None = getattr(trio.lowlevel, "FdStream", None)


def _descriptor_owner(stream: object) -> Any | None:
    """What has the ``fileno()`` of ``stream`` when it is read and written directly
    here: a socket stream's socket, a pipe stream itself; else None."""
    if not POSIX:
        return None
    if type(stream) is trio.SocketStream:
        return stream.socket
    if _FdStream is not None and isinstance(stream, _FdStream):
        return stream
    return None


def _stream_error(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    """What Trio's own streams raise for ``exc`` (closed here, or broken there)."""
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the stream was already closed")
    return trio.BrokenResourceError(f"the connection is broken: {exc}")


class _Fair:
    __slots__ = ("_calls", "_owner")

    def __init__(self, stream: object) -> None:
        self._owner = _descriptor_owner(stream)
        self._calls = 0

    @property
    def direct(self) -> bool:
        """Whether calls go to the descriptor (else to the stream's own methods)."""
        return self._owner is not None

    def _checkpoint(self) -> Callable[[], Awaitable[None]]:
        """The checkpoint this call takes, for the caller to await (``await
        self._checkpoint()()``): no coroutine frame of its own per read or write."""
        self._calls += 1
        if self._calls % FAIR_EVERY:
            return trio.lowlevel.checkpoint_if_cancelled
        return trio.lowlevel.checkpoint


class FastReceive(_Fair):
    """Reads of ``stream`` (see the module's checkpoint policy)."""

    __slots__ = ("stream",)

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        super().__init__(stream)
        self.stream = stream

    async def receive_some(self, max_bytes: int, *, blocked: bool = False) -> bytes | bytearray:
        """Up to ``max_bytes`` bytes (b"" at the end of input), waiting only when none
        are there. ``blocked``: :meth:`receive_nowait` just found none, so the call waits
        for the kernel first (no second read that would fail; the wait is the
        checkpoint). Cancellation: safe, a cancelled call reads nothing."""
        owner = self._owner
        if owner is None:
            return await self.stream.receive_some(max_bytes)
        fd: int
        if blocked and (fd := owner.fileno()) >= 0:
            await trio.lowlevel.wait_readable(fd)
        else:
            await self._checkpoint()()
        while True:
            fd = owner.fileno()
            try:
                return os.read(fd, max_bytes)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
            except OSError as exc:
                raise _stream_error(exc) from exc

    async def wait_readable(self) -> bool:
        """Wait until the kernel has input for this stream (or its end, or an error),
        reading nothing: True. False at once, without waiting or a checkpoint, when the
        stream is not read directly or was closed here (use :meth:`receive_some`).
        Cancellation: safe, nothing is read."""
        owner = self._owner
        if owner is None:
            return False
        fd = owner.fileno()
        if fd < 0:
            return False
        await trio.lowlevel.wait_readable(fd)
        return True

    def receive_nowait(self, max_bytes: int) -> bytes | None:
        """Up to ``max_bytes`` bytes if the kernel has some now (b"" at the end of
        input); None when a read would wait, or when this stream is not read directly.
        No checkpoint (the caller's loop takes its own: see the module's policy)."""
        owner = self._owner
        if owner is None:
            return None
        try:
            return os.read(owner.fileno(), max_bytes)
        except BlockingIOError:
            return None
        except OSError as exc:
            raise _stream_error(exc) from exc


class FastSend(_Fair):
    """Writes to ``stream`` (see the module's checkpoint policy)."""

    __slots__ = ("stream",)

    def __init__(self, stream: trio.abc.SendStream) -> None:
        super().__init__(stream)
        self.stream = stream

    async def send_all(self, data: bytes, *, timeout: float | None = None) -> None:
        """Write all of ``data``: what the kernel takes at once directly, the rest
        through the stream's ``send_all`` (waiting while the kernel is full), within
        ``timeout`` seconds when given (else ``trio.TooSlowError``, the stream then in
        an unknown state). Cancellation: a cancelled call writes nothing; cancelled
        while waiting, part of ``data`` may have been written."""
        owner = self._owner
        if owner is not None:
            await self._checkpoint()()
            try:
                sent = os.write(owner.fileno(), data)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                raise _stream_error(exc) from exc
            if sent == len(data):
                return
            data = data[sent:]
        if timeout is None:
            await self.stream.send_all(data)
        else:
            with trio.fail_after(timeout):
                await self.stream.send_all(data)

    def send_now(self, data: bytes) -> int:
        """Write what the kernel takes of ``data`` without waiting; how many bytes that
        was (0 when it would block, or when this stream is not written directly). No
        checkpoint. Raises ``trio.ClosedResourceError``/``trio.BrokenResourceError``."""
        owner = self._owner
        if owner is None:
            return 0
        try:
            return os.write(owner.fileno(), data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise _stream_error(exc) from exc
