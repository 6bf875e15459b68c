"""stdio: the server side reads stdin and writes stdout; the client side spawns the server.

Server side: the process's stdout belongs to the protocol. While the transport is open,
file descriptor 1 is pointed at stderr, so a stray ``print()`` or a chatty library lands in
the log instead of corrupting the message stream.

Client side: the child's stderr is drained continuously (so it can never fill its pipe and
block the child) into a callback, and the child is shut down with a bounded ladder:
close its stdin, wait; SIGTERM, wait; SIGKILL, wait.
"""

from __future__ import annotations

import collections
import gc
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Protocol, runtime_checkable

import attrs
import trio

from trimcp._groups import single_exception
from trimcp._record import Record
from trimcp.errors import SessionClosed
from trimcp.protocol.framing import DEFAULT_MAX_LINE_BYTES
from trimcp.session import Session, SessionHandler, SessionOptions, serve_session
from trimcp.session.transport import Transport
from trimcp.transports.ndjson import NdjsonTransport

logger = logging.getLogger("trimcp.stdio")
child_stderr_logger = logging.getLogger("trimcp.stdio.stderr")

#: A stderr line longer than this is cut (the rest of it is dropped), so memory stays bounded.
MAX_STDERR_LINE = 64 * 1024
#: The child's last stderr lines kept to explain a session that ended under a request.
STDERR_TAIL_LINES = 20
#: After the child exits, how long its remaining stderr may take to be read.
STDERR_DRAIN_GRACE = 1.0


#: The interpreter's own threshold of the youngest GC generation (CPython 3.11-3.13).
_DEFAULT_YOUNG_THRESHOLD = 700
#: What serving raises it to, when nobody changed it.
_SERVING_YOUNG_THRESHOLD = 2000


def _tune_gc_for_serving() -> None:
    """Tune the process's cyclic GC once it serves (it is a server from now on).

    - ``gc.freeze()``: what the process made so far (modules, the server's tables) lives
      as long as it does. Frozen, the full collections no longer walk it: a pipelined
      load brings one every few thousand requests (what is alive at a younger collection
      is promoted), and each walked the whole heap (about 30,000 objects). Not
      ``gc.collect()`` first: about 15 ms of start-up to free some 70 objects of
      import-time garbage, which stay instead.
    - The youngest generation's threshold, when it is still the interpreter's 700, goes
      to :data:`_SERVING_YOUNG_THRESHOLD`: 100 pipelined requests in flight hold more
      than 700 new objects, so every batch made a young collection that walked all of
      them (about 600 per 60,000 calls, 0.35 us per call); under 2,000 they stay. A
      threshold someone set is kept.
    """
    gc.freeze()
    young, *older = gc.get_threshold()
    if young == _DEFAULT_YOUNG_THRESHOLD:
        gc.set_threshold(_SERVING_YOUNG_THRESHOLD, *older)


@asynccontextmanager
async def open_stdio_server_transport(
    *, max_message_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> AsyncIterator[NdjsonTransport]:
    """The transport of a server launched over stdio: stdin in, stdout out.

    While open, anything else written to file descriptor 1 goes to stderr. On exit the
    original stdout is restored. Opening it tunes the process's cyclic GC for serving
    (:func:`_tune_gc_for_serving`). Cancellation: the body is cancelled as usual; the
    streams are closed on the way out.
    """
    _tune_gc_for_serving()
    sys.stdout.flush()
    in_fd = os.dup(sys.stdin.fileno())
    out_fd = os.dup(sys.stdout.fileno())
    saved_stdout = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    transport = NdjsonTransport(
        trio.lowlevel.FdStream(in_fd),
        trio.lowlevel.FdStream(out_fd),
        max_message_bytes=max_message_bytes,
    )
    try:
        yield transport
    finally:
        with trio.CancelScope(shield=True):
            await transport.aclose()
        sys.stdout.flush()
        os.dup2(saved_stdout, sys.stdout.fileno())
        os.close(saved_stdout)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ShutdownTimeouts(Record):
    """The bounds of the child shutdown ladder, in seconds."""

    after_stdin_close: float = 2.0
    after_sigterm: float = 2.0
    after_sigkill: float = 2.0


def _log_stderr_line(line: str) -> None:
    child_stderr_logger.info("%s", line)


class ChildProcessTransport(NdjsonTransport):
    """NDJSON over a child process's stdin/stdout; ``process`` is the child.

    :meth:`aclose` closes only the child's stdin: the spec's shutdown lets a server finish
    what it was doing (and write about it) before it exits, so its stdout stays open (and
    drained) until the shutdown ladder is done. A server that writes after its stdin
    closed would otherwise die of EPIPE instead of exiting by itself.
    """

    def __init__(self, process: trio.Process, max_message_bytes: int) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        super().__init__(process.stdout, process.stdin, max_message_bytes=max_message_bytes)
        self.process = process
        #: Lines of the child's stdout skipped as not JSON-RPC (see :meth:`receive`).
        self.skipped = 0

    async def receive(self) -> bytes:
        """The next line that can be a JSON-RPC message (it starts with ``{`` or ``[``).

        Other lines are skipped, each logged as a warning that shows it: a server that
        prints to stdout (typically while its module is imported, before it serves) would
        otherwise get only "Parse error: Expecting value" back. Blank lines are skipped
        silently. Cancellation: as :meth:`NdjsonTransport.receive`.
        """
        while True:
            line = await super().receive()
            start = line.lstrip()[:1]
            if start == b"{" or start == b"[":
                return line
            if start:
                self.skipped += 1
                text = line.decode("utf-8", "replace").rstrip()
                logger.warning(
                    "the server wrote a line that is not JSON-RPC to stdout (skipped): %r; "
                    "stdout is reserved for the protocol: print to stderr "
                    "(print(..., file=sys.stderr)) or use logging",
                    text if len(text) <= 200 else text[:200] + "...",
                )

    async def receive_many(self) -> list[bytes]:
        """One line at a time, through :meth:`receive` (which skips what is not JSON-RPC)."""
        return [await self.receive()]

    async def aclose(self) -> None:
        """Close the child's stdin (it sees end of input); its stdout stays open."""
        await self._send_stream.aclose()

    async def discard_output(self) -> None:
        """Read and drop the child's stdout until it ends (or this is cancelled)."""
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while await self._receive_stream.receive_some(65536):
                pass

    async def close_output(self) -> None:
        await self._receive_stream.aclose()


@asynccontextmanager
async def open_stdio_client_transport(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    on_stderr: Callable[[str], None] | None = None,
    max_message_bytes: int = DEFAULT_MAX_LINE_BYTES,
    shutdown: ShutdownTimeouts = ShutdownTimeouts(),
) -> AsyncIterator[ChildProcessTransport]:
    """Spawn ``argv`` and talk to it over its stdin/stdout.

    ``env`` replaces the child's environment when given (merge ``os.environ`` yourself to
    extend it). Each stderr line goes to ``on_stderr`` (default: the
    ``trimcp.stdio.stderr`` logger). If the child exits, reading ends and the session
    closes, failing pending requests at once with ``SessionClosed``; when that error
    leaves the block, it is raised again (one exception, not a group) with the child's exit
    code and its last ``STDERR_TAIL_LINES`` stderr lines in the message and in ``data``
    (``{"returncode": ..., "stderr": [...]}``), so a crash (a ``SyntaxError``, a missing
    module) is told, not just "the peer closed the connection".

    Leaving the block runs the shutdown ladder: close the child's stdin and wait up to
    ``shutdown.after_stdin_close``; then SIGTERM and wait ``after_sigterm``; then SIGKILL and
    wait ``after_sigkill``. Cancellation: the ladder is shielded, so it always runs, and it
    takes at most the sum of those bounds.
    """
    process = await trio.lowlevel.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
    )
    assert process.stderr is not None
    transport = ChildProcessTransport(process, max_message_bytes)
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
    forward = on_stderr or _log_stderr_line

    def on_line(line: str) -> None:
        tail.append(line)
        forward(line)

    drained = trio.Event()
    exited_by_itself = False
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain_stderr, process.stderr, on_line, drained)
            try:
                yield transport
            finally:
                exited_by_itself = process.poll() is not None
                with trio.CancelScope(shield=True):
                    await _stop_child(process, transport, shutdown)
                    # The child's last words are in the pipe: read them (bounded) first.
                    with trio.move_on_after(STDERR_DRAIN_GRACE):
                        await drained.wait()
                nursery.cancel_scope.cancel()
    except BaseException as exc:
        closed = _session_closed(exc)
        if closed is None:
            raise
        raise child_exited(closed, process, exited_by_itself, list(tail)) from closed
    finally:
        if process.returncode is None:  # only if the ladder itself was cut short
            process.kill()


def _session_closed(exc: BaseException) -> SessionClosed | None:
    leaf = single_exception(exc) if isinstance(exc, BaseExceptionGroup) else exc
    return leaf if isinstance(leaf, SessionClosed) else None


def child_exited(
    closed: SessionClosed, process: trio.Process, by_itself: bool, tail: list[str]
) -> SessionClosed:
    """``closed`` (the session ended under a request) told with what the child left: how
    it exited and its last stderr lines, in the message and in ``data`` (``returncode``,
    ``stderr``)."""
    code = process.returncode
    if code is None:
        how = "the server process is still running"
    elif code < 0:
        how = f"the server process was killed by signal {-code}"
    elif by_itself or code != 0:
        how = f"the server process exited with code {code}"
    else:
        how = "the server process exited"
    lines = "".join(f"\n  {line}" for line in tail)
    where = f"; its last stderr lines:{lines}" if tail else "; it wrote nothing on stderr"
    data = {"returncode": code, "stderr": tail}
    return SessionClosed(f"{closed.message}; {how}{where}", data)


async def _drain_stderr(
    stream: trio.abc.ReceiveStream, on_line: Callable[[str], None], done: trio.Event
) -> None:
    try:
        await _drain_lines(stream, on_line)
    finally:
        done.set()


async def _drain_lines(stream: trio.abc.ReceiveStream, on_line: Callable[[str], None]) -> None:
    pending = bytearray()
    truncated = False
    while True:
        try:
            chunk = await stream.receive_some(65536)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            chunk = b""
        if not chunk:
            if pending and not truncated:
                _emit(pending, on_line)
            return
        pending += chunk
        while True:
            newline = pending.find(b"\n")
            if newline < 0:
                break
            if not truncated:
                _emit(pending[:newline], on_line)
            truncated = False
            del pending[: newline + 1]
        if len(pending) > MAX_STDERR_LINE:
            if not truncated:
                _emit(pending[:MAX_STDERR_LINE] + b" [...]", on_line)
            truncated = True
            pending.clear()


def _emit(line: bytes | bytearray, on_line: Callable[[str], None]) -> None:
    try:
        on_line(bytes(line).decode("utf-8", "replace").rstrip("\r"))
    except Exception:
        logger.exception("on_stderr callback failed")


async def _stop_child(
    process: trio.Process, transport: ChildProcessTransport, timeouts: ShutdownTimeouts
) -> None:
    try:
        async with trio.open_nursery() as nursery:
            # Whatever the child still writes is dropped, so it never blocks on a full pipe.
            nursery.start_soon(transport.discard_output)
            await _stop_child_ladder(process, transport, timeouts)
            nursery.cancel_scope.cancel()
    finally:
        await transport.close_output()


async def _stop_child_ladder(
    process: trio.Process, transport: ChildProcessTransport, timeouts: ShutdownTimeouts
) -> None:
    with trio.move_on_after(timeouts.after_stdin_close):
        await transport.aclose()
        await process.wait()
        return
    if process.returncode is None:
        logger.info("child %s did not exit after stdin closed; sending SIGTERM", process.pid)
        process.terminate()
        with trio.move_on_after(timeouts.after_sigterm):
            await process.wait()
            return
    if process.returncode is None:
        logger.warning("child %s ignored SIGTERM; sending SIGKILL", process.pid)
        process.kill()
        with trio.move_on_after(timeouts.after_sigkill):
            await process.wait()


@runtime_checkable
class _ServesStreams(Protocol):
    """A handler that serves a whole message stream itself (era, lifespan)."""

    async def serve_stream(
        self,
        transport: Transport,
        *,
        options: SessionOptions | None = ...,
        task_status: trio.TaskStatus[Session | None] = ...,
    ) -> None: ...


async def serve_stdio(
    handler: SessionHandler,
    *,
    options: SessionOptions | None = None,
    max_message_bytes: int = DEFAULT_MAX_LINE_BYTES,
    task_status: trio.TaskStatus[Session | None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP on this process's stdin/stdout until the client goes away.

    A handler that also answers 2026-07-28 requests (``trimcp.Server``) serves the era the
    first request asks for (readiness is then reported with None); any other serves one
    session. A handler with its own ``serve_stream`` (``trimcp.Server``,
    ``trimcp.proxy.ProxyServer``) serves the connection itself (it enters its lifespan
    and picks the era). Returns when the client closes stdin (or the session is closed).
    Cancellation: closes the session with the engine's bounded close sequence (2026
    requests are cancelled).
    """
    from trimcp.session.stateless import StatelessHandler
    from trimcp.session.stateless_stream import serve_either_era

    async with open_stdio_server_transport(max_message_bytes=max_message_bytes) as transport:
        if isinstance(handler, _ServesStreams):
            await handler.serve_stream(transport, options=options, task_status=task_status)
        elif isinstance(handler, StatelessHandler):
            await serve_either_era(transport, handler, options=options, task_status=task_status)
        else:
            await serve_session(transport, handler, options=options, task_status=task_status)
